import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp } from '../../src/app.ts';
import {
  createSignInLink,
  findSession,
  redeemSignInLink,
  SESSION_TTL_MS,
  SIGN_IN_LINK_TTL_MS,
} from '../../src/services/dashboard/sessions.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { DIALECTS, OPERATOR, world, type World } from '../helpers/harness.ts';
import { count, snapshot } from '../helpers/rows.ts';
import { signInWithLink } from '../helpers/browser.ts';
import { createWorkspace } from '../../src/services/workspaces/workspaces.ts';

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

for (const dialect of DIALECTS) {
  describe(`dashboard security (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    it('without a session every page is the sign-in page (401), which tells how to get a link', async () => {
      for (const path of [
        '/dashboard',
        '/dashboard/apis',
        '/dashboard/root-keys',
        '/dashboard/audit-log',
        '/dashboard/keys/key_x',
        '/dashboard/workspaces',
      ]) {
        const res = await w.app.inject({ method: 'GET', url: path });
        assert.equal(res.statusCode, 401, path);
        assert.match(res.body, /<h1>Sign in<\/h1>/);
        assert.match(res.body, /keyhold dashboard link/);
      }
      const post = await w.app.inject({ method: 'POST', url: '/dashboard/apis', headers: FORM, payload: form({ name: 'x' }) });
      assert.equal(post.statusCode, 401);
      assert.equal(await count(w.store.db, 'apis'), 0);
    });

    it('a link signs in once: HttpOnly, SameSite=Strict cookie under /dashboard, then redirects without the token', async () => {
      const { token } = await createSignInLink(w.store.db, { workspaceId: w.workspaceId }, OPERATOR);
      const first = await w.app.inject({ method: 'GET', url: `/dashboard/sign-in?token=${token}` });
      assert.equal(first.statusCode, 303);
      assert.equal(first.headers.location, '/dashboard');
      const cookie = String(first.headers['set-cookie']);
      assert.match(cookie, /^keyhold_session=[1-9A-HJ-NP-Za-km-z]{40,}; Path=\/dashboard; Max-Age=43200; HttpOnly; SameSite=Strict$/);
      const again = await w.app.inject({ method: 'GET', url: `/dashboard/sign-in?token=${token}` });
      assert.equal(again.statusCode, 400);
      assert.match(again.body, /<h1>Sign in<\/h1>/);
      assert.match(again.body, /already used or expired/);
      assert.equal(again.headers['set-cookie'], undefined);
      // Only hashes are stored.
      const stored = JSON.stringify(await w.store.db.selectFrom('dashboard_links').selectAll().execute());
      assert.ok(!stored.includes(token));
      const sessionToken = cookie.split(';')[0].split('=')[1];
      assert.ok(!JSON.stringify(await w.store.db.selectFrom('dashboard_sessions').selectAll().execute()).includes(sessionToken));
    });

    it('an expired or unknown link does not sign in; a session ends after 12 h', async () => {
      const old = await createSignInLink(w.store.db, { workspaceId: w.workspaceId }, OPERATOR, Date.now() - SIGN_IN_LINK_TTL_MS - 1);
      for (const token of [old.token, 'nope', 'x'.repeat(500)]) {
        const res = await w.app.inject({ method: 'GET', url: `/dashboard/sign-in?token=${token}` });
        assert.equal(res.statusCode, 400, token.slice(0, 10));
        assert.equal(res.headers['set-cookie'], undefined);
      }
      const fresh = await createSignInLink(w.store.db, { workspaceId: w.workspaceId }, OPERATOR);
      const { token } = await redeemSignInLink(w.store.db, fresh.token);
      assert.ok(await findSession(w.store.db, token));
      assert.equal(await findSession(w.store.db, token, Date.now() + SESSION_TTL_MS + 1), undefined);
    });

    it('concurrent redemptions of one link open exactly one session', async () => {
      const { token } = await createSignInLink(w.store.db, { workspaceId: w.workspaceId }, OPERATOR);
      const before = await count(w.store.db, 'dashboard_sessions');
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => redeemSignInLink(w.store.db, token)));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      assert.equal(await count(w.store.db, 'dashboard_sessions'), before + 1);
    });

    it('a state-changing request without the CSRF token, or with another session’s, is a 403 and changes nothing', async () => {
      const mine = await signInWithLink(w);
      const theirs = await signInWithLink(w);
      const apis = await count(w.store.db, 'apis');
      for (const [headers, fields] of [
        [{}, { name: 'no-token' }],
        [{}, { name: 'wrong', _csrf: theirs.csrf }],
        [{}, { name: 'empty', _csrf: '' }],
        [{ 'x-csrf-token': 'abc' }, { name: 'bad-header' }],
      ] as const) {
        const res = await w.app.inject({
          method: 'POST',
          url: '/dashboard/apis',
          headers: { ...FORM, ...headers, cookie: mine.cookie },
          payload: form(fields),
        });
        assert.equal(res.statusCode, 403, JSON.stringify(fields));
      }
      const signOut = await w.app.inject({
        method: 'POST',
        url: '/dashboard/sign-out',
        headers: { ...FORM, cookie: mine.cookie },
        payload: '',
      });
      assert.equal(signOut.statusCode, 403);
      assert.equal(await count(w.store.db, 'apis'), apis);
      const ok = await w.app.inject({
        method: 'POST',
        url: '/dashboard/apis',
        headers: { ...FORM, cookie: mine.cookie },
        payload: form({ name: 'with-token', _csrf: mine.csrf }),
      });
      assert.equal(ok.statusCode, 303);
      assert.equal(await count(w.store.db, 'apis'), apis + 1);
    });

    it('pages carry a CSP without inline scripts, no framing, no referrer, no caching', async () => {
      const { cookie } = await signInWithLink(w);
      for (const path of ['/dashboard/apis', '/dashboard/sign-in']) {
        const res = await w.app.inject({ method: 'GET', url: path, headers: { cookie } });
        const csp = String(res.headers['content-security-policy']);
        assert.match(csp, /script-src 'self'/);
        assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
        assert.match(csp, /frame-ancestors 'none'/);
        assert.equal(res.headers['referrer-policy'], 'no-referrer');
        assert.equal(res.headers['cache-control'], 'no-store');
        assert.doesNotMatch(res.body, /<script>|<script [^>]*>[^<]|\son[a-z]+=|style="/);
      }
    });

    it('the session cookie is Secure when KEYHOLD_PUBLIC_URL is https', async () => {
      const app = await buildApp({ store: w.store }, { publicUrl: 'https://keys.example.com' });
      try {
        const { token } = await createSignInLink(w.store.db, { workspaceId: w.workspaceId }, OPERATOR);
        const res = await app.inject({ method: 'GET', url: `/dashboard/sign-in?token=${token}` });
        assert.match(String(res.headers['set-cookie']), /; HttpOnly; SameSite=Strict; Secure$/);
      } finally {
        await app.close();
      }
    });

    it('signing out ends the session at once', async () => {
      const { cookie, csrf } = await signInWithLink(w);
      const res = await w.app.inject({
        method: 'POST',
        url: '/dashboard/sign-out',
        headers: { ...FORM, cookie },
        payload: form({ _csrf: csrf }),
      });
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, '/dashboard/sign-in');
      assert.match(String(res.headers['set-cookie']), /keyhold_session=; .*Max-Age=0/);
      const after = await w.app.inject({ method: 'GET', url: '/dashboard/apis', headers: { cookie } });
      assert.equal(after.statusCode, 401);
    });

    it('a workspace session reaches nothing of another workspace, and no operator page', async () => {
      const other = await w.otherWorkspace();
      const apiId = await w.createApi('other-api', other.root);
      const { keyId } = await w.createKey({ apiId }, other.root);
      const theirs = await insertRootKey(w.store.db, { workspaceId: other.workspaceId, permissions: ['*'] }, OPERATOR);
      const { cookie, csrf } = await signInWithLink(w);
      for (const path of [`/dashboard/apis/${apiId}`, `/dashboard/keys/${keyId}`, '/dashboard/workspaces']) {
        const res = await w.app.inject({ method: 'GET', url: path, headers: { cookie } });
        assert.equal(res.statusCode, 404, path);
        assert.doesNotMatch(res.body, new RegExp(`other-api|${other.workspaceId}`));
      }
      const revoke = await w.app.inject({
        method: 'POST',
        url: `/dashboard/root-keys/${theirs.rootKeyId}/revoke`,
        headers: { ...FORM, cookie },
        payload: form({ _csrf: csrf }),
      });
      assert.equal(revoke.statusCode, 404);
      const row = await w.store.db
        .selectFrom('root_keys')
        .select('revoked_at')
        .where('id', '=', theirs.rootKeyId)
        .executeTakeFirstOrThrow();
      assert.equal(row.revoked_at, null);
      const choose = await w.app.inject({
        method: 'POST',
        url: `/dashboard/workspaces/${other.workspaceId}/choose`,
        headers: { ...FORM, cookie },
        payload: form({ _csrf: csrf }),
      });
      assert.equal(choose.statusCode, 404);
      const list = await w.app.inject({ method: 'GET', url: '/dashboard/root-keys', headers: { cookie } });
      assert.doesNotMatch(list.body, new RegExp(theirs.rootKeyId));
    });

    it('dashboard changes are audited with the session as actor, and no token reaches the audit log', async () => {
      const { cookie, csrf, link: token } = await signInWithLink(w);
      const res = await w.app.inject({
        method: 'POST',
        url: '/dashboard/apis',
        headers: { ...FORM, cookie },
        payload: form({ name: 'audited', _csrf: csrf }),
      });
      assert.equal(res.statusCode, 303);
      const apiId = String(res.headers.location).split('/').pop()!;
      const record = await w.store.db.selectFrom('audit_logs').selectAll().where('target_id', '=', apiId).executeTakeFirstOrThrow();
      assert.equal(record.event, 'api.create');
      assert.equal(record.actor_type, 'dashboard_session');
      assert.match(record.actor_id, /^dss_/);
      const everything = JSON.stringify(await w.store.db.selectFrom('audit_logs').selectAll().execute());
      assert.ok(!everything.includes(token) && !everything.includes(cookie.split('=')[1]) && !everything.includes(csrf));
    });

    it('odd requests get a page or a 404, never a 500: repeated parameters, JSON bodies, long paths, huge forms', async () => {
      const { cookie, csrf } = await signInWithLink(w);
      const repeated = await w.app.inject({ method: 'GET', url: '/dashboard/apis?cursor=a&cursor=b', headers: { cookie } });
      assert.equal(repeated.statusCode, 200);
      const apis = await count(w.store.db, 'apis');
      const json = await w.app.inject({
        method: 'POST',
        url: '/dashboard/apis',
        headers: { cookie, 'content-type': 'application/json', 'x-csrf-token': csrf },
        payload: JSON.stringify({ name: { a: 1 } }),
      });
      assert.equal(json.statusCode, 415);
      assert.match(String(json.headers['content-type']), /text\/html/);
      const huge = await w.app.inject({
        method: 'POST',
        url: '/dashboard/apis',
        headers: { ...FORM, cookie },
        payload: form({ name: 'x'.repeat(300_000), _csrf: csrf }),
      });
      assert.equal(huge.statusCode, 413);
      assert.equal(await count(w.store.db, 'apis'), apis);
      for (const path of [`/dashboard/keys/${'a'.repeat(120)}`, `/dashboard/assets/${'a'.repeat(120)}`]) {
        const long = await w.app.inject({ method: 'GET', url: path, headers: { cookie } });
        assert.equal(long.statusCode, 404, path);
      }
    });

    it('NUL characters in an address, a query or a form are a 400 page and write nothing', async () => {
      const { cookie, csrf } = await signInWithLink(w);
      for (const url of [
        '/dashboard/apis?cursor=%00',
        '/dashboard/audit-log?event=a%00',
        '/dashboard/keys/key%00x',
        '/dashboard/identities?environment=%00',
      ]) {
        const res = await w.app.inject({ method: 'GET', url, headers: { cookie } });
        assert.equal(res.statusCode, 400, url);
        assert.match(res.body, /NUL character or a lone surrogate/);
      }
      const before = await snapshot(w, ['root_keys', 'workspaces', 'apis', 'audit_logs']);
      // (A form cannot carry a lone surrogate: URL-encoded bytes that are not UTF-8 decode to U+FFFD.)
      const forms: Array<Record<string, string>> = [
        { name: 'a\0b', permission: '*' },
        { name: 'ok', other: 'api.*.read_api\0' },
      ];
      for (const fields of forms) {
        const res = await w.app.inject({
          method: 'POST',
          url: '/dashboard/root-keys',
          headers: { ...FORM, cookie },
          payload: form({ ...fields, _csrf: csrf }),
        });
        assert.equal(res.statusCode, 400);
      }
      assert.deepEqual(await snapshot(w, ['root_keys', 'workspaces', 'apis', 'audit_logs']), before);
      await assert.rejects(createWorkspace(w.store.db, 'a\0b', OPERATOR), /NUL character/);
      await assert.rejects(
        insertRootKey(w.store.db, { workspaceId: w.workspaceId, permissions: ['*'], name: 'a\0b' }, OPERATOR),
        /invalid/i,
      );
    });

    it('a change made in the dashboard is audited under the request id the browser got', async () => {
      const { cookie, csrf } = await signInWithLink(w);
      const res = await w.app.inject({
        method: 'POST',
        url: '/dashboard/apis',
        headers: { ...FORM, cookie },
        payload: form({ name: 'traced', _csrf: csrf }),
      });
      const apiId = String(res.headers.location).split('/').pop()!;
      const record = await w.store.db
        .selectFrom('audit_logs')
        .select('request_id')
        .where('target_id', '=', apiId)
        .executeTakeFirstOrThrow();
      assert.equal(record.request_id, res.headers['x-request-id']);
    });

    it('a ticket header sent from outside is not a caller', async () => {
      const res = await w.app.inject({
        method: 'POST',
        url: '/v1/apis.createApi',
        headers: { 'content-type': 'application/json', 'x-keyhold-internal-ticket': crypto.randomUUID() },
        payload: JSON.stringify({ name: 'forged' }),
      });
      assert.equal(res.statusCode, 401);
    });

    it('an operator session lists workspaces and chooses one; creating one audits the session', async () => {
      const { cookie, csrf } = await operatorSignIn(w);
      const list = await w.app.inject({ method: 'GET', url: '/dashboard/workspaces', headers: { cookie } });
      assert.equal(list.statusCode, 200);
      assert.match(list.body, new RegExp(w.workspaceId));
      const bad = await w.app.inject({
        method: 'POST',
        url: '/dashboard/workspaces',
        headers: { ...FORM, cookie },
        payload: form({ name: '', _csrf: csrf }),
      });
      assert.equal(bad.statusCode, 200);
      assert.match(bad.body, /class="field-error"[^>]*>a workspace name is 1 to 256 characters/);
      const made = await w.app.inject({
        method: 'POST',
        url: '/dashboard/workspaces',
        headers: { ...FORM, cookie },
        payload: form({ name: 'from the dashboard', _csrf: csrf }),
      });
      assert.equal(made.statusCode, 303);
      const ws = await w.store.db.selectFrom('workspaces').select('id').where('name', '=', 'from the dashboard').executeTakeFirstOrThrow();
      const audit = await w.store.db.selectFrom('audit_logs').selectAll().where('workspace_id', '=', ws.id).orderBy('id').execute();
      assert.deepEqual(
        audit.map((a) => [a.event, a.actor_type]),
        [
          ['workspace.create', 'dashboard_operator'],
          ['dashboard.workspace_choose', 'dashboard_operator'],
        ],
      );
      // A form rendered for the workspace chosen before is refused once another tab chose a different one.
      const stale = await w.app.inject({
        method: 'POST',
        url: '/dashboard/apis',
        headers: { ...FORM, cookie },
        payload: form({ name: 'stale', _csrf: csrf }),
      });
      assert.equal(stale.statusCode, 403);
      assert.equal(await count(w.store.db, 'apis', ['workspace_id', ws.id]), 0);
    });
  });
}

/** An operator's session: before choosing a workspace its pages other than Workspaces redirect there. */
async function operatorSignIn(w: World): Promise<{ cookie: string; csrf: string }> {
  const { cookie, csrf } = await signInWithLink(w, { operator: true }, '/dashboard/workspaces');
  const redirected = await w.app.inject({ method: 'GET', url: '/dashboard/apis', headers: { cookie } });
  assert.equal(redirected.statusCode, 303);
  assert.equal(redirected.headers.location, '/dashboard/workspaces');
  return { cookie, csrf };
}
