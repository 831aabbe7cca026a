import Counter from './counter';

// A server component: the gated button and form are in the HTML the server sends.
export default function Home() {
  return (
    <>
      <h1>Newsletter</h1>
      <Counter id="subscribe" trigger="newsletter_signup" label="Subscribe" done="Subscribed" />

      {/* A plain form posted to app/api/signup; the widget adds svc-transaction-id to it. */}
      <form id="signup" method="post" action="/api/signup">
        <input name="email" type="email" defaultValue="visitor@example.com" />
        <button id="signup-submit" type="submit" svc-trigger="account_signup">
          Create account
        </button>
      </form>
    </>
  );
}
