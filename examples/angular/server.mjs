// Serves the built app (dist/) with the widget tag filled in from SVC_WIDGET_URL and
// SVC_SITE_KEY, and stands in for the app's backend: POST /api/signup prints the form's
// fields as one JSON line and answers them back.
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DIST = fileURLToPath(new URL('./dist/browser/', import.meta.url));
const SITE_KEY = process.env.SVC_SITE_KEY ?? '';
const WIDGET_URL = (process.env.SVC_WIDGET_URL ?? 'http://localhost:8080').replace(/\/$/, '');
if (!/^APP_[A-Za-z0-9]+$/.test(SITE_KEY)) {
  console.error('SVC_SITE_KEY must be the site key of an app (APP_…)');
  process.exit(1);
}
const TYPES = {
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
};

async function signup(req, res) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 65_536) return res.writeHead(413).end();
  }
  const fields = Object.fromEntries(new URLSearchParams(body));
  console.log(JSON.stringify({ signup: fields }));
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(fields));
}

async function page(req, res) {
  const { pathname } = new URL(req.url, 'http://localhost');
  const file = path.join(DIST, path.normalize(decodeURIComponent(pathname)));
  const type = TYPES[path.extname(file)];
  if (type && file.startsWith(DIST)) {
    const body = await fs.readFile(file).catch(() => null);
    if (body) return res.writeHead(200, { 'content-type': type }).end(body);
    return res.writeHead(404).end();
  }
  // Every other path is a route of the app: index.html, with the widget's URL and site key.
  const html = (await fs.readFile(path.join(DIST, 'index.html'), 'utf8'))
    .replaceAll('%SVC_WIDGET_URL%', WIDGET_URL)
    .replaceAll('%SVC_SITE_KEY%', SITE_KEY);
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
}

const server = http.createServer((req, res) => {
  const handle = req.method === 'POST' && req.url === '/api/signup' ? signup : page;
  handle(req, res).catch((err) => {
    console.error(err);
    res.writeHead(500).end();
  });
});
server.listen(Number(process.env.PORT ?? 5173), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
