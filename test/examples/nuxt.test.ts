import { describeFrameworkExample } from './framework.js';

/** examples/nuxt: a Nuxt 3 app, server-rendered, served by its built Nitro server. */
describeFrameworkExample({
  name: 'nuxt',
  serverRendered: true,
  serve: ({ port, siteKey, widgetUrl }) => ({
    args: ['.output/server/index.mjs'],
    env: {
      HOST: '127.0.0.1',
      PORT: String(port),
      NUXT_PUBLIC_SVC_SITE_KEY: siteKey,
      NUXT_PUBLIC_SVC_WIDGET_URL: widgetUrl,
    },
  }),
});
