import { sql } from 'kysely';
import { type PaceOptions, runPaced } from './batch-pace.ts';
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
  return runPaced(options, options.shouldStop ?? (() => false), async (size) => {
    const before = await freePages(store);
    if (before === 0) return { done: 0, more: false };
    const pages = Math.min(size, before);
    await sql`pragma incremental_vacuum(${sql.lit(pages)})`.execute(store.db);
    return { done: pages, more: pages < before };
  });
}

async function freePages(store: Store): Promise<number> {
  const r = await sql<{ freelist_count: number }>`select freelist_count from pragma_freelist_count()`.execute(store.db);
  return Number(r.rows[0]?.freelist_count ?? 0);
}
