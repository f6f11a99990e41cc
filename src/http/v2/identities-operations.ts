import type { App, Deps } from '../types.ts';

/** The v2 identities.* operations (one file each under routes/), registered in this order. */
export const IDENTITIES_V2: Array<(app: App, deps: Deps) => void> = [];
