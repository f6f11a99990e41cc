import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setMember } from '../../src/services/dashboard/members.ts';
import { openUserSession, recordUser } from '../../src/services/dashboard/sso-sessions.ts';
import { isOperator } from '../../src/services/dashboard/sso-sign-in.ts';
import { DIALECTS, OPERATOR, world, type World } from '../helpers/harness.ts';
import { count } from '../helpers/rows.ts';
import { ssoSettings } from '../helpers/oidc-provider.ts';
import { sessionPage, signInWithLink } from '../helpers/browser.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

for (const dialect of DIALECTS) {
  describe(`dashboard members and sessions pages: security (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w.close());

    const viewerSession = async (email: string) => {
      await setMember(w.store.db, { workspaceId: w.workspaceId, email, role: 'viewer' }, OPERATOR);
      const user = await recordUser(w.store.db, { issuer: 'https://idp.example', subject: email, email });
      return (await openUserSession(w.store.db, { user, operator: false, workspaceId: w.workspaceId, role: 'viewer' })).token;
    };

    it('an admin adds, changes and removes members of their own workspace only; bad input is a 400 that writes nothing', async () => {
      const { cookie, csrf } = await signInWithLink(w, undefined, '/dashboard/members');
      const post = (url: string, fields: Record<string, string>) =>
        w.app.inject({ method: 'POST', url, headers: { ...FORM, cookie }, payload: form({ _csrf: csrf, ...fields }) });
      assert.equal((await post('/dashboard/members', { email: 'a@example.com', role: 'viewer' })).statusCode, 303);
      for (const bad of [
        { email: 'nope', role: 'viewer' },
        { email: 'b@example.com', role: 'owner' },
        { email: '', role: 'admin' },
      ]) {
        const res = await post('/dashboard/members', bad);
        assert.equal(res.statusCode, 400, JSON.stringify(bad));
        assert.match(res.body, /role="alert"/);
      }
      assert.equal(await count(w.store.db, 'dashboard_members'), 1);
      assert.equal((await post('/dashboard/members/remove?email=nobody%40example.com', {})).statusCode, 400);
      // Another workspace's members are out of reach: the page acts in the session's workspace only.
      const other = await w.otherWorkspace();
      await setMember(w.store.db, { workspaceId: other.workspaceId, email: 'theirs@example.com', role: 'admin' }, OPERATOR);
      assert.equal((await post('/dashboard/members/remove?email=theirs%40example.com', {})).statusCode, 400);
      assert.equal(await count(w.store.db, 'dashboard_members', ['workspace_id', other.workspaceId]), 1);
      const page = await signInWithLink(w, undefined, '/dashboard/members');
      assert.doesNotMatch(page.body, /theirs@example\.com/);
      // Without the CSRF token: 403, nothing changes.
      const forged = await w.app.inject({
        method: 'POST',
        url: '/dashboard/members',
        headers: { ...FORM, cookie },
        payload: form({ email: 'c@example.com', role: 'admin' }),
      });
      assert.equal(forged.statusCode, 403);
      assert.equal(await count(w.store.db, 'dashboard_members', ['workspace_id', w.workspaceId]), 1);
    });

    it('a viewer sees the Members page without a form and every change request of theirs is a 403 that changes nothing', async () => {
      const { cookie, csrf, body } = await sessionPage(w, await viewerSession('viewer@example.com'), '/dashboard/members');
      assert.doesNotMatch(body, /<form method="post" action="\/dashboard\/members/);
      assert.match(body, /viewer@example\.com/);
      const before = await count(w.store.db, 'dashboard_members');
      const apis = await count(w.store.db, 'apis');
      for (const [url, fields] of [
        ['/dashboard/members', { email: 'viewer@example.com', role: 'admin' }],
        ['/dashboard/members/remove?email=viewer%40example.com', {}],
        ['/dashboard/apis', { name: 'nope' }],
        ['/dashboard/root-keys', { permission: '*' }],
        ['/dashboard/migrations', {}],
      ] as Array<[string, Record<string, string>]>) {
        const res = await w.app.inject({ method: 'POST', url, headers: { ...FORM, cookie }, payload: form({ _csrf: csrf, ...fields }) });
        assert.equal(res.statusCode, 403, url);
      }
      assert.equal(await count(w.store.db, 'dashboard_members'), before);
      assert.equal(await count(w.store.db, 'apis'), apis);
      assert.equal(await count(w.store.db, 'key_migrations'), 0);
      // Signing out is no change: a viewer may.
      const out = await w.app.inject({
        method: 'POST',
        url: '/dashboard/sign-out',
        headers: { ...FORM, cookie },
        payload: form({ _csrf: csrf }),
      });
      assert.equal(out.statusCode, 303);
    });

    it('only an operator sees the open sessions and ends one (audited with the operator)', async () => {
      const { cookie, csrf } = await signInWithLink(w, undefined, '/dashboard/members');
      assert.equal((await w.app.inject({ method: 'GET', url: '/dashboard/sessions', headers: { cookie } })).statusCode, 404);
      const target = (await signInWithLink(w)).session;
      const targetId = (
        await w.store.db.selectFrom('dashboard_sessions').select('id').orderBy('created_at', 'desc').executeTakeFirstOrThrow()
      ).id;
      const refused = await w.app.inject({
        method: 'POST',
        url: `/dashboard/sessions/${targetId}/end`,
        headers: { ...FORM, cookie },
        payload: form({ _csrf: csrf }),
      });
      assert.equal(refused.statusCode, 404);
      const op = await signInWithLink(w, { operator: true }, '/dashboard/sessions');
      assert.match(op.body, /Open sessions/);
      const ended = await w.app.inject({
        method: 'POST',
        url: `/dashboard/sessions/${targetId}/end`,
        headers: { ...FORM, cookie: op.cookie },
        payload: form({ _csrf: op.csrf }),
      });
      assert.equal(ended.statusCode, 303);
      assert.equal(
        (await w.app.inject({ method: 'GET', url: '/dashboard/apis', headers: { cookie: `keyhold_session=${target}` } })).statusCode,
        401,
      );
      assert.equal(await count(w.store.db, 'audit_logs', ['event', 'dashboard.session_end']), 1);
    });

    it('a member of two workspaces lists both on Workspaces and opens the other; a workspace they are not in is not found', async () => {
      const second = await w.otherWorkspace();
      const stranger = await w.otherWorkspace();
      const email = 'two@example.com';
      await setMember(w.store.db, { workspaceId: w.workspaceId, email, role: 'admin' }, OPERATOR);
      await setMember(w.store.db, { workspaceId: second.workspaceId, email, role: 'viewer' }, OPERATOR);
      const user = await recordUser(w.store.db, { issuer: 'https://idp.example', subject: email, email });
      const { token } = await openUserSession(w.store.db, { user, operator: false, workspaceId: w.workspaceId, role: 'admin' });
      const { cookie, csrf, body } = await sessionPage(w, token, '/dashboard/workspaces');
      assert.match(body, new RegExp(second.workspaceId));
      assert.doesNotMatch(body, new RegExp(stranger.workspaceId));
      const choose = (id: string) =>
        w.app.inject({
          method: 'POST',
          url: `/dashboard/workspaces/${id}/choose`,
          headers: { ...FORM, cookie },
          payload: form({ _csrf: csrf }),
        });
      assert.equal((await choose(stranger.workspaceId)).statusCode, 404);
      assert.equal((await choose(second.workspaceId)).statusCode, 303);
      // Now a viewer there: the Members page shows no form.
      const members = await w.app.inject({ method: 'GET', url: '/dashboard/members', headers: { cookie } });
      assert.match(members.body, /Viewer/);
      assert.doesNotMatch(members.body, /Add member/);
    });

    it('operators: a verified email on the list or the operator group; never an unverified email', () => {
      const config = ssoSettings('https://idp.example', ['ops@example.com']);
      const id = { issuer: 'https://idp.example', subject: 's', groups: [] as string[] };
      assert.equal(isOperator(config, { ...id, email: 'ops@example.com', emailVerified: true }), true);
      assert.equal(isOperator(config, { ...id, email: 'ops@example.com', emailVerified: false }), false);
      assert.equal(isOperator(config, { ...id, email: 'x@example.com', emailVerified: true, groups: ['keyhold-operators'] }), true);
      assert.equal(isOperator(config, { ...id, email: 'x@example.com', emailVerified: false, groups: ['keyhold-operators'] }), false);
      assert.equal(isOperator(config, { ...id, email: 'x@example.com', emailVerified: true, groups: ['others'] }), false);
    });
  });
}
