import type { App, Deps } from '../types.ts';
import v2RatelimitDeleteOverride from './routes/ratelimit.delete-override.ts';
import v2RatelimitGetOverride from './routes/ratelimit.get-override.ts';
import v2RatelimitLimit from './routes/ratelimit.limit.ts';
import v2RatelimitListOverrides from './routes/ratelimit.list-overrides.ts';
import v2RatelimitMultiLimit from './routes/ratelimit.multi-limit.ts';
import v2RatelimitSetOverride from './routes/ratelimit.set-override.ts';

/** The v2 ratelimit.* operations (one file each under routes/), registered in this order. */
export const RATELIMIT_V2: Array<(app: App, deps: Deps) => void> = [
  v2RatelimitLimit,
  v2RatelimitMultiLimit,
  v2RatelimitSetOverride,
  v2RatelimitGetOverride,
  v2RatelimitListOverrides,
  v2RatelimitDeleteOverride,
];
