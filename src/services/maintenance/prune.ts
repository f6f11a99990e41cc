import type { RetentionConfig } from '../../config/retention.ts';
import type { Store } from '../../store/store.ts';
import { deleteBatch } from '../../store/batched-delete.ts';
import { reclaimFreePages } from '../../store/free-pages.ts';
import { EVENT_LOOP_PACE, runPaced, SERVER_PACE } from '../../store/batch-pace.ts';
import { RETENTION_RULES, type PruneKind } from './retention-rules.ts';
import { dropDaysBefore, RAW_TABLES, type RawTable } from '../analytics/partitions.ts';

const isRawTable = (table: string): table is RawTable => (RAW_TABLES as readonly string[]).includes(table);

export type PruneCounts = Partial<Record<PruneKind, number>>;

export interface PruneOptions {
  now?: number;
  /** Asked between batches: true ends the pass early (a server stopping); what is left waits for the next pass. */
  shouldStop?: () => boolean;
  /** Called after every batch with the rows it removed (metrics, the lease's renewal). */
  onBatch?: (kind: PruneKind, rows: number) => void | Promise<void>;
}

/**
 * One retention pass: removes, kind by kind (RETENTION_RULES' order), every row older than its kind's
 * retention, in short batches paced for the dialect (batch-pace.ts), then gives the freed pages of a SQLite
 * file back (free-pages.ts). Returns the rows removed per kind (kinds kept forever are left out). Running it
 * twice at once, or on two nodes, is harmless (each batch deletes what is still there); the background
 * pruner still runs one node at a time (prune-lease.ts) so they do not compete for the same rows.
 */
export async function runPrunePass(store: Store, retention: RetentionConfig, options: PruneOptions = {}): Promise<PruneCounts> {
  const now = options.now ?? Date.now();
  const stop = options.shouldStop ?? (() => false);
  const paceOptions = store.caps.writesOnEventLoop ? EVENT_LOOP_PACE : SERVER_PACE;
  const counts: PruneCounts = {};
  for (const rule of RETENTION_RULES) {
    const keepMs = rule.keepMs(retention);
    if (keepMs <= 0) continue;
    const due = rule.due(now - keepMs);
    // PostgreSQL: whole days of raw events go as partitions, in one statement each.
    const dropped =
      store.caps.dialect === 'postgres' && isRawTable(rule.table) ? await dropDaysBefore(store.db, rule.table, now - keepMs) : undefined;
    if (dropped?.rows) await options.onBatch?.(rule.kind, dropped.rows);
    // A kind may span tables (a roll-up and its coarser forms): their rows add up.
    counts[rule.kind] =
      (counts[rule.kind] ?? 0) +
      (dropped?.rows ?? 0) +
      (await runPaced(paceOptions, stop, async (size) => {
        const rows = await deleteBatch(store, rule.table, due, size, rule.primaryKey);
        if (rows) await options.onBatch?.(rule.kind, rows);
        return { done: rows, more: rows === size };
      }));
  }
  if (!stop()) await reclaimFreePages(store, { ...paceOptions, shouldStop: stop });
  return counts;
}
