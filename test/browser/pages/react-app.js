// A React 18 single-page app (UMD build, no JSX, no build step): a controlled checkbox in
// silent mode, a submit button in granular mode, and a route change that renders a new trigger.
(() => {
  const { useState } = React;
  const e = React.createElement;
  const log = (window.__log = { submits: [], events: [], clicks: [] });
  document.addEventListener('svc:consent:captured', (ev) => log.events.push(ev.detail));

  // Read in the submit handler, never at render time: the hidden input exists only after the
  // capture (docs/widget.md, step 4).
  const consentIdOf = (form) => new FormData(form).get('svc-transaction-id');

  function Signup() {
    const [agreed, setAgreed] = useState(false);
    return e(
      'form',
      {
        id: 'r-signup',
        onSubmit: (ev) => {
          ev.preventDefault();
          log.submits.push({ form: 'signup', agreed, consentId: consentIdOf(ev.currentTarget) });
        },
      },
      e(
        'label',
        null,
        e('input', {
          id: 'r-agree',
          type: 'checkbox',
          checked: agreed,
          onChange: (ev) => setAgreed(ev.target.checked),
          'svc-trigger': 'terms_ack',
          'svc-trigger-mode': 'silent',
        }),
        ' I agree to the terms',
      ),
      e('p', { id: 'r-agreed' }, agreed ? 'agreed' : 'not agreed'),
      e('button', { id: 'r-register', type: 'submit' }, 'Register'),
    );
  }

  function Newsletter() {
    const [email, setEmail] = useState('reader@example.com');
    return e(
      'form',
      {
        id: 'r-newsletter',
        onSubmit: (ev) => {
          ev.preventDefault();
          log.submits.push({ form: 'newsletter', email, consentId: consentIdOf(ev.currentTarget) });
        },
      },
      e('input', { id: 'r-email', value: email, onChange: (ev) => setEmail(ev.target.value) }),
      e(
        'button',
        {
          id: 'r-subscribe',
          type: 'submit',
          'svc-trigger': 'newsletter_signup',
          onClick: () => log.clicks.push('subscribe'),
        },
        'Subscribe',
      ),
    );
  }

  function Checkout() {
    return e(
      'form',
      {
        id: 'r-checkout',
        onSubmit: (ev) => {
          ev.preventDefault();
          log.submits.push({ form: 'checkout', consentId: consentIdOf(ev.currentTarget) });
        },
      },
      e('h2', null, 'Checkout'),
      e('button', { id: 'r-pay', type: 'submit', 'svc-trigger': 'checkout_terms' }, 'Pay now'),
    );
  }

  function App() {
    const [route, setRoute] = useState('home');
    return e(
      'div',
      null,
      e(
        'nav',
        null,
        e(
          'button',
          { id: 'r-nav', type: 'button', onClick: () => setRoute('checkout') },
          'Checkout',
        ),
      ),
      route === 'home' ? e('main', null, e(Signup), e(Newsletter)) : e('main', null, e(Checkout)),
    );
  }

  ReactDOM.createRoot(document.getElementById('root')).render(e(App));
})();
