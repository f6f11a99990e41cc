import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type Response, type World } from '../../../helpers/harness.ts';
import type { Answer } from '../../../helpers/json.ts';
import { securityTests } from '../../../helpers/security.ts';
import { RatelimitRecorder } from '../../../../src/services/ratelimits/ratelimit-recorder.ts';
import { newId } from '../../../../src/domain/ids.ts';

const path = '/v1/ratelimits.getAnalytics';
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** A fixed, hour-aligned origin: 2025-01-30T00:00Z. */
const T0 = Date.UTC(2025, 0, 30);
const at = (day: number, hour: number, minute = 0) => T0 + day * DAY_MS + hour * HOUR_MS + minute * 60_000;

interface Item {
  time?: number;
  identifier?: string;
  passed: number;
  denied: number;
  total: number;
}
const item = (time: number, passed: number, denied: number): Item => ({ time, passed, denied, total: passed + denied });
const of = (identifier: string, passed: number, denied: number): Item => ({ identifier, passed, denied, total: passed + denied });

const ok = (res: Response<Answer>): Item[] => {
  assert.equal(res.status, 200, res.body);
  return (res.json as unknown as { analytics: Item[] }).analytics;
};
const problem = (res: Response<Answer>, at: string, message: RegExp) => {
  assert.equal(res.status, 400, res.body);
  assert.equal(res.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
  assert.ok(
    res.json.error.errors.some((p) => p.path === at && message.test(p.message)),
    `expected a problem at ${at} matching ${message}: ${res.body}`,
  );
};

for (const dialect of DIALECTS) {
  describe(`GET ${path} (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    /** A namespace row inserted directly (in the test workspace unless `workspaceId` is given). */
    const namespace = async (name: string, workspaceId = w.workspaceId): Promise<string> => {
      const id = newId('rlns');
      const now = Date.now();
      await w.store.db
        .insertInto('ratelimit_namespaces')
        .values({ id, workspace_id: workspaceId, name, created_at: now, updated_at: now })
        .execute();
      return id;
    };
    /** Writes decisions through the recorder: [identifier, time, passed, denied] each. */
    const decisions = async (namespaceId: string, list: Array<[string, number, number, number]>, workspaceId = w.workspaceId) => {
      const r = new RatelimitRecorder(w.store.db);
      for (const [identifier, time, passed, denied] of list) {
        for (let i = 0; i < passed; i++) r.record({ workspaceId, namespaceId, identifier, passed: true, time });
        for (let i = 0; i < denied; i++) r.record({ workspaceId, namespaceId, identifier, passed: false, time });
      }
      await r.flush();
    };
    /** A namespace with decisions over three days, and a neighbour whose decisions must never show. */
    const seeded = async (name: string) => {
      const id = await namespace(name);
      await decisions(id, [
        ['user_1', at(0, 10, 5), 3, 1],
        ['user_1', at(0, 10, 59), 2, 0],
        ['user_10', at(0, 10, 30), 0, 4],
        ['user_2', at(0, 13), 5, 0],
        ['user_%', at(1, 23, 59), 1, 1],
        ['user_1', at(2, 0, 30), 0, 2],
        ['user_2', at(2, 1), 7, 0],
      ]);
      await decisions(await namespace(`${name}-neighbour`), [['user_1', at(0, 10), 100, 100]]);
      return id;
    };
    const window = { start: at(0, 0), end: at(3, 0) };

    test('per hour (the default): only hours with decisions, ascending, summed over identifiers', async () => {
      const namespaceId = await seeded('hourly');
      const expected = [item(at(0, 10), 5, 5), item(at(0, 13), 5, 0), item(at(1, 23), 1, 1), item(at(2, 0), 0, 2), item(at(2, 1), 7, 0)];
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window })), expected);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, groupBy: 'hour' })), expected);
      // By name: the same namespace.
      assert.deepEqual(ok(await w.get(path, { namespaceName: 'hourly', ...window })), expected);
    });

    test('per UTC day; one identifier by exact match (no pattern: `%` and prefixes match nothing else)', async () => {
      const namespaceId = await seeded('daily');
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, groupBy: 'day' })), [
        item(at(0, 0), 10, 5),
        item(at(1, 0), 1, 1),
        item(at(2, 0), 7, 2),
      ]);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, identifier: 'user_1' })), [
        item(at(0, 10), 5, 1),
        item(at(2, 0), 0, 2),
      ]);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, identifier: 'user_1', groupBy: 'day' })), [
        item(at(0, 0), 5, 1),
        item(at(2, 0), 0, 2),
      ]);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, identifier: 'user_%' })), [item(at(1, 23), 1, 1)]);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, identifier: 'user_' })), []);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, identifier: 'nobody' })), []);
    });

    test('per identifier: the most decisions first (ties by identifier), cut to `limit` (default 100)', async () => {
      const namespaceId = await seeded('by-identifier');
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, groupBy: 'identifier' })), [
        of('user_2', 12, 0),
        of('user_1', 5, 3),
        of('user_10', 0, 4),
        of('user_%', 1, 1),
      ]);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, groupBy: 'identifier', limit: 2 })), [
        of('user_2', 12, 0),
        of('user_1', 5, 3),
      ]);
      // Only day 0.
      assert.deepEqual(ok(await w.get(path, { namespaceId, start: at(0, 0), end: at(1, 0), groupBy: 'identifier' })), [
        of('user_1', 5, 1),
        of('user_2', 5, 0),
        of('user_10', 0, 4),
      ]);
      assert.deepEqual(ok(await w.get(path, { namespaceId, ...window, groupBy: 'identifier', identifier: 'user_10' })), [
        of('user_10', 0, 4),
      ]);

      const many = await namespace('many-identifiers');
      await decisions(
        many,
        Array.from({ length: 150 }, (_, i): [string, number, number, number] => [`id-${String(i).padStart(3, '0')}`, at(0, 1), 1, i % 2]),
      );
      const top = ok(await w.get(path, { namespaceId: many, ...window, groupBy: 'identifier' }));
      assert.equal(top.length, 100, 'at most 100 by default');
      // 75 identifiers with 2 decisions (odd i), then ties of 1 by identifier.
      assert.deepEqual(
        top.slice(0, 3).map((x) => x.identifier),
        ['id-001', 'id-003', 'id-005'],
      );
      assert.deepEqual(
        top.slice(75, 78).map((x) => x.identifier),
        ['id-000', 'id-002', 'id-004'],
      );
      assert.equal(ok(await w.get(path, { namespaceId: many, ...window, groupBy: 'identifier', limit: 1000 })).length, 150);
    });

    test('windows widen to whole buckets; end defaults to now; an empty window answers []', async () => {
      const namespaceId = await seeded('windows');
      // [day 0 10:45, day 2 00:10) by hour covers 10:00 … 00:00.
      assert.deepEqual(
        ok(await w.get(path, { namespaceId, start: at(0, 10, 45), end: at(2, 0, 10) })).map((x) => x.time),
        [at(0, 10), at(0, 13), at(1, 23), at(2, 0)],
      );
      assert.deepEqual(ok(await w.get(path, { namespaceId, start: at(1, 5), end: at(1, 6), groupBy: 'day' })), [item(at(1, 0), 1, 1)]);
      assert.deepEqual(ok(await w.get(path, { namespaceId, start: at(5, 0), end: at(6, 0) })), []);

      const now = Date.now();
      const recent = await namespace('recent');
      await decisions(recent, [
        ['a', now - 2 * HOUR_MS, 2, 0],
        ['a', now + 3 * HOUR_MS, 0, 9],
      ]);
      const hour = (t: number) => t - (t % HOUR_MS);
      assert.deepEqual(ok(await w.get(path, { namespaceId: recent, start: now - 5 * HOUR_MS })), [item(hour(now - 2 * HOUR_MS), 2, 0)]);
    });

    test('400: start ≥ end, too many buckets, limit without groupBy identifier, no namespace, bad members', async () => {
      const namespaceId = await namespace('errors');
      problem(await w.get(path, { namespaceId, start: at(1, 0), end: at(1, 0) }), '/start', /less than end/);
      problem(await w.get(path, { namespaceId, start: at(1, 0), end: at(0, 0) }), '/start', /less than end/);
      problem(await w.get(path, { namespaceId, start: Date.now() + DAY_MS }), '/start', /less than end/);
      // 10 000 hours is the most; the same window by day is fine.
      assert.deepEqual(ok(await w.get(path, { namespaceId, start: at(0, 0), end: at(0, 0) + 10_000 * HOUR_MS })), []);
      problem(await w.get(path, { namespaceId, start: at(0, 0), end: at(0, 0) + 10_000 * HOUR_MS + 1 }), '/start', /10000 hour buckets/);
      assert.deepEqual(ok(await w.get(path, { namespaceId, start: at(0, 0), end: at(0, 0) + 10_001 * HOUR_MS, groupBy: 'day' })), []);
      assert.deepEqual(ok(await w.get(path, { namespaceId, start: 0, end: 253402300799999, groupBy: 'identifier' })), []);
      problem(await w.get(path, { namespaceId, start: at(0, 0), end: at(1, 0), limit: 5 }), '/limit', /groupBy identifier/);
      problem(await w.get(path, { start: at(0, 0), end: at(1, 0) }), '/namespaceId', /namespaceName/);
      problem(await w.get(path, { namespaceId, start: at(0, 0), end: at(1, 0), groupBy: 'week' }), '/groupBy', /./);
      problem(await w.get(path, { namespaceId, start: at(0, 0), groupBy: 'identifier', limit: 1001 }), '/limit', /./);
      problem(await w.get(path, { namespaceId, start: at(0, 0), groupBy: 'identifier', limit: 0 }), '/limit', /./);
      problem(await w.get(path, { namespaceId, start: -1 }), '/start', /./);
      problem(await w.get(path, { namespaceId, start: 253402300800000 }), '/start', /./);
      problem(await w.get(path, { namespaceId }), '/start', /./);
      problem(await w.get(path, { namespaceId, start: at(0, 0), end: at(1, 0), identifier: '' }), '/identifier', /./);
    });

    test('404: an unknown namespace, by id or by name', async () => {
      for (const query of [{ namespaceId: 'rlns_unknown' }, { namespaceName: 'no-such-namespace' }] as Array<Record<string, string>>) {
        const res = await w.get(path, { ...query, start: at(0, 0), end: at(1, 0) });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
        assert.equal(res.json.error.type, 'https://keyhold.dev/errors/data/namespace-not-found');
      }
    });

    test("isolation: another workspace's namespace is 404 by id and by name, and a name is looked up in the caller's workspace", async () => {
      const other = await w.otherWorkspace();
      const theirs = await namespace('shared-name', other.workspaceId);
      await decisions(theirs, [['x', at(0, 1), 50, 50]], other.workspaceId);
      const ours = await namespace('shared-name');
      await decisions(ours, [['x', at(0, 1), 1, 0]]);

      await namespace('only-theirs', other.workspaceId);
      const foreign: Array<Record<string, string>> = [
        { namespaceId: theirs },
        { namespaceId: theirs, identifier: 'x' },
        { namespaceName: 'only-theirs' },
      ];
      for (const query of foreign) {
        const res = await w.get(path, { ...query, start: at(0, 0), end: at(1, 0) });
        assert.equal(res.status, 404, res.body);
        assert.equal(res.json.error.code, 'NOT_FOUND');
      }
      const byName = { namespaceName: 'shared-name', start: at(0, 0), end: at(1, 0) };
      assert.deepEqual(ok(await w.get(path, byName)), [item(at(0, 1), 1, 0)]);
      assert.deepEqual(ok(await w.get(path, byName, other.root)), [item(at(0, 1), 50, 50)]);
      // Their `*` key on our namespace id: 404 too.
      assert.equal((await w.get(path, { namespaceId: ours, start: at(0, 0), end: at(1, 0) }, other.root)).status, 404);
    });

    test('permission: ratelimit.<namespaceId>.read_namespace, or ratelimit.*.read_namespace', async () => {
      const namespaceId = await namespace('perms');
      const otherNamespace = await namespace('perms-other');
      await decisions(namespaceId, [['x', at(0, 1), 1, 1]]);
      const query = { namespaceId, start: at(0, 0), end: at(1, 0) };
      for (const permissions of [
        [`ratelimit.${otherNamespace}.read_namespace`],
        [`ratelimit.${namespaceId}.limit`, 'ratelimit.*.create_namespace'],
        ['api.*.read_analytics'],
      ]) {
        const res = await w.get(path, query, await w.rootKey(permissions));
        assert.equal(res.status, 403, res.body);
        assert.equal(res.json.error.detail, `Missing permission: ratelimit.${namespaceId}.read_namespace`);
      }
      for (const permissions of [[`ratelimit.${namespaceId}.read_namespace`], ['ratelimit.*.read_namespace'], ['*']]) {
        assert.deepEqual(ok(await w.get(path, query, await w.rootKey(permissions))), [item(at(0, 1), 1, 1)]);
        const byName = { namespaceName: 'perms', start: at(0, 0), end: at(1, 0) };
        assert.deepEqual(ok(await w.get(path, byName, await w.rootKey(permissions))), [item(at(0, 1), 1, 1)]);
      }
    });

    let securityNamespaceId = '<namespaceId>';
    securityTests(() => w, {
      get permission() {
        return `ratelimit.${securityNamespaceId}.read_namespace`;
      },
      request: async () => {
        securityNamespaceId = await namespace(`secure-${newId('req')}`);
        return { method: 'GET', path, query: { namespaceId: securityNamespaceId, start: Date.now() - HOUR_MS } };
      },
      foreign: async (_w, other) => ({
        method: 'GET',
        path,
        query: { namespaceId: await namespace(`foreign-${newId('req')}`, other.workspaceId), start: Date.now() - HOUR_MS },
      }),
    });
  });
}
