/** Where the admin API is mounted (DESIGN §4 "Admin API"). */
export const ADMIN_PREFIX = '/api/v1/admin';
