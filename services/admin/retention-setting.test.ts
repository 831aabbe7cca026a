import { describe, expect, it } from 'vitest';
import { createAppBody, patchAppBody } from './schemas.js';

/** The app's ledger retention setting (docs/retention.md): never below a year. */

describe('the ledgerRetentionDays setting (admin API bodies)', () => {
  const app = {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'https://shop.example/hooks',
    allowedOrigins: [],
    contactEmail: 'dpo@shop.example',
  };

  it.each([0, 30, 365, -1])('refuses %s days with a message naming the rule', (days) => {
    for (const schema of [patchAppBody, createAppBody]) {
      const r = schema.safeParse({ ...app, ledgerRetentionDays: days });
      expect(r.success).toBe(false);
      const issue = r.error!.issues.find((i) => i.path[0] === 'ledgerRetentionDays');
      expect(issue?.message).toMatch(/at least 366 days: .*kept at least one year/);
    }
  });

  it('refuses fractions and more than ten years; takes a year and more', () => {
    expect(patchAppBody.safeParse({ ledgerRetentionDays: 400.5 }).success).toBe(false);
    expect(patchAppBody.safeParse({ ledgerRetentionDays: 3651 }).success).toBe(false);
    expect(patchAppBody.safeParse({ ledgerRetentionDays: '400' }).success).toBe(false);
    for (const days of [366, 400, 3650])
      expect(patchAppBody.parse({ ledgerRetentionDays: days })).toEqual({
        ledgerRetentionDays: days,
      });
  });
});
