import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore, OPERATOR } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { Store } from '../../src/store/store.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';
import { findSession, redeemSignInLink, SIGN_IN_LINK_TTL_MS } from '../../src/services/dashboard/sessions.ts';
import { listenBaseUrl, recordServerAddress } from '../../src/services/dashboard/server-address.ts';

type Link = { url: string; expiresAt: number };

for (const dialect of DIALECTS) {
  describe(`keyhold dashboard link (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    let workspaceId: string;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
      ({ workspaceId } = await createWorkspace(store.db, 'dash', OPERATOR));
    });
    after(() => close());
    const env = (extra: Record<string, string | undefined> = {}) => ({
      DATABASE_URL: url,
      KEYHOLD_PUBLIC_URL: undefined,
      HOST: undefined,
      PORT: undefined,
      ...extra,
    });

    test('--workspace W --json prints a one-time URL on KEYHOLD_PUBLIC_URL, valid for 10 minutes, that opens a session of W', async () => {
      const before = Date.now();
      const r = await runCli<Link>(env({ KEYHOLD_PUBLIC_URL: 'https://keys.example.com/' }), [
        'dashboard',
        'link',
        '--workspace',
        workspaceId,
        '--json',
      ]);
      assert.equal(r.code, 0, JSON.stringify(r));
      const link = new URL(r.json.url);
      assert.equal(`${link.origin}${link.pathname}`, 'https://keys.example.com/dashboard/sign-in');
      assert.ok(r.json.expiresAt >= before + SIGN_IN_LINK_TTL_MS && r.json.expiresAt <= Date.now() + SIGN_IN_LINK_TTL_MS);
      const { token, session } = await redeemSignInLink(store.db, link.searchParams.get('token')!);
      assert.equal(session.workspaceId, workspaceId);
      assert.equal(session.operator, false);
      assert.ok(await findSession(store.db, token));
      await assert.rejects(redeemSignInLink(store.db, link.searchParams.get('token')!), /already used or expired/);
    });

    test('the default base is http://HOST:PORT; --operator signs in the operator; text output names the expiry', async () => {
      const r = await runCli<Link>(env({ HOST: '0.0.0.0', PORT: '9000' }), ['dashboard', 'link', '--operator', '--json']);
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.match(r.json.url, /^http:\/\/0\.0\.0\.0:9000\/dashboard\/sign-in\?token=[1-9A-HJ-NP-Za-km-z]+$/);
      const { session } = await redeemSignInLink(store.db, new URL(r.json.url).searchParams.get('token')!);
      assert.deepEqual([session.operator, session.workspaceId], [true, null]);
      const text = await runCli(env(), ['dashboard', 'link', '--workspace', workspaceId]);
      assert.equal(text.code, 0);
      assert.match(text.out.join('\n'), /http:\/\/127\.0\.0\.1:8080\/dashboard\/sign-in\?token=/);
    });

    test('usage errors (exit 2) and an unknown workspace (exit 1) create no link', async () => {
      const links = async () => (await store.db.selectFrom('dashboard_links').select('id').execute()).length;
      const before = await links();
      for (const argv of [
        ['dashboard', 'link'],
        ['dashboard', 'link', '--operator', '--workspace', workspaceId],
      ]) {
        const r = await runCli(env(), [...argv, '--json']);
        assert.equal(r.code, 2, JSON.stringify(r));
      }
      for (const bad of ['ftp://x', 'https://x/keyhold', 'https://x?a=1', 'not a url']) {
        const badUrl = await runCli(env({ KEYHOLD_PUBLIC_URL: bad }), ['dashboard', 'link', '--operator', '--json']);
        assert.equal(badUrl.code, 2, bad);
        assert.match(JSON.stringify(badUrl.json), /KEYHOLD_PUBLIC_URL/);
      }
      const unknown = await runCli(env(), ['dashboard', 'link', '--workspace', 'ws_nope', '--json']);
      assert.equal(unknown.code, 1);
      assert.equal(await links(), before);
    });

    // Last: from here on this store has a recorded server address.
    test("without KEYHOLD_PUBLIC_URL the link is on the address the running server recorded, not the CLI's HOST:PORT", async () => {
      await recordServerAddress(store.db, 'http://127.0.0.1:45678');
      const recorded = await runCli<Link>(env({ PORT: '8080' }), ['dashboard', 'link', '--operator', '--json']);
      assert.equal(recorded.code, 0, JSON.stringify(recorded));
      assert.match(recorded.json.url, /^http:\/\/127\.0\.0\.1:45678\/dashboard\/sign-in\?token=/);
      await recordServerAddress(store.db, 'https://keys.example.com');
      const latest = await runCli<Link>(env(), ['dashboard', 'link', '--operator', '--json']);
      assert.match(latest.json.url, /^https:\/\/keys\.example\.com\/dashboard\/sign-in\?token=/);
      const own = await runCli<Link>(env({ KEYHOLD_PUBLIC_URL: 'https://other.example.com' }), [
        'dashboard',
        'link',
        '--operator',
        '--json',
      ]);
      assert.match(own.json.url, /^https:\/\/other\.example\.com\/dashboard\/sign-in\?token=/);
    });
  });
}

test('a listen address as a base URL: wildcard hosts as loopback, IPv6 in brackets', () => {
  assert.equal(listenBaseUrl('0.0.0.0', 9000), 'http://127.0.0.1:9000');
  assert.equal(listenBaseUrl('::', 9000), 'http://[::1]:9000');
  assert.equal(listenBaseUrl('fd00::5', 9000), 'http://[fd00::5]:9000');
  assert.equal(listenBaseUrl('10.0.0.5', 80), 'http://10.0.0.5:80');
});
