import { describeFrameworkExample } from './framework.js';

/** examples/next: a Next.js app-router app, server-rendered, served by `next start`. */
describeFrameworkExample({
  name: 'next',
  serverRendered: true,
  serve: ({ port, siteKey, widgetUrl }) => ({
    args: ['node_modules/next/dist/bin/next', 'start', '-H', '127.0.0.1', '-p', String(port)],
    env: { SVC_SITE_KEY: siteKey, SVC_WIDGET_URL: widgetUrl },
  }),
});
