import type { PageRouter } from './context.ts';
import signOutPages from './pages/sign-in.ts';
import workspacePages from './pages/workspaces.ts';
import apiListPages from './pages/apis.ts';
import apiPages from './pages/api.ts';
import analyticsPages from './pages/analytics.ts';
import keyPages from './pages/key.ts';
import rootKeyPages from './pages/root-keys.ts';
import rolePages from './pages/roles.ts';
import permissionPages from './pages/permissions.ts';
import identityPages from './pages/identities.ts';
import ratelimitPages from './pages/ratelimits.ts';
import migrationPages from './pages/migrations.ts';
import auditLogPages from './pages/audit-log.ts';
import webhookPages from './pages/webhooks.ts';
import usageExportPages from './pages/usage-exports.ts';
import memberPages from './pages/members.ts';
import sessionPages from './pages/sessions.ts';

/** Every page module of the dashboard (one file per section under pages/), registered in this order. */
export const PAGES: Array<(router: PageRouter) => void> = [
  signOutPages,
  workspacePages,
  apiListPages,
  apiPages,
  analyticsPages,
  keyPages,
  rootKeyPages,
  rolePages,
  permissionPages,
  identityPages,
  ratelimitPages,
  migrationPages,
  webhookPages,
  usageExportPages,
  auditLogPages,
  memberPages,
  sessionPages,
];
