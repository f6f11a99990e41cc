import type { Vault } from '../crypto/vault.ts';
import type { TaskRegistry } from '../jobs/queue.ts';
import type { Db } from '../store/store.ts';
import { migrationImportTask } from './migrations/migration-import-task.ts';
import { deliveryTask } from './webhooks/delivery-task.ts';
import { usageSendTask } from './usage/send-task.ts';
import type { SendTracing } from './webhooks/attempt.ts';
import type { WebhookSettings } from '../config/webhooks.ts';

/**
 * The tasks a Keyhold worker runs (the server's and `keyhold worker`): key imports, webhook deliveries and usage reports, whose
 * sends are traced when `tracing` is given.
 */
export const workerTasks = (db: Db, vault: Vault | undefined, webhooks: WebhookSettings, tracing?: SendTracing): TaskRegistry => ({
  'migration.import': migrationImportTask,
  'webhook.deliver': deliveryTask(db, vault, webhooks, tracing),
  'usage.send': usageSendTask(db, vault, webhooks, tracing),
});
