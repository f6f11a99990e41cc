import type { App, Deps } from '../types.ts';
import v2AnalyticsGetRatelimits from './routes/analytics.get-ratelimits.ts';
import v2AnalyticsGetVerifications from './routes/analytics.get-verifications.ts';

/** The v2 analytics.* operations: SQL over verification and rate-limit events (one file each under routes/). */
export const ANALYTICS_V2: Array<(app: App, deps: Deps) => void> = [v2AnalyticsGetVerifications, v2AnalyticsGetRatelimits];
