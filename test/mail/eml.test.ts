import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { requestGrant } from '../../shared/mail/index.js';
import { notifierWorker } from '../../workers/notifier/index.js';
import { startPortalStack, type PortalStack } from '../portal/fixture.js';
import { manageLink } from './smtp.js';

/** The embedded default: no SMTP_URL, so the notifier writes .eml files (here to MAIL_DIR). */

let s: PortalStack;
let dir: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-eml-'));
  s = await startPortalStack('eml', { workers: [notifierWorker], env: { MAIL_DIR: dir } });
});

afterAll(async () => {
  await s?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('writes the grant request as an .eml file whose link opens the portal', async () => {
  expect(s.p.rt.config.SMTP_URL).toBeUndefined();
  const shop = await s.createApp();
  const erin = await s.createPrincipal(shop, 'erin@example.test');
  const queued = await requestGrant(s.p.rt, {
    appId: shop.app.appId,
    referenceId: erin.referenceId,
  });
  const file = await vi.waitFor(
    () => {
      const f = fs.readdirSync(dir).find((x) => x.endsWith(`${queued.id}.eml`));
      expect(f).toBeDefined();
      return path.join(dir, f!);
    },
    { timeout: 20_000, interval: 50 },
  );
  const raw = fs.readFileSync(file, 'utf8');
  expect(raw).toMatch(/^Subject: Shop & Co asks for your consent$/m);
  const m = await simpleParser(raw);
  const link = manageLink(m);
  expect(raw.replace(/=\r?\n/g, '')).toContain(`/portal/${erin.referenceId}#token=`);
  const r = await fetch(link);
  expect(r.status).toBe(200);
  expect(await r.text()).toContain(erin.referenceId);
  const token = new URLSearchParams(new URL(link).hash.slice(1)).get('token');
  const session = await fetch(`${s.url}/portal/api/${erin.referenceId}/session`, {
    headers: { authorization: `Portal ${token}` },
  });
  expect(session.status).toBe(200);
});
