import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator, sql } from 'kysely';
import { DIALECTS, scratchDatabase } from '../../helpers/harness.ts';
import { MIGRATIONS, openStore } from '../../../src/store/store.ts';
import * as initial from '../../../src/store/schema-migrations/0001-initial.ts';
import * as clamp from '../../../src/store/schema-migrations/0002-clamp-out-of-range-numbers.ts';
import * as namespaces from '../../../src/store/schema-migrations/0003-ratelimit-namespaces.ts';
import * as sessions from '../../../src/store/schema-migrations/0004-dashboard-sessions.ts';

// Migrations and keys of a database from before migration algorithms: the migrations become `sha256` ones
// (what they imported: Keyhold's own hashes) and no key awaits a rewrite.

for (const dialect of DIALECTS) {
  describe(`schema migration 0005: migration algorithms (${dialect})`, () => {
    test('existing migrations get algorithm sha256, existing keys no pending migration; down removes both columns', async () => {
      const { url, cleanup } = scratchDatabase(dialect);
      const store = openStore(url);
      try {
        const schema = dialect === 'postgres' ? new URL(url).searchParams.get('schema')! : undefined;
        if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(store.db);
        const earlier = { '0001-initial': initial, '0002-clamp-out-of-range-numbers': clamp, '0003-ratelimit-namespaces': namespaces };
        const migrator = new Migrator({
          db: store.db,
          provider: { getMigrations: async () => ({ ...earlier, '0004-dashboard-sessions': sessions }) },
          ...(schema ? { migrationTableSchema: schema } : {}),
        });
        assert.equal((await migrator.migrateToLatest()).error, undefined);
        const now = Date.now();
        await sql`insert into workspaces (id, name, created_at) values ('ws_old', 'old', ${now})`.execute(store.db);
        await sql`insert into apis (id, workspace_id, name, delete_protection, created_at, updated_at) values ('api_old', 'ws_old', 'old', 0, ${now}, ${now})`.execute(
          store.db,
        );
        await sql`insert into key_migrations (id, workspace_id, name, created_at, updated_at) values ('mig_old', 'ws_old', null, ${now}, ${now})`.execute(
          store.db,
        );
        await sql`insert into keys (id, workspace_id, api_id, hash, start, enabled, migration_id, created_at, updated_at) values ('key_old', 'ws_old', 'api_old', 'h', '', 1, 'mig_old', ${now}, ${now})`.execute(
          store.db,
        );

        // Later migrations follow it.
        assert.equal((await store.migrate())[0], '0005-migration-algorithms');
        // Named columns: on SQLite the first `select *` of a connection opened before another one's DDL lists the old columns.
        const mig = await store.db.selectFrom('key_migrations').select('algorithm').where('id', '=', 'mig_old').executeTakeFirstOrThrow();
        assert.equal(mig.algorithm, 'sha256');
        const key = await store.db
          .selectFrom('keys')
          .select(['pending_migration_id', 'migration_id'])
          .where('id', '=', 'key_old')
          .executeTakeFirstOrThrow();
        assert.deepEqual([key.pending_migration_id, key.migration_id], [null, 'mig_old']);

        // Down through every later migration (each one's down runs on both dialects).
        const down = new Migrator({
          db: store.db,
          provider: { getMigrations: async () => MIGRATIONS },
          ...(schema ? { migrationTableSchema: schema } : {}),
        });
        assert.equal((await down.migrateTo('0004-dashboard-sessions')).error, undefined);
        assert.equal((await sql`select id from key_migrations`.execute(store.db)).rows.length, 1);
        await assert.rejects(sql`select algorithm from key_migrations`.execute(store.db));
        await assert.rejects(sql`select pending_migration_id from keys`.execute(store.db));
        assert.equal((await store.db.selectFrom('keys').select('id').execute()).length, 1, 'the keys stay');
      } finally {
        await store.close();
        await cleanup();
      }
    });
  });
}
