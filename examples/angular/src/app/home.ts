import { Component, signal } from '@angular/core';

@Component({
  selector: 'app-home',
  template: `
    <h1>Newsletter</h1>
    <!-- Its click handler runs only once the visitor has consented. -->
    <button id="subscribe" type="button" svc-trigger="newsletter_signup" (click)="subscribe()">
      Subscribe
    </button>
    <p id="subscribed">Subscribed: {{ subscribed() }}</p>

    <form id="signup" (submit)="signup($event)">
      <input name="email" type="email" value="visitor@example.com" />
      <button id="signup-submit" type="submit" svc-trigger="account_signup">Create account</button>
    </form>
    <pre id="received">{{ received() }}</pre>
  `,
})
export class Home {
  readonly subscribed = signal(0);
  readonly received = signal('');

  subscribe() {
    this.subscribed.update((n) => n + 1);
  }

  /** The widget put the consent's id into the form as svc-transaction-id before this runs. */
  async signup(event: SubmitEvent) {
    event.preventDefault();
    const body = new URLSearchParams(new FormData(event.target as HTMLFormElement) as never);
    const res = await fetch('/api/signup', { method: 'POST', body });
    this.received.set(JSON.stringify(await res.json()));
  }
}
