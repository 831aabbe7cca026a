import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/**
 * Accessibility measured by an independent tool: axe-core (the root devDependency) run in the
 * page against WCAG 2.0 and 2.1, levels A and AA. A violation of impact serious or critical
 * fails the test with a list of rule, impact, element and help; moderate and minor ones are
 * returned for the caller to look at, not failed on.
 */

const AXE_SOURCE = fs.readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);
export const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const FAILING = new Set(['serious', 'critical']);

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  helpUrl: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

export interface AccessibleOptions {
  /** What to audit: a CSS selector, or a chain of selectors each inside the previous element's
   * open shadow root (['svc-consent-ui', 'dialog']). The whole document when absent. */
  include?: string | string[];
  /** Names the audited view in the failure message. */
  label: string;
}

/** The serious and critical violations, one line each, for a failure message. */
export function describeViolations(violations: AxeViolation[]): string {
  return violations
    .flatMap((v) =>
      v.nodes.map(
        (n) => `${v.id} (${v.impact ?? 'no impact'}) at ${JSON.stringify(n.target)}: ${v.help}`,
      ),
    )
    .join('\n');
}

/**
 * Runs axe on the page (or on `include`) and fails on any serious or critical violation.
 * The script is evaluated over the DevTools protocol, so a page's Content-Security-Policy
 * (which forbids inline script on the console and portal) stays in force for the page itself.
 */
export async function expectAccessible(page: Page, o: AccessibleOptions): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const include =
    o.include === undefined ? undefined : typeof o.include === 'string' ? [o.include] : o.include;
  const violations = await page.evaluate(
    async ({ include, tags }) => {
      const axe = (
        window as unknown as {
          axe: { run: (c: unknown, o: unknown) => Promise<{ violations: AxeViolation[] }> };
        }
      ).axe;
      const context = include
        ? { include: [include.length === 1 ? include[0] : { fromShadowDom: include }] }
        : document;
      const r = await axe.run(context, {
        runOnly: { type: 'tag', values: tags },
        resultTypes: ['violations'],
      });
      return r.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        helpUrl: v.helpUrl,
        nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
      }));
    },
    { include, tags: WCAG_TAGS },
  );
  const failing = violations.filter((v) => FAILING.has(v.impact ?? ''));
  if (failing.length > 0)
    throw new Error(
      `${o.label}: serious or critical WCAG 2.1 AA violations\n${describeViolations(failing)}`,
    );
  return violations;
}
