import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importKeys, randomKeys, writeKeys } from './keyset.ts';
import { addCleanup, residentMiB, runStandalone, sleep, stopChild } from './processes.ts';
import { scratchStore } from './scratch-store.ts';
import { call, listLoad, startServer } from './server.ts';
const N = Number(process.env.N ?? 100000);
runStandalone(async () => {
  const store = scratchStore('sqlite'); addCleanup(store.cleanup);
  const dir = await mkdtemp(join(tmpdir(), 'heapprobe-'));
  const env = { KEYHOLD_KEY_CACHE_SIZE: String(N + 1000), ...(process.env.ANALYTICS_OFF ? { KEYHOLD_ANALYTICS: 'off' } : {}) };
  let server = await startServer(store.url, { env });
  const api = await call(server, { method: 'POST', path: '/v1/apis.createApi', body: JSON.stringify({ name: 'heap-probe' }), rootKey: server.rootKey });
  if (api.status !== 200) throw new Error(JSON.stringify(api.json));
  const apiId = api.json.apiId as string;
  const keys = randomKeys(N, 'bk');
  await importKeys(server, apiId, keys, 'bk');
  const file = await writeKeys(dir, 'keys.txt', keys);
  await stopChild(server.child);
  server = await startServer(store.url, { env, rootKey: server.rootKey, nodeFlags: ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`] });
  console.log('start RSS', await residentMiB(server.child.pid));
  for (let i = 0; i < 2; i++) {
    const r = await listLoad({ url: server.base + '/v1/keys.verifyKey', method: 'POST', connections: 50, amount: N, keysFile: file, apiId, expect: '"code":"VALID"' }, 600);
    console.log('pass', i, r.requests, 'RSS', await residentMiB(server.child.pid));
  }
  await sleep(3000);
  server.child.kill('SIGUSR2');
  await sleep(15000);
  console.log('snapshot in', dir, 'RSS', await residentMiB(server.child.pid));
  await stopChild(server.child);
});
