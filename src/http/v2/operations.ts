import type { App, Deps } from '../types.ts';
import v2Liveness from './routes/liveness.ts';
import { APIS_V2 } from './apis-operations.ts';
import { KEYS_V2 } from './keys-operations.ts';
import { IDENTITIES_V2 } from './identities-operations.ts';
import { PERMISSIONS_V2 } from './permissions-operations.ts';
import { RATELIMIT_V2 } from './ratelimit-operations.ts';
import { ANALYTICS_V2 } from './analytics-operations.ts';

/**
 * Every Unkey v2 operation under /v2/, registered in this order: one file per operation under routes/, listed
 * by group in <group>-operations.ts.
 */
export const V2_ROUTES: Array<(app: App, deps: Deps) => void> = [
  v2Liveness,
  ...APIS_V2,
  ...KEYS_V2,
  ...IDENTITIES_V2,
  ...PERMISSIONS_V2,
  ...RATELIMIT_V2,
  ...ANALYTICS_V2,
];
