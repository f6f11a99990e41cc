import { listEndedItems } from '../../../services/migrations/list-migrations.ts';
import { readMigration, type MigrationView } from '../../../services/migrations/migration-records.ts';
import type { PageContext } from '../context.ts';

/** Items of each list (failures, migrated keys) shown at a time, by item index. */
export const ITEMS_PER_PAGE = 50;

/** An entry of a live list, as assets/dashboard.js renders it: text, and a link when there is one. */
export interface LiveItem {
  text: string;
  href?: string;
}

/** Which page of each list is shown: the item index each one continues after (absent: from the first item). */
export interface ItemCursors {
  failuresAfter?: number;
  migratedAfter?: number;
}

/**
 * What the migration page shows and its script refreshes every second (the JSON of the progress address):
 * status, counts, and the shown page of failures and of migrated keys, each with a line saying how much of
 * the list is shown. `failuresNext` / `migratedNext`: the index the next page of that list continues after.
 */
export interface Progress {
  status: MigrationView['status'];
  enqueued: number;
  pending: number;
  migrated: number;
  failed: number;
  failuresSummary: string;
  failureItems: LiveItem[];
  migratedSummary: string;
  migratedItems: LiveItem[];
  failuresNext?: number;
  migratedNext?: number;
}

/** A list cursor from the query: a non-negative integer index, else none (the first page). */
export function cursorOf(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,15}$/.test(value)) return undefined;
  return Number(value);
}

export const cursorsOf = (query: Record<string, string>): ItemCursors => ({
  failuresAfter: cursorOf(query.failuresAfter),
  migratedAfter: cursorOf(query.migratedAfter),
});

/** The progress of a migration of the session's workspace (another workspace's: not found, a 404). */
export async function migrationProgress(ctx: PageContext, migrationId: string, cursors: ItemCursors): Promise<Progress> {
  const db = ctx.deps.store.db;
  const view = await readMigration(db, ctx.caller, migrationId);
  const [failures, migrated] = await Promise.all([
    listEndedItems(db, ctx.caller, migrationId, { status: 'failed', limit: ITEMS_PER_PAGE, after: cursors.failuresAfter }),
    listEndedItems(db, ctx.caller, migrationId, { status: 'migrated', limit: ITEMS_PER_PAGE, after: cursors.migratedAfter }),
  ]);
  const { counts } = view;
  return {
    status: view.status,
    ...counts,
    failuresSummary: summary(failures.items.length, counts.failed, cursors.failuresAfter, ['failure', 'failures']),
    failureItems: failures.items.map((f) => ({ text: `Item ${f.index}: ${f.reason ?? 'failed'} (hash ${f.hash})` })),
    migratedSummary: summary(migrated.items.length, counts.migrated, cursors.migratedAfter, ['migrated key', 'migrated keys']),
    migratedItems: migrated.items.map((m) => ({
      text: `Item ${m.index}: key ${m.keyId}`,
      ...(m.keyId ? { href: `/dashboard/keys/${encodeURIComponent(m.keyId)}` } : {}),
    })),
    failuresNext: failures.next,
    migratedNext: migrated.next,
  };
}

/** How much of a list the page shows, e.g. "2 of 2 failures shown, by item index." */
function summary(shown: number, total: number, after: number | undefined, [one, many]: [string, string]): string {
  if (total === 0) return `No ${many} so far.`;
  const from = after === undefined ? '' : ` after item ${after}`;
  const cap =
    total > ITEMS_PER_PAGE
      ? ` At most ${ITEMS_PER_PAGE} are listed at a time: the next page (its link appears on reloading, while the migration runs) lists the following ones.`
      : '';
  return `${shown} of ${total} ${total === 1 ? one : many} shown${from}, by item index.${cap}`;
}
