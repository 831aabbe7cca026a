// Test page script for region-*.html: records the captures and submissions the page sees.
(() => {
  const log = (window.__log = { submits: [], events: [] });
  document.addEventListener('svc:consent:captured', (e) => log.events.push({ detail: e.detail }));
  document.getElementById('f-signup').addEventListener('submit', (e) => {
    e.preventDefault();
    log.submits.push({ consentId: new FormData(e.target).get('svc-transaction-id') });
  });
})();
