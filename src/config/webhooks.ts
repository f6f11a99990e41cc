import { wholeNumberFrom } from './shapes.ts';

/** How webhooks are delivered (KEYHOLD_WEBHOOK_* settings); the defaults are Standard Webhooks'. */
export interface WebhookSettings {
  /** KEYHOLD_WEBHOOK_ALLOW_PRIVATE: `http` URLs and private, loopback and link-local addresses are allowed (private networks, tests). */
  allowPrivate: boolean;
  /** KEYHOLD_WEBHOOK_TIMEOUT_MS: how long one attempt may take, connection to the end of the (bounded) response. */
  timeoutMs: number;
  /** KEYHOLD_WEBHOOK_RETRY_SCHEDULE: delay before each attempt (ms), the first one's included; its length is the number of attempts. */
  retrySchedule: number[];
  /**
   * How long the verification path uses a workspace's endpoint subscriptions before reading them again (ms;
   * default SUBSCRIPTIONS_TTL_MS, 5 s; 0: on every verification that spends or refills credits). Not a setting of
   * its own: tests that count a request's statements read them every time, so every attempt takes one path.
   */
  subscriptionsTtlMs?: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Standard Webhooks' schedule: at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const DEFAULT_RETRY_SCHEDULE = [
  0,
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  14 * HOUR,
  20 * HOUR,
  24 * HOUR,
];
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 15_000;

export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = {
  allowPrivate: false,
  timeoutMs: DEFAULT_WEBHOOK_TIMEOUT_MS,
  retrySchedule: DEFAULT_RETRY_SCHEDULE,
};

const UNIT_MS: Record<string, number> = { ms: 1, s: SECOND, m: MINUTE, h: HOUR, d: 24 * HOUR };

/** A comma-separated list of durations (`0s,5s,5m,2h`) in ms, or a message saying what is wrong with it. */
export function parseRetrySchedule(text: string): number[] | string {
  const items = text.split(',').map((s) => s.trim());
  const out: number[] = [];
  for (const item of items) {
    const m = /^(\d{1,9})(ms|s|m|h|d)$/.exec(item);
    if (!m) return `"${item}" is not a duration such as 0s, 500ms, 5m, 2h or 1d`;
    out.push(Number(m[1]) * UNIT_MS[m[2]]);
  }
  if (out.length > 50) return 'at most 50 attempts';
  return out;
}

/** The KEYHOLD_WEBHOOK_* settings (part of loadConfig); each invalid one adds a line to `problems`. */
export function webhooksFrom(env: NodeJS.ProcessEnv, problems: string[]): WebhookSettings {
  const settings = { ...DEFAULT_WEBHOOK_SETTINGS };
  const allow = env.KEYHOLD_WEBHOOK_ALLOW_PRIVATE;
  if (allow !== undefined && allow !== '') {
    if (allow === 'true' || allow === 'false') settings.allowPrivate = allow === 'true';
    else problems.push(`KEYHOLD_WEBHOOK_ALLOW_PRIVATE must be true or false, got "${allow}"`);
  }
  const timeoutRange = { min: 100, max: 300_000 };
  settings.timeoutMs = wholeNumberFrom(
    env,
    'KEYHOLD_WEBHOOK_TIMEOUT_MS',
    settings.timeoutMs,
    timeoutRange,
    'a whole number of milliseconds',
    problems,
  );
  const schedule = env.KEYHOLD_WEBHOOK_RETRY_SCHEDULE;
  if (schedule !== undefined && schedule !== '') {
    const parsed = parseRetrySchedule(schedule);
    if (typeof parsed === 'string') problems.push(`KEYHOLD_WEBHOOK_RETRY_SCHEDULE must be comma-separated durations (0s,5s,5m): ${parsed}`);
    else settings.retrySchedule = parsed;
  }
  return settings;
}
