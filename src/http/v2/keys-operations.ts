import type { App, Deps } from '../types.ts';

/** The v2 keys.* operations (one file each under routes/), registered in this order. */
export const KEYS_V2: Array<(app: App, deps: Deps) => void> = [];
