// Verifications with credits, with and without a webhook endpoint subscribed to every event type, on one
// server (SQLite): `node bench/webhooks.ts` (BENCH_WEBHOOK_ROUNDS, default 5; BENCH_WEBHOOK_SECONDS, default 5).
// An ordinary verification causes no event (events come of crossings: docs/webhooks.md), so the endpoint
// should cost next to nothing. The endpoint is created and deleted between rounds (A, B, A, B, …) on the same
// key; each round starts after the workspace's subscriptions were read again (their cache lives 5 s).

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { PLENTY, VERIFY_PATH } from './cases.ts';
import { positiveInt, processCpuTotalSeconds, runStandalone, sleep } from './processes.ts';
import { autocannon, call, startServer, type Load } from './server.ts';
import { scratchStore } from './scratch-store.ts';

const ROUNDS = positiveInt('BENCH_WEBHOOK_ROUNDS', 5);
const SECONDS = positiveInt('BENCH_WEBHOOK_SECONDS', 5);
const SUBSCRIPTIONS_TTL_MS = 5_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

runStandalone(async () => {
  const receiver = createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const { url, cleanup } = scratchStore('sqlite');
  const server = await startServer(url, { env: { KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'true' } });
  const admin = (path: string, body: unknown) =>
    call(server, { method: 'POST', path, body: JSON.stringify(body), rootKey: server.rootKey, contentType: 'application/json' });
  const { json: api } = await admin('/v1/apis.createApi', { name: 'bench-webhooks' });
  const { json: created } = await admin('/v1/keys.createKey', { apiId: api.apiId, remaining: PLENTY });
  const load: Load = { method: 'POST', path: VERIFY_PATH, body: JSON.stringify({ apiId: api.apiId, key: created.key }) };
  const check = await call(server, load);
  if (check.json?.valid !== true) throw new Error(`setup: ${JSON.stringify(check.json)}`);
  const rates: Record<'without' | 'with', number[]> = { without: [], with: [] };
  /** Server CPU µs per request of each round (user + system). */
  const cpu: Record<'without' | 'with', number[]> = { without: [], with: [] };
  const cpuSeconds = () => processCpuTotalSeconds(server.child.pid);
  const loads: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of ['without', 'with'] as const) {
      let endpointId: string | undefined;
      if (mode === 'with') endpointId = (await admin('/v1/webhooks.createEndpoint', { url: hook })).json.endpointId;
      await sleep(SUBSCRIPTIONS_TTL_MS + 500);
      await call(server, load); // the subscriptions are read again here, before the measured seconds
      const cpuBefore = await cpuSeconds();
      const r = await autocannon(server, load, SECONDS, { connections: 50, pipelining: 1 });
      if (r.non2xx || r.errors) throw new Error(`${mode}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      rates[mode].push(r.requests.average);
      cpu[mode].push((((await cpuSeconds()) - cpuBefore) * 1e6) / (r.requests.average * SECONDS));
      loads.push(loadavg()[0]);
      if (endpointId) await admin('/v1/webhooks.deleteEndpoint', { endpointId });
      console.log(
        `round ${round + 1} ${mode} endpoint: ${Math.round(r.requests.average)} req/s (p99 ${r.latency.p99} ms, server CPU ${Math.round(cpu[mode].at(-1)!)} µs/request)`,
      );
    }
  }
  const ratios = rates.with.map((w, i) => w / rates.without[i]);
  console.log(
    `verifyKey with credits, endpoint subscribed to every type / none: ${(median(rates.with) / median(rates.without)).toFixed(3)} ` +
      `(ratio of the medians); median of the rounds' ratios ${median(ratios).toFixed(3)} ` +
      `(rounds ${ratios.map((r) => r.toFixed(3)).join(', ')}; median ${Math.round(median(rates.with))} vs ${Math.round(median(rates.without))} req/s; ` +
      `server CPU median ${Math.round(median(cpu.with))} vs ${Math.round(median(cpu.without))} µs/request; ` +
      `load average ${Math.min(...loads).toFixed(1)}..${Math.max(...loads).toFixed(1)})`,
  );
  receiver.close();
  await cleanup();
});
