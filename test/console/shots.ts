import path from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { SCREENSHOTS } from '../browser/harness.js';

/**
 * Full-page screenshots of the console's current page at 1280 and 360 px, in
 * test-results/screenshots/console-{name}-{width}.png; nothing may be wider than the screen
 * (tables scroll inside their own region). The viewport is 1280 px wide again afterwards.
 */
export async function shots(page: Page, name: string): Promise<void> {
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({
      path: path.join(SCREENSHOTS, `console-${name}-${width}.png`),
      fullPage: true,
    });
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth),
      `${name} at ${width}`,
    ).toBeLessThanOrEqual(width);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
