/** Row types of the webhook tables (schema migrations 0008 and 0010), as Kysely sees them. Times are epoch ms. */
export interface WebhookEndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  /** JSON array of the event types it receives. */
  events: string;
  description: string | null;
  enabled: number;
  disabled_reason: string | null;
  credits_low_below: number;
  expiring_within_days: number;
  secret_data_key_id: string;
  secret_ciphertext: string;
  previous_secret_data_key_id: string | null;
  previous_secret_ciphertext: string | null;
  previous_secret_until: number | null;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}
export interface WebhookEventRow {
  id: string;
  workspace_id: string;
  type: string;
  /** The JSON body every attempt sends. */
  body: string;
  /** Unique when set: of several servers seeing the same occurrence, one writes its event. Optional: NULL when not given. */
  dedupe_key?: string | null;
  created_at: number;
}
export interface WebhookDeliveryRow {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
}
/** A spend's crossing of credit thresholds, written with the spend (PostgreSQL) and turned into events in the background. */
export interface WebhookCreditCrossingRow {
  id: string;
  workspace_id: string;
  key_id: string;
  api_id: string;
  remaining_before: number;
  remaining_after: number;
  created_at: number;
}
