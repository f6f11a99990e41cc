import { randomBytes } from 'node:crypto';
import type { Store } from '../../src/store/store.ts';
import { WORKER_TASKS } from '../../src/services/migrations/migration-import-task.ts';
import { JobQueue } from '../../src/jobs/job-queue.ts';
import { Worker } from '../../src/jobs/worker.ts';
import { sha256b64 } from './hashes.ts';

/** A new random plaintext key to import. */
export const newPlain = (prefix = 'imp'): string => `${prefix}_${randomBytes(12).toString('hex')}`;

/** The `hash` member of an import item for this plaintext. */
export const hashOf = (plaintext: string) => ({ value: sha256b64(plaintext), variant: 'sha256_base64' });

/**
 * Runs a worker on the store until no job is left. (Two jobs importing one hash at once on PostgreSQL: the
 * second waits for the first, hits the unique index and is retried, after a backoff kept short here.)
 */
export async function drain(store: Store, concurrency = 4): Promise<{ completed: number }> {
  const worker = new Worker(new JobQueue(store, WORKER_TASKS, { backoffBaseMs: 5 }), { concurrency });
  for (;;) {
    await worker.runUntilIdle();
    const left = await store.db.selectFrom('jobs').select('id').where('status', 'in', ['pending', 'running']).execute();
    if (left.length === 0) return worker.stats;
    await new Promise((r) => setTimeout(r, 20));
  }
}
