import { describe, expect, it } from 'vitest';
import type { Breach } from '../../shared/domain/duties/breaches.js';
import type { Grievance } from '../../shared/domain/duties/grievances.js';
import { breachNoticeMail, grievanceAnsweredMail, grievanceFiledMail } from './duty-templates.js';

const base = {
  app: { name: 'Shop <b>', contactEmail: 'dpo@shop.example' },
  referenceId: 'SVC-REF-ABCD2345',
  link: 'https://svc.example/portal/SVC-REF-ABCD2345#token=a',
};

const grievance: Grievance = {
  grievanceId: 'grv_01J0000000000000000000000A',
  appId: 'app_x',
  referenceId: base.referenceId,
  subject: 'My data was shared',
  description: 'Details',
  filedVia: 'dashboard',
  status: 'open',
  createdAt: '2030-01-01T10:00:00.000Z',
  dueAt: '2030-04-01T10:00:00.000Z',
  atRiskAt: '2030-03-14T10:00:00.000Z',
  responseDays: 90,
  answer: null,
  resolution: null,
  answeredAt: null,
  complianceFlag: null,
  flagHistory: [],
};

const breach: Breach = {
  breachId: 'brc_01J0000000000000000000000A',
  appId: 'app_x',
  description: 'A backup of the orders database was exposed on 2 January.',
  consequences: 'Your name and address may be known to others.',
  mitigations: 'The backup was removed and access keys rotated.',
  steps: 'Be wary of calls asking for your order details.',
  contact: { name: 'Priya, DPO', email: 'breach@shop.example', phone: '+91 80 1234 5678' },
  detectedAt: '2030-01-02T08:00:00.000Z',
  createdAt: '2030-01-02T09:00:00.000Z',
  affectedCount: 1,
  batches: 1,
  boardReport: {
    dueAt: '2030-01-05T08:00:00.000Z',
    atRiskAt: '2030-01-04T17:36:00.000Z',
    filedAt: null,
    reference: null,
    note: null,
  },
  complianceFlag: null,
  flagHistory: [],
};

describe('grievance and breach e-mails', () => {
  it('a filed grievance names it and its answer date', () => {
    const m = grievanceFiledMail({ ...base, grievance });
    expect(m.subject).toBe('Shop <b> has received your grievance');
    expect(m.text).toContain('"My data was shared" (grv_01J0000000000000000000000A)');
    expect(m.text).toContain('must answer it by 2030-04-01');
    expect(m.text).toContain('Data Protection Board');
    expect(m.html).not.toContain('<b>');
  });

  it('an answered grievance carries the answer and whether it was upheld', () => {
    const answered = { ...grievance, answer: 'We deleted <it>.', resolution: 'rejected' as const };
    const m = grievanceAnsweredMail({ ...base, grievance: answered });
    expect(m.text).toContain('did not uphold your grievance');
    expect(m.text).toContain('We deleted <it>.');
    expect(m.html).toContain('We deleted &lt;it&gt;.');
  });

  it('a breach notice holds the five contents the Rules require, each labelled', () => {
    const m = breachNoticeMail({ ...base, breach });
    expect(m.subject).toBe('Important: a personal data breach at Shop <b>');
    for (const line of [
      `What happened: ${breach.description}`,
      `Likely consequences for you: ${breach.consequences}`,
      `What Shop <b> has done and is doing to reduce the risk: ${breach.mitigations}`,
      `What you can do to protect yourself: ${breach.steps}`,
      'Whom to contact about this breach: Priya, DPO, breach@shop.example, +91 80 1234 5678.',
    ])
      expect(m.text).toContain(line);
    expect(m.text).toContain('detected on 2030-01-02');
    expect(m.html).not.toContain('<b>');
  });
});
