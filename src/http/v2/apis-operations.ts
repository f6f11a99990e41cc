import type { App, Deps } from '../types.ts';
import v2ApisCreateApi from './routes/apis.create-api.ts';
import v2ApisGetApi from './routes/apis.get-api.ts';

/** The v2 apis.* operations (one file each under routes/), registered in this order. */
export const APIS_V2: Array<(app: App, deps: Deps) => void> = [v2ApisCreateApi, v2ApisGetApi];
