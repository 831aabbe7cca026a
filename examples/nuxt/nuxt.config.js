import { defineNuxtConfig } from 'nuxt/config';

export default defineNuxtConfig({
  compatibilityDate: '2026-11-01',
  devtools: { enabled: false },
  telemetry: false,
  // Read when the server starts: NUXT_PUBLIC_SVC_SITE_KEY and NUXT_PUBLIC_SVC_WIDGET_URL.
  runtimeConfig: { public: { svcSiteKey: '', svcWidgetUrl: 'http://localhost:8080' } },
});
