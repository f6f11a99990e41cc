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

/** What an attempt came to: how many of the report's requests are done now, and the last answer. */
type Prepared = { skip: true } | { skip: false; sent: number; result: AttemptResult; at: number };

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
  let result: AttemptResult = { statusCode: 200 };
  const at = Date.now();
  for (; sent < requests.length; sent++) {
    const { contentType, body } = requests[sent];
    const headers = { 'content-type': contentType, 'user-agent': 'Keyhold-Usage/1', authorization: `Bearer ${token}` };
    const send = (h: Record<string, string>) => attempt(exp.url, h, body, settings);
    result = await (tracing ? tracing.send(exp.url, headers, send) : send(headers));
    if (!ok(result)) break;
  }
  return { skip: false, sent, result, at };
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
  const { result, at, sent } = prepared;
  const attempts = Number(report.attempts) + 1;
  const common = { attempts, requests_sent: sent, last_status_code: result.statusCode ?? null, updated_at: at };
  const reports = tx.updateTable('usage_reports').where('id', '=', report.id);
  if (ok(result)) {
    await reports.set({ ...common, status: 'delivered', last_error: null, next_attempt_at: null, delivered_at: at }).execute();
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
