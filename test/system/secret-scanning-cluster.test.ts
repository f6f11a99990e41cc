import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DIALECTS, world, type World } from '../helpers/harness.ts';
import { githubSigner } from '../helpers/github-scanning.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';

/**
 * A leak reported to one server process is applied on another within 1 s: the key is disabled by the process
 * that received GitHub's report, and this process (another node on the same database) hears of it only through
 * the change feed.
 */
const signer = githubSigner();

for (const dialect of DIALECTS) {
  describe(`secret scanning across processes (${dialect})`, () => {
    let w: World;
    let server: ServerProcess;
    before(async () => {
      w = await world(dialect);
      server = await ServerProcess.start(w.url, newRootKey(), {
        KEYHOLD_SECRET_SCANNING: 'github',
        KEYHOLD_GITHUB_SECRET_SCANNING_KEYS_FILE: signer.file,
      });
    });
    after(async () => {
      await server?.stop();
      await w?.close();
    });

    const verifyHere = async (key: string) => (await w.post<{ valid: boolean; code: string }>('/v1/keys.verifyKey', { key }, null)).json;

    test('the key verifies as DISABLED on the other node within 1 s; the root key is refused there', async () => {
      const apiId = await w.createApi('leaky');
      const { key } = await w.createKey({ apiId, prefix: 'sk' });
      const root = await w.rootKey(['api.*.read_api']);
      assert.equal((await verifyHere(key)).valid, true, 'cached here before the report');
      assert.equal((await server.post<{ valid: boolean }>('/v1/keys.verifyKey', { key })).json.valid, true);

      const body = JSON.stringify([
        { token: key, type: 'keyhold', url: 'https://gist.github.com/x/1', source: 'gist' },
        { token: root, type: 'keyhold', url: 'https://gist.github.com/x/1', source: 'gist' },
      ]);
      const reported = await fetch(`http://127.0.0.1:${server.port}/secret-scanning/github`, {
        method: 'POST',
        headers: signer.headers(body),
        body,
      });
      assert.equal(reported.status, 200, await reported.clone().text());
      const at = Date.now();
      assert.deepEqual(
        ((await reported.json()) as Array<{ label: string }>).map((f) => f.label),
        ['true_positive', 'true_positive'],
      );
      let code = (await verifyHere(key)).code;
      while (code !== 'DISABLED' && Date.now() - at < 1000) {
        await new Promise((r) => setTimeout(r, 20));
        code = (await verifyHere(key)).code;
      }
      assert.equal(code, 'DISABLED', `still ${code} here ${Date.now() - at} ms after the report`);
      assert.equal((await w.get('/v1/apis.getApi', { apiId }, root)).status, 401);
    });
  });
}
