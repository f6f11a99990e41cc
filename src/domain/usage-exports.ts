/*
 * Usage exports (docs/usage-billing.md): the rules that are no setting. A workspace's metered usage, per identity or
 * key and period, summed from the analytics roll-ups and sent to OpenMeter (CloudEvents) or Stripe (meter events).
 */

export const USAGE_DESTINATIONS = ['openmeter', 'stripe'] as const;
export type UsageDestination = (typeof USAGE_DESTINATIONS)[number];

/** Who a record is about: the key's identity (its externalId), or the key itself (its id). */
export const USAGE_SUBJECTS = ['identity', 'key'] as const;
export type UsageSubject = (typeof USAGE_SUBJECTS)[number];

/** A period is a bucket of the roll-ups of the same grain, UTC. */
export const USAGE_PERIODS = ['minute', 'hour', 'day'] as const;
export type UsagePeriod = (typeof USAGE_PERIODS)[number];

export const PERIOD_MS: Record<UsagePeriod, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export const REPORT_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

/** Exports a workspace may have at most. */
export const MAX_USAGE_EXPORTS = 10;
/** A token (OpenMeter API token, Stripe secret or restricted key) is at most this long. */
export const MAX_USAGE_TOKEN = 4096;
/** An event type, a Stripe event name and a meta field name: at most this long, of NAME_PATTERN. */
export const MAX_USAGE_NAME = 100;
export const USAGE_NAME_PATTERN = '^[A-Za-z0-9_.:-]+$';
/** CloudEvents per OpenMeter request. */
export const OPENMETER_BATCH = 100;

export const DEFAULT_STRIPE_URL = 'https://api.stripe.com/v1/billing/meter_events';
export const DEFAULT_EVENT_TYPE = 'keyhold.verifications';
export const DEFAULT_EVENT_NAME = 'keyhold_verifications';
export const DEFAULT_STRIPE_CUSTOMER_FIELD = 'stripeCustomerId';
/** The outcomes a record counts by default: the verifications that went through. */
export const DEFAULT_USAGE_OUTCOMES = ['VALID'] as const;
