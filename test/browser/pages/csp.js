// Served as a file: the page's CSP forbids inline script.
(() => {
  const log = (window.__log = { submits: [], violations: [] });
  document.addEventListener('securitypolicyviolation', (e) => {
    log.violations.push(`${e.violatedDirective} ${e.blockedURI}`);
  });
  document.getElementById('f-csp').addEventListener('submit', (e) => {
    e.preventDefault();
    log.submits.push(new FormData(e.target).get('svc-transaction-id'));
  });
})();
