// What the gated scripts ran and every svc:consent:changed, with the parsing state at the time.
window.__ran = [];
window.__changes = [];
document.addEventListener('svc:consent:changed', (e) => {
  window.__changes.push({ ...e.detail, readyState: document.readyState });
});
document.addEventListener('click', (e) => {
  if (e.target.id !== 'later') return;
  const s = document.createElement('script');
  s.type = 'text/plain';
  s.setAttribute('data-svc-purpose', 'analytics');
  s.src = '/cookies-later.js';
  document.body.append(s);
});
