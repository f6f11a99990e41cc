import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, OPERATOR, world, type World } from '../../helpers/harness.ts';
import { runCli } from '../../helpers/cli.ts';
import { count } from '../../helpers/rows.ts';
import { listMembers, setMember } from '../../../src/services/dashboard/members.ts';
import { findSession } from '../../../src/services/dashboard/sessions.ts';
import { openUserSession, recordUser } from '../../../src/services/dashboard/sso-sessions.ts';

for (const dialect of DIALECTS) {
  describe(`dashboard members (${dialect})`, () => {
    let w: World;
    before(async () => {
      w = await world(dialect);
    });
    after(() => w?.close());
    const cli = (...args: string[]) => runCli<Record<string, unknown>>({ DATABASE_URL: w.url }, [...args, '--json']);

    it('keyhold members add/list/remove: adds, changes the role, lists by email, removes; each audited', async () => {
      assert.equal(
        (await cli('members', 'add', '--workspace', w.workspaceId, '--email', ' Ann@Example.com ', '--role', 'viewer')).json.created,
        true,
      );
      assert.equal(
        (await cli('members', 'add', '--workspace', w.workspaceId, '--email', 'ann@example.com', '--role', 'admin')).json.created,
        false,
      );
      const listed = await cli('members', 'list', '--workspace', w.workspaceId);
      assert.deepEqual(
        (listed.json.members as Array<{ email: string; role: string }>).map((m) => [m.email, m.role]),
        [['ann@example.com', 'admin']],
      );
      assert.equal((await cli('members', 'remove', '--workspace', w.workspaceId, '--email', 'ann@example.com')).code, 0);
      assert.deepEqual(await listMembers(w.store.db, w.workspaceId), []);
      const events = await w.store.db
        .selectFrom('audit_logs')
        .select('event')
        .where('event', 'like', 'dashboard.member%')
        .orderBy('created_at')
        .execute();
      assert.deepEqual(
        events.map((e) => e.event),
        ['dashboard.member_add', 'dashboard.member_update', 'dashboard.member_remove'],
      );
    });

    it('refuses a bad role, a bad email, an unknown workspace and removing a non-member, writing nothing', async () => {
      const before = await count(w.store.db, 'dashboard_members');
      for (const args of [
        ['--workspace', w.workspaceId, '--email', 'a@example.com', '--role', 'owner'],
        ['--workspace', w.workspaceId, '--email', 'not-an-email', '--role', 'viewer'],
        ['--workspace', w.workspaceId, '--email', `${'a'.repeat(250)}@example.com`, '--role', 'viewer'],
        ['--workspace', 'ws_missing', '--email', 'a@example.com', '--role', 'viewer'],
      ]) {
        const r = await cli('members', 'add', ...args);
        assert.notEqual(r.code, 0, args.join(' '));
      }
      assert.notEqual((await cli('members', 'remove', '--workspace', w.workspaceId, '--email', 'nobody@example.com')).code, 0);
      assert.equal(await count(w.store.db, 'dashboard_members'), before);
    });

    it("removing a member ends their open session at once; a changed role applies on the session's next request", async () => {
      await setMember(w.store.db, { workspaceId: w.workspaceId, email: 'bob@example.com', role: 'viewer' }, OPERATOR);
      const user = await recordUser(w.store.db, { issuer: 'https://idp.example', subject: 'bob', email: 'bob@example.com' });
      const { token } = await openUserSession(w.store.db, { user, operator: false, workspaceId: w.workspaceId });
      assert.equal((await findSession(w.store.db, token))?.role, 'viewer');
      await cli('members', 'add', '--workspace', w.workspaceId, '--email', 'bob@example.com', '--role', 'admin');
      assert.equal((await findSession(w.store.db, token))?.role, 'admin');
      await cli('members', 'remove', '--workspace', w.workspaceId, '--email', 'bob@example.com');
      assert.equal(await findSession(w.store.db, token), undefined);
      const ended = await w.store.db.selectFrom('dashboard_sessions').select('ended_at').where('user_id', '=', user.id).execute();
      assert.ok(ended.length === 1 && ended[0].ended_at !== null);
    });
  });
}
