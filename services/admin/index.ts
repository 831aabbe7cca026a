import { Router } from 'express';
import type { ServiceModule } from '../../shared/process.js';
import { mountAppRoutes } from './apps.js';
import { mountNoticeRoutes } from './notices.js';
import { ADMIN_PREFIX } from './prefix.js';

/** The operator API: apps, credentials and notices, behind the admin token. */
export const adminService: ServiceModule = {
  name: 'admin',
  mount(app, rt) {
    const router = Router();
    mountAppRoutes(router, rt);
    mountNoticeRoutes(router, rt);
    app.use(ADMIN_PREFIX, router);
  },
};
