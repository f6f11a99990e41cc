import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import { sql } from 'kysely';
import { repoUrl } from '../helpers/repo.ts';
import { DIALECTS, freshStore, scratchDatabase } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { serverEnv, ServerProcess } from '../helpers/server-process.ts';
import { freePort } from '../helpers/processes.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { checkSchemaNotNewer, SchemaTooNewError } from '../../src/store/schema-version.ts';

/**
 * A Keyhold older than its database's schema (the migration table lists a migration this code does not know,
 * as after a newer Keyhold migrated it) refuses it: the store's migrate(), the server's start (one line, exit 1)
 * and the CLI (exit 1), each naming both schema versions, and nothing is written.
 */

const FUTURE = '9001-from-a-newer-keyhold';

/** The migration table of the store's database (in its schema on PostgreSQL). */
const migrationTable = (store: Store, url: string) => {
  const schema = new URL(url.replace(/^sqlite:/, 'file:')).searchParams.get('schema');
  return sql.table(store.caps.dialect === 'postgres' && schema ? `${schema}.kysely_migration` : 'kysely_migration');
};

async function appliedMigrations(store: Store, url: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from ${migrationTable(store, url)} order by name`.execute(store.db);
  return rows.map((r) => r.name);
}

for (const dialect of DIALECTS) {
  describe(`${dialect}: a database migrated by a newer Keyhold`, () => {
    test('migrate(), the server and the CLI refuse it, naming both versions; nothing is written', async () => {
      const { store, url, close } = await freshStore(dialect);
      try {
        const known = await appliedMigrations(store, url);
        const codeVersion = known.at(-1)!;
        await sql`insert into ${migrationTable(store, url)} (name, timestamp) values (${FUTURE}, ${new Date().toISOString()})`.execute(
          store.db,
        );
        const expected = `the database's schema is at ${FUTURE}, newer than this Keyhold's ${codeVersion}: run the newer Keyhold, or restore a backup taken before the upgrade`;

        const other = openStore(url);
        try {
          await assert.rejects(other.migrate(), (err: Error) => err instanceof SchemaTooNewError && err.message === expected);
        } finally {
          await other.close();
        }

        const server = new ServerProcess(serverEnv({ DATABASE_URL: url, PORT: String(await freePort()), LOG_LEVEL: 'warn' }));
        const { code } = await server.exit(10_000);
        await Promise.all([server.proc.stdout!, server.proc.stderr!].map((s) => finished(s).catch(() => {})));
        assert.equal(code, 1, server.output);
        assert.equal(server.stderr, `keyhold cannot start: ${expected}\n`);
        assert.doesNotMatch(server.output, /^\s+at /m);

        const cli = await runCli({ DATABASE_URL: url }, ['db', 'migrate', '--json']);
        assert.equal(cli.code, 1);
        assert.deepEqual(cli.json, { error: { kind: 'store/schema-too-new', detail: expected } });

        assert.deepEqual(await appliedMigrations(store, url), [...known, FUTURE], 'no migration was applied or removed');
        assert.deepEqual(await store.db.selectFrom('workspaces').select('id').execute(), [], 'the server bootstrapped nothing');
      } finally {
        await close();
      }
    });

    test("the check passes a new database and one at the code's schema, and refuses one a migration ahead", async () => {
      const { url, cleanup } = scratchDatabase(dialect);
      const schema = new URL(url.replace(/^sqlite:/, 'file:')).searchParams.get('schema') ?? undefined;
      const store = openStore(url);
      try {
        if (schema) await sql`create schema ${sql.id(schema)}`.execute(store.db);
        await checkSchemaNotNewer(store.db, [], schema); // no migration table yet
        await store.migrate();
        const known = await appliedMigrations(store, url);
        await checkSchemaNotNewer(store.db, known, schema);
        await assert.rejects(
          checkSchemaNotNewer(store.db, known.slice(0, -1), schema),
          (err: Error) => err instanceof SchemaTooNewError && err.databaseVersion === known.at(-1) && err.codeVersion === known.at(-2),
        );
      } finally {
        await store.close();
        await cleanup();
      }
    });
  });
}

/**
 * What lets an older server keep running while a newer one migrates (docs/production.md, "Upgrades"): every migration's up()
 * only adds (tables, nullable or defaulted columns, indexes) or repairs data; none drops, renames or alters
 * what an older Keyhold reads or writes. A migration that must do so needs a release that stops using the old
 * form first, and the upgrade steps of docs/production.md changed with it.
 */
describe('schema migrations are additive', () => {
  const dir = repoUrl('src/store/schema-migrations/');
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

  test('no up() drops, renames or alters a table, column, index or constraint', () => {
    assert.ok(files.length >= 5);
    for (const file of files) {
      const text = readFileSync(new URL(file, dir), 'utf8');
      const up = text.slice(text.indexOf('export async function up'), text.indexOf('export async function down'));
      assert.ok(up.length > 30, `${file} has an up() before its down()`);
      assert.doesNotMatch(
        up,
        /\.(drop\w*|rename\w*|alterColumn|modifyColumn)\(|\b(drop|rename)\s+(table|column|index|constraint|to)\b|\balter\s+column\b/i,
        file,
      );
    }
  });
});
