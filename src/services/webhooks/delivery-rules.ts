/*
 * The delivery rules that are no setting: when a failing endpoint is disabled, how much of a response is read,
 * and the jittered delay between attempts. The settings (timeout, retry schedule, private addresses) are
 * WebhookSettings, in src/config/webhooks.ts.
 */

const HOUR = 60 * 60 * 1000;

/** An endpoint whose every attempt failed for this long is disabled. */
export const FAILING_DISABLE_MS = 5 * 24 * HOUR;
/** At most this much of a response is read (the rest is dropped with the connection). */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * The delay before the attempt after `attemptsMade` attempts, with jitter (up to a tenth of the delay either
 * way, so that deliveries failing together do not retry together); undefined when the schedule is used up.
 */
export function nextDelay(schedule: readonly number[], attemptsMade: number, random = Math.random): number | undefined {
  if (attemptsMade >= schedule.length) return undefined;
  const base = schedule[attemptsMade];
  return Math.max(0, Math.round(base + base * 0.1 * (2 * random() - 1)));
}
