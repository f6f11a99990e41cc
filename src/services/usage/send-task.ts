import type { Vault } from '../../crypto/vault.ts';
import { enqueue, type TaskDefinition } from '../../jobs/queue.ts';
import type { WebhookSettings } from '../../config/webhooks.ts';
import type { Db, Executor, Tx } from '../../store/store.ts';
import type { UsageReportRow } from '../../store/schema-usage.ts';
import { attempt, type AttemptResult, type SendTracing } from '../webhooks/attempt.ts';
import { nextDelay } from '../webhooks/delivery-rules.ts';
import { reportRequests } from './requests.ts';

/** The payload of a `usage.send` job: one attempt of one report (fenced on its `next_attempt_at`, as a webhook delivery's). */
export interface SendPayload {
  reportId: string;
  at: number;
}

declare module '../../jobs/queue.ts' {
  interface TaskPayloads {
    'usage.send': SendPayload;
  }
}

/** Reports' attempts recorded by this process, by outcome (for /metrics). */
export const reportOutcomes = { delivered: 0, retried: 0, failed: 0 };

/** Schedules an attempt of a report, with `db` (the transaction that writes or retries it). Call `announceJobs()` after the commit. */
export async function scheduleSend(db: Executor, reportId: string, runAt: number): Promise<void> {
  await enqueue(db, 'usage.send', { reportId, at: runAt }, { runAt, maxAttempts: 3 });
}

/**
 * What an attempt came to: how many of the report's requests are done now (accepted, or refused for good), how many
 * of those it refused for good, and the answer that ended it (or the last refusal).
 */
type Prepared =
  | { skip: true }
  | { skip: false; done: boolean; sent: number; rejected: number; result: AttemptResult; refusal?: AttemptResult; at: number };

/**
 * Answers that refuse a request for good: the receiver will not take it however often it comes (Stripe: no such
 * customer, a timestamp outside its window, an identifier it has already). Such a request is recorded as rejected and
 * the report goes on with the next one, so that one customer's refusal does not hold the others back. Any other failure
 * (401, 403, 404, 429, 5xx, a timeout, a connection error) may pass: the attempt ends and is retried.
 */
const REFUSED_FOR_GOOD = new Set([400, 409, 422]);

async function currentReport(db: Db | Tx, payload: SendPayload): Promise<UsageReportRow | undefined> {
  const row = await db.selectFrom('usage_reports').selectAll().where('id', '=', payload.reportId).executeTakeFirst();
  return row && row.status === 'pending' && Number(row.next_attempt_at) === payload.at ? row : undefined;
}

const ok = (r: AttemptResult) => r.statusCode !== undefined && r.statusCode >= 200 && r.statusCode < 300;

/**
 * One attempt of a report, over the network, outside any transaction: its requests in order from the first not yet
 * done, until one fails. The URL and token are the export's now (a token replaced since is the one used); the records
 * are the report's, fixed when it was written.
 */
async function prepare(db: Db, vault: Vault, settings: WebhookSettings, payload: SendPayload, tracing?: SendTracing): Promise<Prepared> {
  const report = await currentReport(db, payload);
  if (!report) return { skip: true };
  const exp = await db.selectFrom('usage_exports').selectAll().where('id', '=', report.export_id).executeTakeFirst();
  if (!exp) return { skip: true };
  const [token] = await vault.decrypt(db, exp.workspace_id, [{ dataKeyId: exp.token_data_key_id, ciphertext: exp.token_ciphertext }]);
  const requests = reportRequests(exp.destination, report);
  let sent = Number(report.requests_sent);
  let rejected = Number(report.rejected ?? 0);
  let result: AttemptResult = {};
  let refusal: AttemptResult | undefined;
  const at = Date.now();
  for (; sent < requests.count; sent++) {
    const { contentType, body } = requests.request(sent);
    const headers = { 'content-type': contentType, 'user-agent': 'Keyhold-Usage/1', authorization: `Bearer ${token}` };
    const send = (h: Record<string, string>) => attempt(exp.url, h, body, settings);
    result = await (tracing ? tracing.send(exp.url, headers, send) : send(headers));
    if (REFUSED_FOR_GOOD.has(result.statusCode ?? 0)) {
      rejected++;
      refusal = result;
    } else if (!ok(result)) break;
  }
  return { skip: false, done: sent === requests.count, sent, rejected, result, refusal, at };
}

/** Records the attempt: delivered, or the next attempt scheduled (the webhook retry schedule), or failed for good. */
async function record(
  tx: Tx,
  settings: WebhookSettings,
  payload: SendPayload,
  prepared: Prepared,
): Promise<keyof typeof reportOutcomes | undefined> {
  if (prepared.skip) return undefined;
  const report = await currentReport(tx, payload);
  if (!report) return undefined;
  const { at, sent, rejected, refusal } = prepared;
  // A report whose every request is done is delivered; the last refusal, if any, is what it shows of them.
  const result = prepared.done ? (refusal ?? prepared.result) : prepared.result;
  const attempts = Number(report.attempts) + 1;
  const common = { attempts, requests_sent: sent, rejected, last_status_code: result.statusCode ?? null, updated_at: at };
  const reports = tx.updateTable('usage_reports').where('id', '=', report.id);
  if (prepared.done) {
    await reports
      .set({ ...common, status: 'delivered', last_error: result.error ?? null, next_attempt_at: null, delivered_at: at })
      .execute();
    return 'delivered';
  }
  const delay = nextDelay(settings.retrySchedule, attempts);
  const next = delay === undefined ? null : at + delay;
  await reports
    .set({ ...common, status: next === null ? 'failed' : 'pending', last_error: result.error ?? null, next_attempt_at: next })
    .execute();
  if (next !== null) await scheduleSend(tx, report.id, next);
  return next === null ? 'failed' : 'retried';
}

/** The `usage.send` task: the report's requests over the network (prepare), then its outcome recorded with the job's completion. */
export function usageSendTask(
  db: Db,
  vault: Vault | undefined,
  settings: WebhookSettings,
  tracing?: SendTracing,
): TaskDefinition<SendPayload> {
  return {
    prepare: (payload) => (vault ? prepare(db, vault, settings, payload, tracing) : Promise.resolve<Prepared>({ skip: true })),
    run: async (tx, payload, _job, prepared) => {
      const outcome = await record(tx, settings, payload, prepared as Prepared);
      if (outcome) reportOutcomes[outcome]++;
    },
  };
}
