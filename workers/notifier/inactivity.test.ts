import { describe, expect, it } from 'vitest';
import { inactivityErasedMail, inactivityWarningMail } from './inactivity-templates.js';

const base = {
  app: { name: 'Kids <Club>', contactEmail: 'dpo@club.example' },
  referenceId: 'SVC-REF-ABCD2345',
  link: 'https://svc.example/portal/SVC-REF-ABCD2345#token=t',
};

describe('inactivity e-mails', () => {
  it('the warning names the policy, the time of the erasure and how to keep the data', () => {
    const m = inactivityWarningMail({
      ...base,
      eraseAt: '2026-03-04T05:06:07.000Z',
      inactivityDays: 1095,
    });
    expect(m.subject).toBe('Your data held by Kids <Club> will be erased on 2026-03-04');
    expect(m.text).toContain('for 1095 days');
    expect(m.text).toContain('erased at 2026-03-04 05:06 UTC');
    expect(m.text).toContain('open the link below, before then');
    expect(m.text).toContain(`Manage consent: ${base.link}`);
    expect(m.html).toContain('Kids &lt;Club&gt;');
    expect(m.html).not.toContain('<Club>');
  });

  it('the notice after the erasure names the purposes', () => {
    const m = inactivityErasedMail({ ...base, purposes: ['games', 'chat'] });
    expect(m.subject).toBe('Kids <Club> has erased your data after a period of inactivity');
    expect(m.text).toContain('for games, chat has been erased');
  });
});
