/** Row types of the usage-export tables (schema migration 0015), as Kysely sees them. Times are epoch ms. */
export interface UsageExportRow {
  id: string;
  workspace_id: string;
  /** openmeter | stripe. */
  destination: string;
  url: string;
  token_data_key_id: string;
  token_ciphertext: string;
  /** identity | key. */
  subject: string;
  /** minute | hour | day. */
  period: string;
  /** JSON array of the verify codes a record counts. */
  outcomes: string;
  /** OpenMeter's CloudEvents `type`, or Stripe's `event_name`. */
  event_name: string;
  /** Stripe: the meta field holding the customer id; null for OpenMeter. */
  customer_field: string | null;
  /** The CloudEvents `source` of every record, fixed at creation (the receiver deduplicates on it with the id). */
  source: string;
  enabled: number;
  /** The start of the first period not yet reported: periods are reported in order, each once (the claim moves it). */
  next_period_start: number;
  /** next_period_start + the period: the scan reads the exports whose next period has closed by this column. */
  next_period_end: number;
  created_at: number;
  updated_at: number;
}
export interface UsageReportRow {
  id: string;
  workspace_id: string;
  export_id: string;
  period_start: number;
  period_end: number;
  /** pending | delivered | failed. */
  status: string;
  /**
   * What every attempt sends, fixed when the report is written (JSON): `{source, name, records: [[id, subject,
   * count, credits, customer?], …]}`; the requests are made from it, so a resend is the same.
   */
  content: string;
  /** Subjects with a record, skipped (Stripe: no customer id in the meta field), and requests done so far. */
  subjects: number;
  skipped: number;
  requests_sent: number;
  /** Of the requests done, those the receiver refused for good (400, 409, 422): not sent again. Default 0. */
  rejected?: number;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
}
