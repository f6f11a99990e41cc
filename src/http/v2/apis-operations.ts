import type { App, Deps } from '../types.ts';
import v2ApisCreateApi from './routes/apis.create-api.ts';
import v2ApisGetApi from './routes/apis.get-api.ts';
import v2ApisDeleteApi from './routes/apis.delete-api.ts';
import v2ApisListKeys from './routes/apis.list-keys.ts';

/** The v2 apis.* operations (one file each under routes/), registered in this order. */
export const APIS_V2: Array<(app: App, deps: Deps) => void> = [v2ApisCreateApi, v2ApisGetApi, v2ApisDeleteApi, v2ApisListKeys];
