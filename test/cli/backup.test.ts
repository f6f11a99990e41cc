import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { openStore } from '../../src/store/store.ts';
import { BackupRefused, backupDatabase } from '../../src/services/backup/backup-database.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';

const run = promisify(execFile);
const PG_URL = process.env.KEYHOLD_TEST_POSTGRES_URL;
const MASTER_KEYS = `backup:${randomBytes(32).toString('base64')}`;
const CREDITS = 1_000_000;

interface Made {
  keyId: string;
  key: string;
  recoverable: boolean;
}

/** Creates `n` keys with credits on the server, every third recoverable. */
async function makeKeys(server: ServerProcess, root: string, apiId: string, n: number, into: Made[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const recoverable = i % 3 === 0;
    const r = await server.post<{ keyId: string; key: string }>('/v1/keys.createKey', { apiId, remaining: CREDITS, recoverable }, root);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    into.push({ ...r.json, recoverable });
  }
}

/** Every key verifies VALID on `server`, and each recoverable one decrypts to its plaintext (so the master keys apply). */
async function assertServes(server: ServerProcess, root: string, keys: Made[]): Promise<void> {
  for (const k of keys) {
    const v = await server.post<{ valid: boolean; code: string }>('/v1/keys.verifyKey', { key: k.key });
    assert.equal(v.status, 200, JSON.stringify(v.json));
    assert.equal(v.json.code, 'VALID', `${k.keyId}: ${JSON.stringify(v.json)}`);
    if (k.recoverable) {
      const got = await server.get<{ plaintext?: string }>('/v1/keys.getKey', { keyId: k.keyId, decrypt: 'true' }, root);
      assert.equal(got.status, 200, JSON.stringify(got.json));
      assert.equal(got.json.plaintext, k.key);
    }
  }
}

/** The credits left of every key, from the database. */
async function creditsOf(url: string): Promise<Map<string, number>> {
  const store = openStore(url);
  try {
    const rows = await store.db.selectFrom('keys').select(['id', 'remaining']).execute();
    return new Map(rows.map((r) => [r.id, Number(r.remaining)]));
  } finally {
    await store.close();
  }
}

describe('keyhold backup (sqlite)', () => {
  let db: Awaited<ReturnType<typeof freshStore>>;
  const servers: ServerProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-backup-'));
  before(async () => {
    db = await freshStore('sqlite');
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a copy taken while the server creates keys and spends credits: integrity ok, every earlier key verifies on a new server, credits between the backup’s start and end', {
    timeout: 120_000,
  }, async () => {
    const root = newRootKey();
    const server = await ServerProcess.start(db.url, root, { KEYHOLD_MASTER_KEYS: MASTER_KEYS });
    servers.push(server);
    const api = await server.post<{ apiId: string }>('/v1/apis.createApi', { name: 'backup' }, root);
    const keys: Made[] = [];
    await makeKeys(server, root, api.json.apiId, 30, keys);

    // Load: one loop creates keys, four spend credits on random keys, until the backup has ended.
    let stop = false;
    let requests = 0;
    const loops = [
      (async () => {
        while (!stop) {
          await makeKeys(server, root, api.json.apiId, 1, keys);
          requests++;
        }
      })(),
      ...Array.from({ length: 4 }, async () => {
        while (!stop) {
          const k = keys[Math.floor(Math.random() * keys.length)];
          const v = await server.post<{ code: string }>('/v1/keys.verifyKey', { key: k.key });
          assert.equal(v.json.code, 'VALID');
          requests++;
        }
      }),
    ];
    while (requests < 200) await new Promise((r) => setTimeout(r, 20));

    const before = [...keys];
    const atStart = await creditsOf(db.url);
    const target = join(dir, 'copy.db');
    const backup = await runCli<{ path: string; bytes: number; ms: number }>({ DATABASE_URL: db.url }, [
      'backup',
      '--to',
      target,
      '--json',
    ]);
    const atEnd = await creditsOf(db.url);
    const during = requests;
    while (requests < during + 100) await new Promise((r) => setTimeout(r, 20)); // the server kept writing
    stop = true;
    await Promise.all(loops);

    assert.equal(backup.code, 0, JSON.stringify(backup));
    assert.deepEqual(Object.keys(backup.json), ['path', 'bytes', 'ms']);
    assert.equal(backup.json.path, target);
    assert.equal(backup.json.bytes, readFileSync(target).length);
    assert.ok(atEnd.size > 0 && [...atStart.keys()].every((id) => atEnd.has(id)));

    const copy = openStore(`sqlite:${target}`);
    try {
      const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(copy.db);
      assert.deepEqual(
        check.rows.map((r) => r.integrity_check),
        ['ok'],
      );
      const inCopy = new Map(
        (await copy.db.selectFrom('keys').select(['id', 'remaining']).execute()).map((r) => [r.id, Number(r.remaining)]),
      );
      for (const [id, start] of atStart) {
        assert.ok(inCopy.has(id), `${id} existed before the backup`);
        const c = inCopy.get(id)!;
        assert.ok(c <= start && c >= atEnd.get(id)!, `${id}: ${atEnd.get(id)} ≤ ${c} ≤ ${start}`);
      }
    } finally {
      await copy.close();
    }

    const restored = await ServerProcess.start(`sqlite:${target}`, root, { KEYHOLD_MASTER_KEYS: MASTER_KEYS });
    servers.push(restored);
    await assertServes(restored, root, before);
  });

  test('an existing PATH is refused with exit 2 and one line; the file is left as it was', async () => {
    const target = join(dir, 'taken.db');
    writeFileSync(target, 'keep me');
    const r = await runCli({ DATABASE_URL: db.url }, ['backup', '--to', target]);
    assert.equal(r.code, 2);
    assert.deepEqual(r.out, []);
    assert.equal(r.err.length, 1);
    assert.match(r.err[0], /already exists/);
    assert.equal(readFileSync(target, 'utf8'), 'keep me');
    const missingDir = await runCli({ DATABASE_URL: db.url }, ['backup', '--to', join(dir, 'nope', 'copy.db'), '--json']);
    assert.equal(missingDir.code, 2);
    assert.match(String(missingDir.json.error?.detail), /directory does not exist/);
  });

  test('--pace: 0 copies in one burst, N at most N MB a second; either copy is intact', async () => {
    for (const pace of ['0', '1']) {
      const target = join(dir, `paced-${pace}.db`);
      const r = await runCli<{ path: string; bytes: number; ms: number }>({ DATABASE_URL: db.url }, [
        'backup',
        '--to',
        target,
        '--pace',
        pace,
        '--json',
      ]);
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.equal(r.json.bytes, readFileSync(target).length);
      if (pace === '1') {
        // At 1 MB a second, all but the last step (256 KB) waited for.
        const floorMs = ((r.json.bytes - 256 * 1024) / (1024 * 1024)) * 1000;
        assert.ok(r.json.ms >= floorMs * 0.95, `${r.json.ms} ms for ${r.json.bytes} bytes at 1 MB/s`);
      }
      const copy = openStore(`sqlite:${target}`);
      try {
        const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(copy.db);
        assert.deepEqual(
          check.rows.map((row) => row.integrity_check),
          ['ok'],
        );
      } finally {
        await copy.close();
      }
    }
  });

  test('--pace out of bounds or not a whole number: exit 2 naming the bounds, nothing written', async () => {
    for (const pace of ['-1', 'fast', '1.5', '1e3', '100001', '']) {
      const target = join(dir, `bad-pace.db`);
      const r = await runCli({ DATABASE_URL: db.url }, ['backup', '--to', target, `--pace=${pace}`, '--json']);
      assert.equal(r.code, 2, `--pace ${pace}: ${JSON.stringify(r)}`);
      assert.match(String(r.json.error?.detail), /--pace must be an integer 0\.\.100000/);
      assert.equal(existsSync(target), false);
    }
  });

  test('backupDatabase refuses a pace out of bounds before it creates the file', async () => {
    for (const pace of [-1, 1.5, 100_001, Number.NaN]) {
      const target = join(dir, 'service-bad-pace.db');
      await assert.rejects(backupDatabase(db.store, target, pace), (e) => e instanceof BackupRefused && /0\.\.100000/.test(e.message));
      assert.equal(existsSync(target), false);
    }
  });

  test('a successful backup warns on stderr that the master keys are not in the copy', async () => {
    const warnings: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((s: string) => warnings.push(String(s)) > 0) as typeof process.stderr.write;
    let r: Awaited<ReturnType<typeof runCli>>;
    try {
      r = await runCli({ DATABASE_URL: db.url }, ['backup', '--to', join(dir, 'warned.db')]);
    } finally {
      process.stderr.write = write;
    }
    assert.equal(r.code, 0, JSON.stringify(r));
    assert.match(r.out[0], /warned\.db .* bytes\) +in \d+ ms/);
    assert.match(warnings.join(''), /KEYHOLD_MASTER_KEYS .*master\.key/);
  });
});

describe('keyhold backup (postgres)', { skip: PG_URL ? false : 'KEYHOLD_TEST_POSTGRES_URL is not set' }, () => {
  let db: Awaited<ReturnType<typeof freshStore>>;
  const servers: ServerProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-pgdump-'));
  const restoredDb = `kh_restore_${randomBytes(6).toString('hex')}`;
  const admin = () => {
    const url = new URL(PG_URL!);
    url.searchParams.delete('schema');
    return url;
  };
  before(async () => {
    db = await freshStore('postgres');
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await db.close();
    const client = new pg.Client({ connectionString: admin().toString() });
    await client.connect();
    await client.query(`drop database if exists ${restoredDb} with (force)`);
    await client.end();
    rmSync(dir, { recursive: true, force: true });
  });

  test('keyhold backup refuses with exit 2, naming pg_dump; nothing is written', async () => {
    const target = join(dir, 'never.db');
    const r = await runCli({ DATABASE_URL: db.url }, ['backup', '--to', target]);
    assert.equal(r.code, 2);
    assert.equal(r.err.length, 1);
    assert.match(r.err[0], /pg_dump -Fc -n <schema>/);
    assert.equal(existsSync(target), false);
  });

  test('pg_dump of the schema, pg_restore into a new database: a server there serves the same keys', { timeout: 120_000 }, async () => {
    const root = newRootKey();
    const server = await ServerProcess.start(db.url, root, { KEYHOLD_MASTER_KEYS: MASTER_KEYS });
    servers.push(server);
    const api = await server.post<{ apiId: string }>('/v1/apis.createApi', { name: 'pgdump' }, root);
    const keys: Made[] = [];
    await makeKeys(server, root, api.json.apiId, 12, keys);
    for (const k of keys.slice(0, 4)) await server.post('/v1/keys.verifyKey', { key: k.key, remaining: { cost: 7 } });
    await server.stop();
    const credits = await creditsOf(db.url);

    const schema = new URL(db.url).searchParams.get('schema')!;
    const dump = join(dir, 'keyhold.dump');
    await run('pg_dump', ['-Fc', '-n', schema, '-f', dump, admin().toString()]);
    const client = new pg.Client({ connectionString: admin().toString() });
    await client.connect();
    await client.query(`create database ${restoredDb}`);
    await client.end();
    const target = admin();
    target.pathname = `/${restoredDb}`;
    await run('pg_restore', ['--no-owner', '-d', target.toString(), dump]);

    target.searchParams.set('schema', schema);
    assert.deepEqual(await creditsOf(target.toString()), credits);
    const restored = await ServerProcess.start(target.toString(), root, { KEYHOLD_MASTER_KEYS: MASTER_KEYS });
    servers.push(restored);
    await assertServes(restored, root, keys);
  });
});
