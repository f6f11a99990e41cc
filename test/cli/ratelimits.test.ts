import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer } from '../helpers/json.ts';
import type { Store } from '../../src/store/store.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { createNamespace } from '../../src/services/ratelimits/namespaces.ts';
import { operatorCaller } from '../../src/services/caller.ts';

type Overrides = { overrides: Array<{ id: string; identifier: string; limit: number; duration: number; async?: boolean }>; total: number };
type Namespaces = { namespaces: Array<{ id: string; name: string; createdAt: number }>; total: number; cursor?: string };

for (const dialect of DIALECTS) {
  describe(`keyhold ratelimits (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    let ws: string;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
      ws = (await createWorkspace(store.db, 'acme', OPERATOR)).workspaceId;
      for (const name of ['email', 'sms', 'push']) await createNamespace(store.db, operatorCaller(ws, OPERATOR, 'req_test'), name);
    });
    after(() => close());
    const cli = <T = CliAnswer>(...argv: string[]) => runCli<T>({ DATABASE_URL: url }, argv);

    test('namespaces: every namespace of the workspace, by id, with pagination', async () => {
      const all = await cli<Namespaces>('ratelimits', 'namespaces', '--workspace', ws, '--json');
      assert.equal(all.code, 0, JSON.stringify(all));
      assert.deepEqual(all.json.namespaces.map((n) => n.name).sort(), ['email', 'push', 'sms']);
      assert.equal(all.json.total, 3);
      const first = await cli<Namespaces>('ratelimits', 'namespaces', '--workspace', ws, '--limit', '2', '--json');
      assert.equal(first.code, 0, JSON.stringify(first));
      assert.equal(first.json.namespaces.length, 2);
      assert.ok(first.json.cursor);
      const rest = await cli<Namespaces>('ratelimits', 'namespaces', '--workspace', ws, '--cursor', first.json.cursor, '--json');
      assert.equal(rest.code, 0, JSON.stringify(rest));
      assert.deepEqual(
        [...first.json.namespaces, ...rest.json.namespaces].map((n) => n.id),
        all.json.namespaces.map((n) => n.id),
      );
    });

    test('set-override, overrides, delete-override: the same rules as the API, audited as the operator', async () => {
      const set = await cli<{ overrideId: string }>(
        'ratelimits',
        'set-override',
        '--workspace',
        ws,
        '--namespace',
        'email',
        '--identifier',
        'user_*',
        '--limit',
        '5',
        '--duration',
        '60000',
        '--async',
        '--json',
      );
      assert.equal(set.code, 0, JSON.stringify(set));
      assert.match(set.json.overrideId, /^rlor_/);
      const listed = await cli<Overrides>('ratelimits', 'overrides', '--workspace', ws, '--namespace', 'email', '--json');
      const row = await store.db
        .selectFrom('ratelimit_overrides')
        .select('updated_at')
        .where('id', '=', set.json.overrideId)
        .executeTakeFirstOrThrow();
      assert.deepEqual(listed.json, {
        overrides: [
          { id: set.json.overrideId, identifier: 'user_*', limit: 5, duration: 60000, async: true, updatedAt: Number(row.updated_at) },
        ],
        total: 1,
      });
      const audit = await store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', set.json.overrideId).execute();
      assert.deepEqual(
        audit.map((a) => [a.event, a.actor_type, a.workspace_id]),
        [['ratelimit.set_override', 'operator', ws]],
      );
      assert.match(audit[0].actor_id, /^cli:/);
      const deleted = await cli(
        'ratelimits',
        'delete-override',
        '--workspace',
        ws,
        '--namespace',
        'email',
        '--identifier',
        'user_*',
        '--json',
      );
      assert.equal(deleted.code, 0, JSON.stringify(deleted));
      const again = await cli(
        'ratelimits',
        'delete-override',
        '--workspace',
        ws,
        '--namespace',
        'email',
        '--identifier',
        'user_*',
        '--json',
      );
      assert.equal(again.code, 1);
      assert.equal(again.json.error.kind, 'data/override-not-found', JSON.stringify(again));
    });

    test('an identifier of 255 characters outside the BMP (510 UTF-16 units) is taken, as the API takes it', async () => {
      const identifier = '😀'.repeat(255);
      const base = ['--workspace', ws, '--namespace', 'sms', '--identifier', identifier];
      const set = await cli('ratelimits', 'set-override', ...base, '--limit', '1', '--duration', '60000', '--json');
      assert.equal(set.code, 0, JSON.stringify(set));
      const tooLong = await cli('ratelimits', 'delete-override', ...base.slice(0, -1), `${identifier}😀`, '--json');
      assert.equal(tooLong.code, 2, JSON.stringify(tooLong));
      const deleted = await cli('ratelimits', 'delete-override', ...base, '--json');
      assert.equal(deleted.code, 0, JSON.stringify(deleted));
    });

    test('delete-namespace removes it; an unknown workspace or namespace is exit 1, bad input exit 2 with nothing written', async () => {
      const ns = (await cli<Namespaces>('ratelimits', 'namespaces', '--workspace', ws, '--json')).json.namespaces.find(
        (n) => n.name === 'push',
      )!;
      const r = await cli('ratelimits', 'delete-namespace', '--workspace', ws, '--namespace-id', ns.id, '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.equal(await store.db.selectFrom('ratelimit_namespaces').select('id').where('id', '=', ns.id).executeTakeFirst(), undefined);
      const unknownWs = await cli('ratelimits', 'namespaces', '--workspace', 'ws_nope', '--json');
      assert.deepEqual([unknownWs.code, unknownWs.json.error.kind], [1, 'data/workspace-not-found']);
      const unknownNs = await cli('ratelimits', 'overrides', '--workspace', ws, '--namespace', 'nope', '--json');
      assert.deepEqual([unknownNs.code, unknownNs.json.error.kind], [1, 'data/namespace-not-found']);
      const before = await store.db.selectFrom('ratelimit_overrides').select('id').execute();
      for (const argv of [
        ['--namespace', 'email', '--identifier', 'x', '--limit', '-1', '--duration', '60000'],
        ['--namespace', 'email', '--identifier', 'x', '--limit', '1', '--duration', '999'],
        ['--identifier', 'x', '--limit', '1', '--duration', '60000'],
        ['--namespace', 'email', '--identifier', 'x'.repeat(256), '--limit', '1', '--duration', '60000'],
        ['--namespace', 'email', '--identifier', 'x', '--limit', '1', '--duration', '60000', '--async', '--sync'],
      ]) {
        const bad = await cli('ratelimits', 'set-override', '--workspace', ws, ...argv, '--json');
        assert.equal(bad.code, 2, `${argv.join(' ')}: ${JSON.stringify(bad)}`);
      }
      assert.deepEqual(await store.db.selectFrom('ratelimit_overrides').select('id').execute(), before);
    });
  });
}
