import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, scratchDatabase } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import { freePort } from '../helpers/processes.ts';
import { serverEnv, ServerProcess } from '../helpers/server-process.ts';

type Link = { url: string; expiresAt: number };

/**
 * `keyhold dashboard link` run as a new user would: the server started with PORT (and KEYHOLD_PUBLIC_URL) in its
 * own environment only; the CLI, with none of them, prints a link to that server, which signs in.
 */
for (const dialect of DIALECTS) {
  describe(`keyhold dashboard link points at the running server (${dialect})`, () => {
    const start = async (t: { after(f: () => unknown): void }, databaseUrl: string, extra: Record<string, string> = {}) => {
      const port = await freePort();
      const vars = { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', DATABASE_URL: databaseUrl, KEYHOLD_WORKERS: '0' };
      const server = new ServerProcess(
        serverEnv({ ...vars, KEYHOLD_BOOTSTRAP_ROOT_KEY: 'kh_root_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', ...extra }),
      );
      t.after(() => server.proc.kill('SIGKILL'));
      await server.waitFor(/keyhold listening/, 60_000);
      return { server, port };
    };
    const link = (databaseUrl: string) =>
      runCli<Link>({ DATABASE_URL: databaseUrl, KEYHOLD_PUBLIC_URL: undefined, HOST: undefined, PORT: undefined }, [
        'dashboard',
        'link',
        '--operator',
        '--json',
      ]);

    it('with PORT set for the server only, the link is on its port and signs in', async (t) => {
      const db = scratchDatabase(dialect);
      t.after(() => db.cleanup());
      const { server, port } = await start(t, db.url);
      const r = await link(db.url);
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.match(r.json.url, new RegExp(`^http://127\\.0\\.0\\.1:${port}/dashboard/sign-in\\?token=`));
      const signIn = await fetch(r.json.url, { redirect: 'manual' });
      assert.ok(signIn.status < 400, String(signIn.status));
      assert.match(signIn.headers.get('set-cookie') ?? '', /keyhold_session=/);
      server.proc.kill('SIGTERM');
      await server.exit();
    });

    it("the server's KEYHOLD_PUBLIC_URL is what it records", async (t) => {
      const db = scratchDatabase(dialect);
      t.after(() => db.cleanup());
      const { server } = await start(t, db.url, { KEYHOLD_PUBLIC_URL: 'https://keys.example.com' });
      const r = await link(db.url);
      assert.match(r.json.url, /^https:\/\/keys\.example\.com\/dashboard\/sign-in\?token=/);
      server.proc.kill('SIGTERM');
      await server.exit();
    });
  });
}
