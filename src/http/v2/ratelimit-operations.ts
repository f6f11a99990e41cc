import type { App, Deps } from '../types.ts';

/** The v2 ratelimit.* operations (one file each under routes/), registered in this order. */
export const RATELIMIT_V2: Array<(app: App, deps: Deps) => void> = [];
