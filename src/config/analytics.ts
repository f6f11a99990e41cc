/** The analytics recording settings (part of loadConfig). */

export interface AnalyticsConfig {
  /** KEYHOLD_ANALYTICS: `on` (default) records every verification and rate-limit check; `off` records none. */
  enabled: boolean;
  /** KEYHOLD_REGION: the `region` of recorded verifications (default `local`). */
  region: string;
}

export const DEFAULT_ANALYTICS: AnalyticsConfig = { enabled: true, region: 'local' };

/** KEYHOLD_ANALYTICS and KEYHOLD_REGION; each invalid one adds a line to `problems`. */
export function analyticsFrom(env: NodeJS.ProcessEnv, problems: string[]): AnalyticsConfig {
  const raw = (env.KEYHOLD_ANALYTICS ?? '').trim().toLowerCase();
  let enabled = true;
  if (['off', 'false', '0'].includes(raw)) enabled = false;
  else if (!['', 'on', 'true', '1'].includes(raw)) problems.push(`KEYHOLD_ANALYTICS must be on or off, got "${env.KEYHOLD_ANALYTICS}"`);
  const region = (env.KEYHOLD_REGION ?? '').trim() || DEFAULT_ANALYTICS.region;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(region)) {
    problems.push(`KEYHOLD_REGION must be 1 to 64 letters, digits, '.', '_' or '-', got "${env.KEYHOLD_REGION}"`);
  }
  return { enabled, region };
}
