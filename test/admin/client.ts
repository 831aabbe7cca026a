/**
 * A small fetch wrapper for the API tests: JSON in, status + JSON + headers out. Every answer is
 * checked against the served /openapi.json (test/helpers/documented-setup.ts).
 */
export interface Reply {
  status: number;
  // Test assertions read arbitrary response fields; `any` keeps them short.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  headers: Headers;
}

export function client(baseUrl: string, defaults: Record<string, string> = {}) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...defaults,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
}

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

export const sandboxApp = (over: Record<string, unknown> = {}) => ({
  name: 'Shop',
  environment: 'sandbox',
  webhookUrl: 'http://127.0.0.1:9/hooks',
  allowedOrigins: ['https://shop.example'],
  contactEmail: 'ops@shop.example',
  ...over,
});

export const notice = (over: Record<string, unknown> = {}) => ({
  kind: 'data_collection',
  triggerKey: 'newsletter_signup',
  defaultLanguage: 'en',
  purposes: [
    { name: 'marketing', required: false, dataItems: ['email', 'name'] },
    { name: 'essential', required: true, dataItems: ['email'] },
  ],
  translations: {
    en: {
      title: 'Newsletter',
      body: 'We use your e-mail to send the newsletter.',
      purposes: {
        marketing: { label: 'Marketing', description: 'Offers by e-mail' },
        essential: { label: 'Essential', description: 'Delivering the newsletter' },
      },
    },
  },
  ...over,
});
