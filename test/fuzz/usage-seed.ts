import type { World } from '../helpers/harness.ts';
import { newId } from '../../src/domain/ids.ts';

/** A public address given as a literal, which no test reaches: saving an export resolves nothing, and nothing is sent. */
export const UNREACHED_EVENTS_URL = 'https://93.184.216.34/api/v1/events';

/**
 * A usage export (OpenMeter, to a public address no test reaches) with one delivered report, for the seeds;
 * undefined when `exportId` is still there (a workspace holds at most 10 exports: reseeding everything must not
 * reach that bound). The export is disabled and of period `day`: the app's period scan claims nothing of it (nor,
 * should a fuzzed update enable it, before the day's end); a claim would write a report and its job in the
 * background and move the export's cursor. The report is written directly (only that scan writes reports), and is
 * delivered, so that no job sends it.
 */
export async function seedUsage(w: World, root: string, workspaceId: string, exportId?: string): Promise<{ exportId: string } | undefined> {
  if (exportId && (await w.store.db.selectFrom('usage_exports').select('id').where('id', '=', exportId).executeTakeFirst()))
    return undefined;
  const created = await w.post<{ exportId: string }>(
    '/v1/usage.createExport',
    { destination: 'openmeter', url: UNREACHED_EVENTS_URL, token: 'om_fuzz_token', period: 'day', enabled: false },
    root,
  );
  if (created.status !== 200) throw new Error(`seeding: usage.createExport answered ${created.status} ${created.body}`);
  const id = created.json.exportId;
  const day = 86_400_000;
  const now = Date.now();
  const start = now - (now % day) - day;
  await w.store.db
    .insertInto('usage_reports')
    .values({
      ...{ id: newId('urep'), workspace_id: workspaceId, export_id: id, period_start: start, period_end: start + day },
      ...{ status: 'delivered', content: JSON.stringify({ source: 'fuzz', name: 'keyhold.verifications', records: [['u', 1, 0]] }) },
      ...{ subjects: 1, skipped: 0, requests_sent: 1, attempts: 1, last_status_code: 200, last_error: null, next_attempt_at: null },
      ...{ created_at: now, updated_at: now, delivered_at: now },
    })
    .execute();
  return { exportId: id };
}
