import { world, type World } from './harness.ts';
import { webhookReceiver } from './webhook-receiver.ts';
import { createVault } from '../../src/crypto/vault.ts';
import { JobQueue } from '../../src/jobs/job-queue.ts';
import { Worker } from '../../src/jobs/worker.ts';
import { workerTasks } from '../../src/services/worker-tasks.ts';
import type { WebhookSettings } from '../../src/config/webhooks.ts';

/** Deliveries to the loopback receiver, at once and once more 200 ms later, each given 2 s. */
export const TEST_WEBHOOK_SETTINGS: WebhookSettings = { allowPrivate: true, timeoutMs: 2000, retrySchedule: [0, 200] };

/** A world whose webhook deliveries a job worker makes, a real receiver, and one endpoint of the world's workspace to it. */
export interface DeliveringWorld {
  w: World;
  rx: Awaited<ReturnType<typeof webhookReceiver>>;
  /** The endpoint's signing secret (`whsec_…`): payloads are verified with it. */
  secret: string;
  close(): Promise<void>;
}

/** A started job worker making the webhook deliveries of `w` under `settings` (stop it before closing `w`). */
export function startWebhookWorker(w: World, settings: WebhookSettings, concurrency?: number): Worker {
  const vault = createVault([{ id: 'test', key: Buffer.alloc(32, 7) }]);
  const worker = new Worker(new JobQueue(w.store, workerTasks(w.store.db, vault, settings)), { concurrency, pollMs: 50 });
  worker.start();
  return worker;
}

/** Starts a DeliveringWorld; `endpoint` is the rest of the webhooks.createEndpoint body (events, creditsLowBelow…). */
export async function deliveringWorld(dialect: 'sqlite' | 'postgres', endpoint: Record<string, unknown> = {}): Promise<DeliveringWorld> {
  const w = await world(dialect, { app: { webhooks: TEST_WEBHOOK_SETTINGS } });
  const worker = startWebhookWorker(w, TEST_WEBHOOK_SETTINGS);
  const rx = await webhookReceiver();
  const created = await w.post<{ secret: string }>('/v1/webhooks.createEndpoint', { url: rx.url, ...endpoint });
  if (created.status !== 200) throw new Error(`createEndpoint: ${created.status} ${created.body}`);
  return {
    w,
    rx,
    secret: created.json.secret,
    async close() {
      await worker.stop();
      await rx.close();
      await w.close();
    },
  };
}
