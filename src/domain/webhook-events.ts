/**
 * The event types a webhook endpoint can receive (docs/webhooks.md lists each one's `data`). An endpoint
 * created without `events` receives every type.
 */
export const EVENT_TYPES = [
  'key.created',
  'key.updated',
  'key.deleted',
  'keys.imported',
  'key.credits.low',
  'key.credits.exhausted',
  'key.credits.refilled',
  'key.expiring',
  'key.expired',
  'key.ratelimited',
  'ratelimit.exceeded',
  'rootkey.created',
  'rootkey.revoked',
  'migration.completed',
  'key.leaked',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Endpoints one workspace may have: every event of the workspace is fanned out to each of them. */
export const MAX_WEBHOOK_ENDPOINTS = 20;
/** Longest endpoint URL and description (characters). */
export const MAX_WEBHOOK_URL = 2048;
export const MAX_WEBHOOK_DESCRIPTION = 1000;
/** `creditsLowBelow` when not given: a spend that takes a key's credits below 10 is `key.credits.low`. */
export const DEFAULT_CREDITS_LOW_BELOW = 10;
/** `expiringWithinDays` when not given, and its range. */
export const DEFAULT_EXPIRING_WITHIN_DAYS = 7;
export const MAX_EXPIRING_WITHIN_DAYS = 365;
/** How long deliveries are signed with the previous secret too after rotateSecret. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
