import type { App, Deps } from '../types.ts';
import v2Liveness from './routes/liveness.ts';
import v2ApisCreateApi from './routes/apis.create-api.ts';
import v2ApisGetApi from './routes/apis.get-api.ts';

/** Every Unkey v2 operation under /v2/, registered in this order (one file per operation under routes/). */
export const V2_ROUTES: Array<(app: App, deps: Deps) => void> = [v2Liveness, v2ApisCreateApi, v2ApisGetApi];
