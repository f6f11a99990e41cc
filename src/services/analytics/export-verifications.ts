import type { Db } from '../../store/store.ts';
import { EXPORT_PAGE_ROWS, type ExportWindow } from '../audit/export-audit-logs.ts';
import { floorTo, fold, type OutcomeCounts } from './hourly-sums.ts';

/**
 * One key's verifications in one UTC hour: analytics.getVerifications' row grouped by hour and key (`time`,
 * `keyId` and the outcome counts, same names), with the key's `apiId`, since an export spans every API.
 */
export interface VerificationExportRow extends OutcomeCounts {
  time: number;
  apiId: string;
  keyId: string;
}

/**
 * Every (hour, key) of the workspace's hourly verification counts in the window, oldest hour first, keys
 * ascending within an hour, a page (an array) at a time. As analytics.getVerifications does, the window covers whole hours: every hour
 * that overlaps [since, until) is counted whole.
 *
 * Read by keyset on (hour, key_id) over the (workspace_id, hour, key_id) index, `pageRows` stored rows (one per
 * outcome) at a time. A page may end inside a key's outcomes: its last (hour, key) is held back and read whole
 * with the next page, so every row written is complete. Memory is one page, whatever the workspace holds.
 */
export async function* verificationsOldestFirst(
  db: Db,
  workspaceId: string,
  window: ExportWindow,
  pageRows = EXPORT_PAGE_ROWS,
): AsyncGenerator<VerificationExportRow[]> {
  const from = window.since === undefined ? undefined : floorTo(window.since, 'hour');
  let after: { hour: number; keyId: string } | undefined;
  for (;;) {
    const rows = await db
      .selectFrom('analytics_key_verifications_per_hour')
      .select((eb) => ['time as hour', 'key_id', 'key_space_id as api_id', 'outcome', eb.fn.sum<number | string>('count').as('count')])
      .where('workspace_id', '=', workspaceId)
      // Only the first page needs the lower bound: later ones start after the cursor, which lies past it, and
      // with both SQLite would seek to the bound and scan up to the cursor on every page.
      .$if(from !== undefined && after === undefined, (q) => q.where('time', '>=', from!))
      .$if(window.until !== undefined, (q) => q.where('time', '<', window.until!))
      .$if(after !== undefined, (q) => q.where((eb) => eb(eb.refTuple('time', 'key_id'), '>', eb.tuple(after!.hour, after!.keyId))))
      // One row per (hour, key, outcome): the roll-up's rows of other identities and tags summed.
      .groupBy(['time', 'key_id', 'key_space_id', 'outcome'])
      .orderBy('time')
      .orderBy('key_id')
      .orderBy('outcome')
      .limit(pageRows)
      .execute()
      .then((rs) => rs.map((r) => ({ ...r, hour: Number(r.hour) })));
    const full = rows.length === pageRows;
    const last = rows[rows.length - 1];
    // A full page's last (hour, key) may continue in the next page: leave it to that page.
    const complete = full ? rows.filter((r) => r.hour !== last.hour || r.key_id !== last.key_id) : rows;
    if (full && complete.length === 0) throw new Error(`a page of ${pageRows} rows holds a single (hour, key): read more rows per page`);
    const apiOf = new Map(complete.map((r) => [r.key_id, r.api_id]));
    const groups = fold(
      complete.map((r) => ({ hour: r.hour, key_id: r.key_id, outcome: r.outcome, n: Number(r.count) })),
      'hour',
    );
    const page = [...groups.values()].map((g) => ({ time: g.time!, apiId: apiOf.get(g.keyId!)!, keyId: g.keyId!, ...g.counts }));
    if (page.length) yield page;
    if (!full) return;
    const end = complete[complete.length - 1];
    after = { hour: end.hour, keyId: end.key_id };
  }
}
