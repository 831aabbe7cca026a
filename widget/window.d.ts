/**
 * What the widget scripts (checked as JavaScript with `widget/tsconfig.json`) add to the page:
 * the widget's and the dashboard's public objects, and Trusted Types where the browser has them.
 */
interface Window {
  SvcConsent?: {
    version: string;
    siteKey: string;
    /** The script tag's data-region (e.g. IN-MH), or null. */
    region: string | null;
    forget(processId: string, transactionId?: string): void;
    /** The live stored decision; `purposes` where it came from the cookie banner. */
    state(processId: string): { consentId: string; purposes?: string[] } | null;
    [member: string]: unknown;
  };
  SvcDashboard?: { version: string; mount(el: Element, o: object): unknown };
  /** The cookie banner module, started by the widget: returns { open() }. */
  SvcCookies?: { version: string; start(k: object): { open(): void } };
  trustedTypes?: {
    createPolicy(
      name: string,
      rules: { createScriptURL(url: string): string },
    ): { createScriptURL(url: string): string };
  };
}
