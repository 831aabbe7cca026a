import { describeFrameworkExample } from './framework.js';

/** examples/angular: an Angular standalone app with its router, served by its server.mjs. */
describeFrameworkExample({
  name: 'angular',
  serverRendered: false,
  serve: ({ port, siteKey, widgetUrl }) => ({
    args: ['server.mjs'],
    env: { PORT: String(port), SVC_SITE_KEY: siteKey, SVC_WIDGET_URL: widgetUrl },
  }),
});
