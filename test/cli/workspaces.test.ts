import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, freshStore } from '../helpers/harness.ts';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer } from '../helpers/json.ts';
import type { Store } from '../../src/store/store.ts';

/** What `workspaces list --json` prints. */
type WorkspaceList = { workspaces: Array<{ workspaceId: string; name: string; createdAt: number }> };

for (const dialect of DIALECTS) {
  describe(`keyhold workspaces list (${dialect})`, () => {
    let store: Store;
    let url: string;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, url, close } = await freshStore(dialect));
    });
    after(() => close());
    const cli = <T = CliAnswer>(...argv: string[]) => runCli<T>({ DATABASE_URL: url }, argv);

    test('an empty database: {"workspaces":[]}, or "no workspaces"', async () => {
      const r = await cli<WorkspaceList>('workspaces', 'list', '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(r.json, { workspaces: [] });
      const text = await cli('workspaces', 'list');
      assert.deepEqual([text.code, text.out], [0, ['no workspaces']]);
    });

    test('lists every live workspace, oldest first, with id, name and created time; a deleted one is left out', async () => {
      const started = Date.now();
      const ids: string[] = [];
      for (const name of ['alpha', 'beta', 'gamma']) {
        const r = await cli<{ workspaceId: string }>('workspaces', 'create', '--name', name, '--json');
        assert.equal(r.code, 0, JSON.stringify(r));
        ids.push(r.json.workspaceId);
      }
      await store.db.updateTable('workspaces').set({ deleted_at: Date.now() }).where('id', '=', ids[1]).execute();

      const r = await cli<WorkspaceList>('workspaces', 'list', '--json');
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.deepEqual(
        r.json.workspaces.map((w) => [w.workspaceId, w.name]),
        [
          [ids[0], 'alpha'],
          [ids[2], 'gamma'],
        ],
      );
      for (const w of r.json.workspaces) {
        assert.deepEqual(Object.keys(w), ['workspaceId', 'name', 'createdAt']);
        assert.ok(Number.isSafeInteger(w.createdAt) && w.createdAt >= started && w.createdAt <= Date.now(), String(w.createdAt));
      }

      const text = await cli('workspaces', 'list');
      assert.equal(text.code, 0);
      assert.equal(text.out.length, 1);
      const lines = text.out[0].split('\n');
      assert.equal(lines.length, 2);
      assert.match(lines[0], new RegExp(`^${ids[0]}  alpha  created \\d{4}-\\d\\d-\\d\\dT`));
      assert.match(lines[1], new RegExp(`^${ids[2]}  gamma  `));
    });

    test('it takes no options: an unknown one is a usage error (exit 2) naming it', async () => {
      const r = await cli('workspaces', 'list', '--workspace', 'ws_x', '--json');
      assert.equal(r.code, 2);
      assert.equal(r.json.error.kind, 'usage');
      assert.match(r.json.error.detail, /--workspace/);
    });
  });
}
