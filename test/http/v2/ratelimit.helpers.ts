import assert from 'node:assert/strict';
import type { World } from '../../helpers/harness.ts';
import { v2Data } from '../../helpers/v2.ts';

/** A window so long that no test crosses its end: counts made in one test stay in one window. */
export const LONG = 2_592_000_000;

/** Tables a limit, a namespace or an override change writes: equal snapshots mean nothing was written. */
export const RL_TABLES = ['ratelimit_namespaces', 'ratelimit_overrides', 'ratelimit_counters', 'audit_logs', 'change_feed'] as const;

/** Creates the namespace `name` in the workspace of `key` (by a cost-0 v2 ratelimit.limit) and returns its id. */
export async function makeNamespace(w: World, name: string, key = w.root): Promise<string> {
  v2Data(await w.post('/v2/ratelimit.limit', { namespace: name, identifier: 'setup', limit: 1, duration: 1000, cost: 0 }, key));
  const row = await w.store.db.selectFrom('ratelimit_namespaces').select('id').where('name', '=', name).executeTakeFirstOrThrow();
  return row.id;
}

/** What v1's ratelimits.limit reports for a counter without counting (cost 0). */
export async function v1Remaining(w: World, namespace: string, identifier: string, limit: number, duration = LONG): Promise<number> {
  const r = await w.post<{ remaining: number }>('/v1/ratelimits.limit', { namespace, identifier, limit, duration, cost: 0 });
  assert.equal(r.status, 200, r.body);
  return r.json.remaining;
}
