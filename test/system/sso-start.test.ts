import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serverEnv, ServerProcess } from '../helpers/server-process.ts';
import { freePort } from '../helpers/processes.ts';

/**
 * The server process with single sign-on whose provider does not answer: it starts and serves, readiness says
 * the provider is down, the sign-in page offers SSO (a clear 503) and the client secret is in no output.
 */
test('a server whose OpenID provider is down starts, serves, and reports it in readiness', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keyhold-sso-start-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const [port, nowhere] = [await freePort(), await freePort()];
  const secret = 'sso-client-secret-never-printed';
  const server = new ServerProcess(
    serverEnv({
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(dir, 'keyhold.db')}`,
      KEYHOLD_WORKERS: '0',
      KEYHOLD_BOOTSTRAP_KEY_FILE: join(dir, 'bootstrap-root-key'),
      KEYHOLD_OIDC_ISSUER: `http://127.0.0.1:${nowhere}`,
      KEYHOLD_OIDC_CLIENT_ID: 'keyhold',
      KEYHOLD_OIDC_CLIENT_SECRET: secret,
    }),
  );
  t.after(() => server.proc.kill('SIGKILL'));
  await server.waitFor(/keyhold listening/);
  const ready = await server.get<{ checks: unknown }>('/v1/readiness');
  assert.equal(ready.status, 200);
  assert.deepEqual(ready.json.checks, { store: 'up', oidc: 'down' });
  assert.match((await server.get<string>('/dashboard/sign-in')).json, /Sign in with SSO/);
  assert.equal((await server.get('/dashboard/oidc/start')).status, 503, 'no redirect to a provider that is down');
  server.proc.kill('SIGTERM');
  await server.exit();
  assert.doesNotMatch(server.output, new RegExp(secret));
});
