import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DIALECTS, freshStore, scratchDatabase } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer, Loose } from '../helpers/json.ts';
import { count } from '../helpers/rows.ts';
import { REPO_ROOT } from '../helpers/repo.ts';
import { TcpProxy, viaPort } from '../helpers/outages.ts';
import { buildApp } from '../../src/app.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import type { App } from '../../src/http/types.ts';

/** Runs the CLI in-process against the database at `url`. */
const cli = <T = CliAnswer>(url: string, ...argv: string[]) => runCli<T>({ DATABASE_URL: url }, argv);
/** What `workspaces create --json` prints. */
type WorkspaceLine = { workspaceId: string };
/** What `root-keys create --json` and `root-keys revoke --json` print. */
type RootKeyLine = Loose<{ rootKeyId: string; rootKey: string; revokedAt: number }>;
/** What `root-keys list --json` prints. */
type RootKeyList = Loose<{ rootKeys: Array<Loose<{ rootKeyId: string; revokedAt: number | null }>> }>;
/** What `audit list --json` prints. */
type AuditList = Loose<{ logs: Array<Loose<{ event: string; target: { id: string } }>> }>;

for (const dialect of DIALECTS) {
  describe(`keyhold CLI (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    let app: App;
    let workspaceId: string;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
      app = await buildApp({ store });
      const r = await cli<WorkspaceLine>(url, 'workspaces', 'create', '--name', 'cli-tests', '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      workspaceId = r.json.workspaceId;
    });
    after(async () => {
      await app.close();
      await close();
    });

    const createApi = (key: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/apis.createApi',
        payload: { name: 'from-cli-key' },
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });

    test('workspaces create --json → {workspaceId}, stored', async () => {
      const r = await cli<WorkspaceLine>(url, 'workspaces', 'create', '--name', 'acme', '--json');
      assert.equal(r.code, 0);
      assert.deepEqual(Object.keys(r.json), ['workspaceId']);
      assert.match(r.json.workspaceId, /^ws_[1-9A-HJ-NP-Za-km-z]+$/);
      const row = await store.db.selectFrom('workspaces').selectAll().where('id', '=', r.json.workspaceId).executeTakeFirstOrThrow();
      assert.equal(row.name, 'acme');
      assert.deepEqual(r.err, []);
    });

    test('without --json the result is a line of text; --json may come first', async () => {
      const text = await cli(url, 'workspaces', 'create', '--name', 'texty');
      assert.equal(text.code, 0);
      assert.match(text.out.join('\n'), /^workspace ws_\S+ created$/);
      const first = await cli<WorkspaceLine>(url, '--json', 'workspaces', 'create', '--name', 'json-first');
      assert.equal(first.code, 0, JSON.stringify(first));
      assert.match(first.json.workspaceId, /^ws_/);
    });

    test('root-keys create with several --permission → {rootKeyId, rootKey}; the key authenticates with exactly those permissions', async () => {
      const r = await cli<RootKeyLine>(
        url,
        'root-keys',
        'create',
        '--workspace',
        workspaceId,
        '--permission',
        'api.*.create_api',
        '--permission',
        'api.*.read_api',
        '--name',
        'deploy',
        '--json',
      );
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(Object.keys(r.json).sort(), ['rootKey', 'rootKeyId']);
      assert.match(r.json.rootKeyId, /^rk_/);
      assert.match(r.json.rootKey, /^kh_root_[1-9A-HJ-NP-Za-km-z]{22,64}$/);

      const created = await createApi(r.json.rootKey);
      assert.equal(created.statusCode, 200, created.body);
      const got = await app.inject({
        method: 'GET',
        url: `/v1/apis.getApi?apiId=${created.json().apiId}`,
        headers: { authorization: `Bearer ${r.json.rootKey}` },
      });
      assert.equal(got.statusCode, 200, got.body);
      assert.equal(got.json().workspaceId, workspaceId);
      const denied = await app.inject({
        method: 'POST',
        url: '/v1/keys.createKey',
        payload: { apiId: created.json().apiId },
        headers: { authorization: `Bearer ${r.json.rootKey}`, 'content-type': 'application/json' },
      });
      assert.equal(denied.statusCode, 403, denied.body);

      const row = await store.db.selectFrom('root_keys').selectAll().where('id', '=', r.json.rootKeyId).executeTakeFirstOrThrow();
      assert.equal(row.workspace_id, workspaceId);
      assert.equal(row.name, 'deploy');
      assert.deepEqual(JSON.parse(row.permissions), ['api.*.create_api', 'api.*.read_api']);
      assert.ok(!JSON.stringify(row).includes(r.json.rootKey), 'the plaintext root key is stored');
    });

    test('root-keys create --expires-at sets the expiry', async () => {
      const expiresAt = Date.now() + 3_600_000;
      const r = await cli<RootKeyLine>(
        url,
        'root-keys',
        'create',
        '--workspace',
        workspaceId,
        '--permission',
        '*',
        '--expires-at',
        String(expiresAt),
        '--json',
      );
      assert.equal(r.code, 0, JSON.stringify(r));
      const row = await store.db.selectFrom('root_keys').select('expires_at').where('id', '=', r.json.rootKeyId).executeTakeFirstOrThrow();
      assert.equal(Number(row.expires_at), expiresAt);
      const bad = await cli(
        url,
        'root-keys',
        'create',
        '--workspace',
        workspaceId,
        '--permission',
        '*',
        '--expires-at',
        'tomorrow',
        '--json',
      );
      assert.equal(bad.code, 2);
      assert.equal(bad.json.error.kind, 'usage');
    });

    test('an invalid permission → exit 2 with a JSON error naming it; nothing is created', async () => {
      const before = await count(store.db, 'root_keys');
      const r = await cli(
        url,
        'root-keys',
        'create',
        '--workspace',
        workspaceId,
        '--permission',
        'api.*.read_api',
        '--permission',
        'api.*.fly',
        '--permission',
        'billing.*.read',
        '--json',
      );
      assert.equal(r.code, 2, JSON.stringify(r));
      assert.equal(r.json.error.kind, 'request/invalid-body');
      assert.match(r.json.error.detail, /api\.\*\.fly/);
      assert.deepEqual(
        r.json.error.errors.map((e: { path: string }) => e.path),
        ['/permissions/1', '/permissions/2'],
      );
      assert.equal(await count(store.db, 'root_keys'), before);
    });

    test('an unknown workspace → exit 1, data/workspace-not-found; nothing is created', async () => {
      const before = await count(store.db, 'root_keys');
      const r = await cli(url, 'root-keys', 'create', '--workspace', 'ws_doesNotExist', '--permission', '*', '--json');
      assert.equal(r.code, 1, JSON.stringify(r));
      assert.equal(r.json.error.kind, 'data/workspace-not-found');
      assert.equal(await count(store.db, 'root_keys'), before);
    });

    /** The first answer of `createApi(key)` with status `status` within 1 s (a CLI change reaches the server pushed or polled), then asserted to stay. */
    const refusedWithinOneSecond = async (key: string, status: number) => {
      const until = Date.now() + 1000;
      let res = await createApi(key);
      while (res.statusCode !== status && Date.now() < until) res = await createApi(key);
      assert.equal(res.statusCode, status, res.body);
      assert.equal((await createApi(key)).statusCode, status, 'never accepted again');
      return res;
    };

    test('root-keys revoke → the key (cached by the server) gets 401 auth/revoked within 1 s; revoking again is harmless', async () => {
      const created = await cli<RootKeyLine>(url, 'root-keys', 'create', '--workspace', workspaceId, '--permission', '*', '--json');
      assert.equal((await createApi(created.json.rootKey)).statusCode, 200);

      const r = await cli<RootKeyLine>(url, 'root-keys', 'revoke', '--id', created.json.rootKeyId, '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.equal(r.json.rootKeyId, created.json.rootKeyId);
      assert.ok(Number.isSafeInteger(r.json.revokedAt) && r.json.revokedAt <= Date.now());

      const refused = await refusedWithinOneSecond(created.json.rootKey, 401);
      assert.equal(refused.json().error.type, 'https://keyhold.dev/errors/auth/revoked');

      const again = await cli<RootKeyLine>(url, 'root-keys', 'revoke', '--id', created.json.rootKeyId, '--json');
      assert.equal(again.code, 0);
      assert.equal(again.json.revokedAt, r.json.revokedAt);
      const unknown = await cli(url, 'root-keys', 'revoke', '--id', 'rk_doesNotExist', '--json');
      assert.equal(unknown.code, 1);
      assert.equal(unknown.json.error.kind, 'data/root-key-not-found');
    });

    test('root-keys set-permissions → the key (cached by the server) is narrowed within 1 s; audited; bad input writes nothing', async () => {
      const created = await cli<RootKeyLine>(url, 'root-keys', 'create', '--workspace', workspaceId, '--permission', '*', '--json');
      assert.equal((await createApi(created.json.rootKey)).statusCode, 200);
      const r = await cli(url, 'root-keys', 'set-permissions', '--id', created.json.rootKeyId, '--permission', 'api.*.read_api', '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(r.json.permissions, ['api.*.read_api']);
      const refused = await refusedWithinOneSecond(created.json.rootKey, 403);
      assert.equal(refused.json().error.type, 'https://keyhold.dev/errors/auth/insufficient-permissions');
      const audit = await store.db.selectFrom('audit_logs').select('event').where('target_id', '=', created.json.rootKeyId).execute();
      assert.ok(audit.some((a) => a.event === 'root_key.update'));
      const bad = await cli(url, 'root-keys', 'set-permissions', '--id', created.json.rootKeyId, '--permission', 'api.*.fly', '--json');
      assert.equal(bad.code, 2, JSON.stringify(bad));
      const row = await store.db
        .selectFrom('root_keys')
        .select('permissions')
        .where('id', '=', created.json.rootKeyId)
        .executeTakeFirstOrThrow();
      assert.equal(row.permissions, '["api.*.read_api"]');
    });

    test('root-keys list shows every root key of the workspace, never its plaintext', async () => {
      const a = await cli<RootKeyLine>(
        url,
        'root-keys',
        'create',
        '--workspace',
        workspaceId,
        '--permission',
        'rbac.*.read_role',
        '--name',
        'listed',
        '--json',
      );
      const b = await cli<RootKeyLine>(url, 'root-keys', 'create', '--workspace', workspaceId, '--permission', '*', '--json');
      await cli(url, 'root-keys', 'revoke', '--id', b.json.rootKeyId, '--json');

      const r = await cli<RootKeyList>(url, 'root-keys', 'list', '--workspace', workspaceId, '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      const byId = new Map(r.json.rootKeys.map((k) => [k.rootKeyId, k] as const));
      assert.equal(
        byId.size,
        await store.db
          .selectFrom('root_keys')
          .select('id')
          .where('workspace_id', '=', workspaceId)
          .execute()
          .then((rows) => rows.length),
      );
      const listed = byId.get(a.json.rootKeyId) as Record<string, unknown>;
      assert.equal(listed.name, 'listed');
      assert.deepEqual(listed.permissions, ['rbac.*.read_role']);
      assert.equal(listed.revokedAt, null);
      assert.match(String(listed.start), /^kh_root_/);
      assert.ok(Number.isSafeInteger((byId.get(b.json.rootKeyId) as { revokedAt: number }).revokedAt));
      assert.ok(!r.out[0].includes(a.json.rootKey) && !r.out[0].includes(b.json.rootKey), 'list shows a plaintext root key');

      const text = await cli(url, 'root-keys', 'list', '--workspace', workspaceId);
      assert.equal(text.code, 0);
      assert.match(text.out.join('\n'), new RegExp(`${b.json.rootKeyId}.*revoked`));

      const other = await cli<WorkspaceLine>(url, 'workspaces', 'create', '--name', 'empty', '--json');
      assert.deepEqual((await cli(url, 'root-keys', 'list', '--workspace', other.json.workspaceId, '--json')).json, { rootKeys: [] });
      const unknown = await cli(url, 'root-keys', 'list', '--workspace', 'ws_doesNotExist', '--json');
      assert.equal(unknown.code, 1);
      assert.equal(unknown.json.error.kind, 'data/workspace-not-found');
    });

    test("audit list shows the workspace's changes newest first, filtered, never a secret", async () => {
      const created = await cli<WorkspaceLine>(url, 'workspaces', 'create', '--name', 'audited', '--json');
      const ws = created.json.workspaceId;
      const rk = await cli<RootKeyLine>(url, 'root-keys', 'create', '--workspace', ws, '--permission', '*', '--json');
      const all = await cli<AuditList>(url, 'audit', 'list', '--workspace', ws, '--json');
      assert.equal(all.code, 0, JSON.stringify(all));
      assert.deepEqual(
        all.json.logs.map((l: { event: string }) => l.event),
        ['root_key.create', 'workspace.create'],
      );
      assert.deepEqual(all.json.logs[0].target, { type: 'root_key', id: rk.json.rootKeyId });
      assert.equal(all.json.logs[0].actor.type, 'operator');
      assert.equal(JSON.stringify(all.json).includes(rk.json.rootKey), false);
      const filtered = await cli<AuditList>(url, 'audit', 'list', '--workspace', ws, '--event', 'workspace.create', '--json');
      assert.deepEqual(
        filtered.json.logs.map((l: { target: { id: string } }) => l.target.id),
        [ws],
      );
      const later = await cli(url, 'audit', 'list', '--workspace', ws, '--since', String(Date.now() + 60_000), '--json');
      assert.deepEqual(later.json.logs, []);
      const text = await cli(url, 'audit', 'list', '--workspace', ws, '--limit', '1');
      assert.equal(text.out.length, 1);
      assert.match(text.out[0], /root_key\.create/);
      assert.equal((await cli(url, 'audit', 'list', '--workspace', 'ws_unknown', '--json')).code, 1);
      assert.equal((await cli(url, 'audit', 'list', '--workspace', ws, '--since', 'soon', '--json')).code, 2);
    });

    test('db migrate --json → {applied}: the migrations it ran, none on an up-to-date store', async () => {
      const r = await cli(url, 'db', 'migrate', '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(r.json, { applied: [] });

      // A brand-new database gets the whole schema.
      const { url: target, cleanup } = scratchDatabase(dialect);
      try {
        const first = await cli<{ applied: string[] }>(target, 'db', 'migrate', '--json');
        assert.equal(first.code, 0, JSON.stringify(first));
        assert.ok(first.json.applied.length > 0);
        assert.ok(first.json.applied.includes('0001-initial'));
        const fresh = openStore(target);
        try {
          assert.equal(await count(fresh.db, 'workspaces'), 0);
        } finally {
          await fresh.close();
        }
        assert.deepEqual((await cli(target, 'db', 'migrate', '--json')).json, { applied: [] });
        assert.equal((await cli(target, 'db', 'migrate')).out.join('\n'), 'schema is up to date');
      } finally {
        await cleanup();
      }
    });

    test('usage errors exit 2 and touch nothing: unknown command, unknown option, missing --workspace/--permission/--name/--id', async () => {
      const workspaces = await count(store.db, 'workspaces');
      const rootKeys = await count(store.db, 'root_keys');
      const cases = [
        ['frobnicate', 'everything'],
        ['workspaces', 'delete', '--name', 'x'],
        ['root-keys'],
        ['workspaces', 'create', '--name', 'x', '--colour', 'red'],
        ['workspaces', 'create', '--name', 'x', 'extra'],
        ['workspaces', 'create'],
        ['workspaces', 'create', '--name', ''],
        ['root-keys', 'create', '--permission', '*'],
        ['root-keys', 'create', '--workspace', workspaceId],
        ['root-keys', 'revoke'],
        ['root-keys', 'list'],
      ];
      for (const argv of cases) {
        const r = await cli(url, ...argv, '--json');
        assert.equal(r.code, 2, `${argv.join(' ')} → ${JSON.stringify(r)}`);
        assert.equal(r.json.error.kind, 'usage');
        const text = await cli(url, ...argv);
        assert.equal(text.code, 2);
        assert.deepEqual(text.out, []);
        assert.match(text.err.join('\n'), /^keyhold: /);
      }
      const missing = await cli(url, 'root-keys', 'create', '--permission', '*', '--json');
      assert.match(missing.json.error.detail, /--workspace is required/);
      const unknown = await cli(url, 'frobnicate', 'everything', '--json');
      assert.match(unknown.json.error.detail, /unknown command "frobnicate everything"/);
      assert.equal(await count(store.db, 'workspaces'), workspaces);
      assert.equal(await count(store.db, 'root_keys'), rootKeys);
    });

    test('--help and no arguments print the usage, naming every command', async () => {
      for (const argv of [['--help'], []]) {
        const r = await cli(url, ...argv);
        assert.equal(r.code, 0);
        for (const command of ['workspaces create', 'root-keys create', 'root-keys revoke', 'root-keys list', 'db migrate']) {
          assert.ok(r.out.join('\n').includes(`keyhold ${command}`), `usage lacks ${command}`);
        }
      }
    });

    test('an invalid DATABASE_URL → exit 2 with a clear message', async () => {
      const r = await cli('mysql://localhost/keyhold', 'workspaces', 'create', '--name', 'x', '--json');
      assert.equal(r.code, 2);
      assert.match(r.json.error.detail, /DATABASE_URL must be sqlite:<path> or postgres:\/\//);
    });
  });
}

describe('bin/keyhold.js as a process', () => {
  const root = REPO_ROOT;
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-bin-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('workspaces create --name x --json prints exactly one JSON object and nothing else', async () => {
    const { stdout, stderr } = await promisify(execFile)(
      join(root, 'node_modules/.bin/node'),
      ['bin/keyhold.js', 'workspaces', 'create', '--name', 'x', '--json'],
      {
        cwd: root,
        env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'keyhold.db')}` },
      },
    );
    assert.match(stdout, /^\{[^\n]*\}\n$/);
    const parsed = JSON.parse(stdout);
    assert.deepEqual(Object.keys(parsed), ['workspaceId']);
    assert.match(parsed.workspaceId, /^ws_/);
    assert.equal(stderr, '');
  });

  test('a usage error sets exit code 2', async () => {
    const child = promisify(execFile)(join(root, 'node_modules/.bin/node'), ['bin/keyhold.js', 'workspaces', 'create', '--json'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'keyhold.db')}` },
    });
    await assert.rejects(child, (e: { code: number; stdout: string }) => {
      assert.equal(e.code, 2);
      assert.equal(JSON.parse(e.stdout).error.kind, 'usage');
      return true;
    });
  });
});

describe('the CLI on a busy PostgreSQL', { skip: !DIALECTS.includes('postgres') && 'KEYHOLD_TEST_POSTGRES_URL is not set' }, () => {
  test('a connection that takes 3 s to be answered is waited for (the server would give up after 2 s)', async () => {
    const { url, close } = await freshStore('postgres');
    const upstream = new URL(url);
    const slow = await TcpProxy.start(upstream.hostname, Number(upstream.port || 5432));
    slow.slow(3_000);
    try {
      const started = Date.now();
      const r = await cli<WorkspaceLine>(viaPort(url, slow.port), 'workspaces', 'create', '--name', 'x', '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.match(r.json.workspaceId, /^ws_/);
      assert.ok(Date.now() - started >= 3_000, 'the connection was held');
    } finally {
      await slow.close();
      await close();
    }
  });
});
