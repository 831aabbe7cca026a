import { describeFrameworkExample } from './framework.js';

/** examples/vue: a Vue 3 + Vite single-page app with vue-router, served by its server.mjs. */
describeFrameworkExample({
  name: 'vue',
  serverRendered: false,
  serve: ({ port, siteKey, widgetUrl }) => ({
    args: ['server.mjs'],
    env: { PORT: String(port), SVC_SITE_KEY: siteKey, SVC_WIDGET_URL: widgetUrl },
  }),
});
