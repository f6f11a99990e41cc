import { wholeNumberFrom } from './shapes.ts';

/** How usage exports report periods (KEYHOLD_USAGE_* settings; docs/usage-billing.md). */
export interface UsageSettings {
  /**
   * KEYHOLD_USAGE_SETTLE_MS: how long after a period closes it is reported, so that verifications recorded after the
   * close (analytics are written in batches) still count in it.
   */
  settleMs: number;
}

export const DEFAULT_USAGE_SETTINGS: UsageSettings = { settleMs: 60_000 };

/** The KEYHOLD_USAGE_* settings (part of loadConfig); each invalid one adds a line to `problems`. */
export function usageFrom(env: NodeJS.ProcessEnv, problems: string[]): UsageSettings {
  return {
    settleMs: wholeNumberFrom(
      env,
      'KEYHOLD_USAGE_SETTLE_MS',
      DEFAULT_USAGE_SETTINGS.settleMs,
      { min: 0, max: 86_400_000 },
      'the milliseconds a closed period waits for late analytics before it is reported',
      problems,
    ),
  };
}
