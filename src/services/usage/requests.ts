import { createHash } from 'node:crypto';
import { OPENMETER_BATCH } from '../../domain/usage-exports.ts';
import type { UsageReportRow } from '../../store/schema-usage.ts';
import type { ReportContent, UsageRecord } from './report-content.ts';

/** One request of a report: its headers (without the token) and body. */
export interface UsageRequest {
  contentType: string;
  body: string;
}

/**
 * The id of a record of a period, by its owner (the identity's id, or the key's): the same on every attempt, server
 * and restart, so the receiver deduplicates a resend (OpenMeter on the CloudEvents `id` and `source`, Stripe on
 * `identifier`); two identities that share an externalId in one period (one deleted, then made again) are two
 * records. 47 characters.
 */
export const recordId = (exportId: string, periodStart: number, owner: string): string =>
  `khu_${createHash('sha256').update(`${exportId}\n${periodStart}\n${owner}`).digest('base64url').slice(0, 43)}`;

/**
 * The requests that send a report, in order: OpenMeter batches of CloudEvents, or one Stripe meter event per customer.
 * Each is made when asked for (`request(i)`), so an attempt holds one request's body at a time, not the whole report's.
 */
export function reportRequests(destination: string, report: UsageReportRow): { count: number; request(i: number): UsageRequest } {
  const content = JSON.parse(report.content) as ReportContent;
  const start = Number(report.period_start);
  const end = Number(report.period_end);
  if (destination === 'stripe') return { count: content.records.length, request: (i) => stripeRequest(end, content, content.records[i]) };
  return {
    count: Math.ceil(content.records.length / OPENMETER_BATCH),
    request: (i) => openmeterRequest(start, end, content, content.records.slice(i * OPENMETER_BATCH, (i + 1) * OPENMETER_BATCH)),
  };
}

/** A batch of CloudEvents 1.0 (`application/cloudevents-batch+json`), `time` the period's end. */
function openmeterRequest(start: number, end: number, content: ReportContent, records: UsageRecord[]): UsageRequest {
  const periodStart = new Date(start).toISOString();
  const periodEnd = new Date(end).toISOString();
  const events = records.map(([id, subject, count, credits]) => ({
    specversion: '1.0',
    id,
    source: content.source,
    type: content.name,
    subject,
    time: periodEnd,
    datacontenttype: 'application/json',
    data: { count, credits, periodStart, periodEnd },
  }));
  return { contentType: 'application/cloudevents-batch+json', body: JSON.stringify(events) };
}

/** A Stripe billing meter event, form-encoded: `value` is the count, `timestamp` the period's end (seconds). */
function stripeRequest(end: number, content: ReportContent, [id, , count, , customer]: UsageRecord): UsageRequest {
  return {
    contentType: 'application/x-www-form-urlencoded',
    body: new URLSearchParams({
      event_name: content.name,
      'payload[stripe_customer_id]': customer ?? '',
      'payload[value]': String(count),
      identifier: id,
      timestamp: String(Math.floor(end / 1000)),
    }).toString(),
  };
}
