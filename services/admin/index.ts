import { Router } from 'express';
import type { ServiceModule } from '../../shared/module.js';
import { mountAppRoutes } from './apps.js';
import { mountBreachRoutes, mountGrievanceSettings } from './breaches.js';
import { mountChecklistRoutes } from './checklist.js';
import { mountNoticeRoutes } from './notices.js';
import { ADMIN_PREFIX } from './prefix.js';
import { mountInbox, mountSandboxRoutes } from './sandbox.js';

/**
 * The operator API: apps, credentials, notices, the compliance checklist and go-live, and the
 * sandbox tools, behind the admin token; and the sandbox webhook inbox, which takes deliveries
 * like any webhook endpoint (docs/api.md, Sandbox tools).
 */
export const adminService: ServiceModule = {
  name: 'admin',
  mount(app, rt) {
    const router = Router();
    mountAppRoutes(router, rt);
    mountNoticeRoutes(router, rt);
    mountChecklistRoutes(router, rt);
    mountSandboxRoutes(router, rt);
    mountBreachRoutes(router, rt);
    mountGrievanceSettings(router, rt);
    app.use(ADMIN_PREFIX, router);
    mountInbox(app, rt);
  },
};
