import type { App, Deps } from '../types.ts';

/** The v2 permissions.* operations (one file each under routes/), registered in this order. */
export const PERMISSIONS_V2: Array<(app: App, deps: Deps) => void> = [];
