import { Type } from '@sinclair/typebox';
import {
  MAX_USAGE_NAME,
  MAX_USAGE_TOKEN,
  REPORT_STATUSES,
  USAGE_DESTINATIONS,
  USAGE_NAME_PATTERN,
  USAGE_PERIODS,
  USAGE_SUBJECTS,
} from '../../domain/usage-exports.ts';
import { MAX_WEBHOOK_URL } from '../../domain/webhook-events.ts';
import { VERIFY_CODES } from '../../domain/verify-codes.ts';
import { OneOf } from './common.ts';

export const ExportId = Type.String({ minLength: 1, maxLength: 100, description: 'The usage export (`uexp_…`).' });

const Name = (description: string) => Type.String({ minLength: 1, maxLength: MAX_USAGE_NAME, pattern: USAGE_NAME_PATTERN, description });

/** The members updateExport may change (each optional); createExport takes them too. */
const Changeable = {
  url: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_WEBHOOK_URL,
      description:
        "An https URL without credentials, to a public address: OpenMeter's `…/api/v1/events` (required), or Stripe's meter events endpoint (default `https://api.stripe.com/v1/billing/meter_events`).",
    }),
  ),
  token: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_USAGE_TOKEN,
      description: 'Sent as `Authorization: Bearer …`; stored encrypted, never returned.',
    }),
  ),
  outcomes: Type.Optional(
    Type.Array(OneOf(VERIFY_CODES), {
      minItems: 1,
      maxItems: VERIFY_CODES.length * 2,
      description: 'The verification outcomes a record counts (default `["VALID"]`).',
    }),
  ),
  eventType: Type.Optional(Name('OpenMeter: the CloudEvents `type` (default `keyhold.verifications`).')),
  eventName: Type.Optional(Name("Stripe: the meter's `event_name` (default `keyhold_verifications`).")),
  stripeCustomerField: Type.Optional(
    Name('Stripe: the meta field of the identity (or key) holding its Stripe customer id (default `stripeCustomerId`).'),
  ),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true. Enabling again reports the periods missed meanwhile.' })),
};

export const CreateExportProps = {
  destination: OneOf(USAGE_DESTINATIONS),
  ...Changeable,
  token: Type.String({ minLength: 1, maxLength: MAX_USAGE_TOKEN, description: Changeable.token.description }),
  subject: Type.Optional(OneOf(USAGE_SUBJECTS)),
  period: Type.Optional(OneOf(USAGE_PERIODS)),
};

export const UpdateExportProps = { exportId: ExportId, ...Changeable };

export const UsageExport = Type.Object({
  exportId: Type.String(),
  destination: OneOf(USAGE_DESTINATIONS),
  url: Type.String(),
  subject: OneOf(USAGE_SUBJECTS),
  period: OneOf(USAGE_PERIODS),
  outcomes: Type.Array(Type.String()),
  eventType: Type.Optional(Type.String()),
  eventName: Type.Optional(Type.String()),
  stripeCustomerField: Type.Optional(Type.String()),
  enabled: Type.Boolean(),
  reportedUntil: Type.Integer({ description: 'Periods before this (epoch ms) are reported.' }),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
});

export const UsageReport = Type.Object({
  reportId: Type.String(),
  exportId: Type.String(),
  periodStart: Type.Integer(),
  periodEnd: Type.Integer(),
  status: OneOf(REPORT_STATUSES),
  subjects: Type.Integer({ description: 'Subjects with a record in the period.' }),
  skipped: Type.Integer({ description: 'Subjects left out: Stripe, no customer id in the meta field.' }),
  requests: Type.Integer({ description: 'Requests the report is sent in (OpenMeter: batches of 100 records; Stripe: one per customer).' }),
  requestsSent: Type.Integer({ description: 'Of those, the ones done: accepted, or refused for good.' }),
  rejected: Type.Integer({ description: 'Of those done, the ones the receiver refused for good (400, 409, 422): not sent again.' }),
  attempts: Type.Integer(),
  lastStatusCode: Type.Optional(Type.Integer()),
  lastError: Type.Optional(Type.String()),
  nextAttemptAt: Type.Optional(Type.Integer()),
  createdAt: Type.Integer(),
  deliveredAt: Type.Optional(Type.Integer()),
});
