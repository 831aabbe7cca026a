// Test page script: records what the page itself sees, for the assertions.
(() => {
  const log = (window.__log = { submits: [], events: [], clicks: [], changes: [], counter: 0 });
  document.addEventListener('svc:consent:captured', (e) => {
    log.events.push({ target: e.target.id, bubbles: e.bubbles, detail: e.detail });
  });
  document.getElementById('counter').addEventListener('click', () => {
    log.counter++;
    document.getElementById('count').textContent = String(log.counter);
  });
  document.getElementById('f-signup').addEventListener('submit', (e) => {
    e.preventDefault();
    // Read inside the submit handler, not at render time: the hidden input exists only after the
    // capture (docs/widget.md, step 4).
    const id = new FormData(e.target).get('svc-transaction-id');
    log.submits.push({ form: 'signup', consentId: id });
  });
  document.getElementById('signup').addEventListener('click', () => log.clicks.push('signup'));
  document.getElementById('pref').addEventListener('change', (e) => {
    log.changes.push({ id: 'pref', checked: e.target.checked });
  });
  document.getElementById('terms').addEventListener('change', (e) => {
    log.changes.push({ id: 'terms', checked: e.target.checked });
  });
  document.getElementById('divt').addEventListener('click', () => log.clicks.push('div'));
  document.getElementById('nf').addEventListener('click', () => log.clicks.push('nf'));
  document.getElementById('attr-btn').addEventListener('click', () => log.clicks.push('attr'));
  // A client-side route change: the checkout form is rendered after load.
  document.getElementById('nav-checkout').addEventListener('click', () => {
    const main = document.getElementById('route');
    main.replaceChildren();
    const form = document.createElement('form');
    form.id = 'f-checkout';
    const pay = document.createElement('button');
    pay.id = 'pay';
    pay.type = 'submit';
    pay.textContent = 'Pay now';
    pay.setAttribute('svc-trigger', 'checkout_terms');
    form.append(pay);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      log.submits.push({
        form: 'checkout',
        consentId: new FormData(form).get('svc-transaction-id'),
      });
    });
    main.append(form);
  });
})();
