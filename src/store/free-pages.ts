import { sql } from 'kysely';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { BatchPace, type PaceOptions } from './batch-pace.ts';
import type { Store } from './store.ts';

/** SQLite's `auto_vacuum` value for INCREMENTAL. */
const INCREMENTAL = 2;

/**
 * Gives the free pages of a SQLite file back to the file system, in short paced steps
 * (`PRAGMA incremental_vacuum(n)`), after rows were removed. Only a file with `auto_vacuum = INCREMENTAL` can
 * (new files are made so: sqlite.ts); an older file keeps its free pages and fills them again before it
 * grows. On PostgreSQL, autovacuum makes the space of removed rows reusable; nothing to do here. Returns the
 * pages given back.
 */
export async function reclaimFreePages(store: Store, options: PaceOptions & { shouldStop?: () => boolean }): Promise<number> {
  if (store.caps.dialect !== 'sqlite') return 0;
  const mode = await sql<{ auto_vacuum: number }>`select auto_vacuum from pragma_auto_vacuum()`.execute(store.db);
  if (Number(mode.rows[0]?.auto_vacuum) !== INCREMENTAL) return 0;
  const pace = new BatchPace(options);
  let freed = 0;
  while (!options.shouldStop?.()) {
    const before = await freePages(store);
    if (before === 0) break;
    const pages = Math.min(pace.size, before);
    const started = performance.now();
    await sql`pragma incremental_vacuum(${sql.lit(pages)})`.execute(store.db);
    freed += pages;
    if (pages === before) break;
    await sleep(pace.after(pages, performance.now() - started));
  }
  return freed;
}

async function freePages(store: Store): Promise<number> {
  const r = await sql<{ freelist_count: number }>`select freelist_count from pragma_freelist_count()`.execute(store.db);
  return Number(r.rows[0]?.freelist_count ?? 0);
}
