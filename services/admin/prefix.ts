/** Where the admin API is mounted (docs/api.md, Admin API). */
export const ADMIN_PREFIX = '/api/v1/admin';
