import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer } from '../helpers/json.ts';
import { drain, hashOf, newPlain } from '../helpers/migrations.ts';

for (const dialect of DIALECTS) {
  describe(`keyhold migrations / worker CLI (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());
    /** Runs the CLI in-process on this store with --json; returns the exit code and the one JSON line. */
    const run = <T = CliAnswer>(...argv: string[]) => runCli<T>({ DATABASE_URL: w.url }, [...argv, '--json']);

    test('migrations create → {migrationId}, audited as the operator; migrations status → the getMigration object', async () => {
      const created = await run<{ migrationId: string }>('migrations', 'create', '--workspace', w.workspaceId, '--name', 'legacy import');
      assert.equal(created.code, 0, JSON.stringify(created.json));
      assert.deepEqual(Object.keys(created.json), ['migrationId']);
      assert.match(created.json.migrationId, /^mig_[1-9A-HJ-NP-Za-km-z]{22}$/);
      const { migrationId } = created.json;
      const row = await w.store.db.selectFrom('key_migrations').selectAll().where('id', '=', migrationId).executeTakeFirstOrThrow();
      assert.deepEqual([row.workspace_id, row.name], [w.workspaceId, 'legacy import']);
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', migrationId).execute();
      assert.deepEqual(
        audit.map((a) => [a.event, a.actor_type, a.workspace_id]),
        [['migration.create', 'operator', w.workspaceId]],
      );

      const apiId = await w.createApi('cli');
      const key = newPlain();
      assert.equal(
        (await w.post('/v1/migrations.enqueueKeys', { migrationId, apiId, keys: [{ hash: hashOf(key) }, { hash: hashOf(key) }] })).status,
        202,
      );
      await drain(w.store);
      const status = await run('migrations', 'status', '--id', migrationId);
      assert.equal(status.code, 0);
      assert.deepEqual(status.json, (await w.get('/v1/migrations.getMigration', { migrationId })).json);
      assert.equal(status.json.status, 'completed_with_failures');
    });

    test('migrations create --algorithm: stored on the migration (default sha256) and audited; an unknown one → 2, nothing created', async () => {
      const algorithmOf = async (migrationId: string) =>
        (await w.store.db.selectFrom('key_migrations').select('algorithm').where('id', '=', migrationId).executeTakeFirstOrThrow())
          .algorithm;
      const plain = await run<{ migrationId: string }>('migrations', 'create', '--workspace', w.workspaceId);
      assert.equal(await algorithmOf(plain.json.migrationId), 'sha256');
      for (const algorithm of ['sha256', 'sha256_hex', 'sha256_base64url', 'github.com/seamapi/prefixed-api-key']) {
        const created = await run<{ migrationId: string }>('migrations', 'create', '--workspace', w.workspaceId, '--algorithm', algorithm);
        assert.equal(created.code, 0, JSON.stringify(created.json));
        assert.deepEqual(Object.keys(created.json), ['migrationId']);
        assert.equal(await algorithmOf(created.json.migrationId), algorithm);
        const audit = await w.store.db
          .selectFrom('audit_logs')
          .select('diff')
          .where('target_id', '=', created.json.migrationId)
          .executeTakeFirstOrThrow();
        assert.equal(JSON.parse(audit.diff!).algorithm, algorithm);
      }
      const text = await runCli({ DATABASE_URL: w.url }, [
        'migrations',
        'create',
        '--workspace',
        w.workspaceId,
        '--algorithm',
        'sha256_hex',
      ]);
      assert.equal(text.code, 0);
      assert.match(text.out.join('\n'), /\(sha256_hex\) created/);
      const before = await w.store.db.selectFrom('key_migrations').select('id').execute();
      const bad = await run('migrations', 'create', '--workspace', w.workspaceId, '--algorithm', 'md5');
      assert.deepEqual([bad.code, bad.json.error.kind], [2, 'usage']);
      assert.match(String(bad.json.error.detail), /--algorithm must be one of sha256, sha256_hex/);
      assert.equal((await w.store.db.selectFrom('key_migrations').select('id').execute()).length, before.length);
    });

    test('errors: unknown workspace or migration → 1; missing options or a bad --concurrency → 2', async () => {
      const unknownWs = await run('migrations', 'create', '--workspace', 'ws_nope');
      assert.deepEqual([unknownWs.code, unknownWs.json.error.kind], [1, 'data/workspace-not-found']);
      const unknownMig = await run('migrations', 'status', '--id', 'mig_nope');
      assert.deepEqual([unknownMig.code, unknownMig.json.error.kind], [1, 'data/migration-not-found']);
      assert.equal((await run('migrations', 'create')).code, 2);
      assert.equal((await run('migrations', 'status')).code, 2);
      const bad = await run('worker', '--concurrency', '0');
      assert.deepEqual([bad.code, bad.json.error.kind], [2, 'usage']);
      assert.equal((await run('worker', '--visibility-timeout', 'soon')).code, 2);
    });
  });
}
