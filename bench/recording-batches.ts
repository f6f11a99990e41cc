// What a flush of many distinct keys costs the analytics writer, by batch size (not run by `npm run bench`):
//
//   node --disable-warning=ExperimentalWarning bench/recording-batches.ts [--store sqlite|postgres] [--keys 100000]
//        [--events 100000] [--batches 10000,30000] [--rounds 3]
//
// A fresh store (SQLite file, or a schema of KEYHOLD_BENCH_POSTGRES_URL / KEYHOLD_TEST_POSTGRES_URL) with `--keys`
// keys imported through the server (then stopped); then, for `--rounds` rounds, each batch size of `--batches` in
// turn: `--events` events, each of a key drawn at random, written through writeVerifications (what the writer
// thread and the recorder run) in batches of that size, timestamps of one steady stream (50 events/s of event
// time), so a batch of more events spans more minutes. Prints this process' CPU µs per event and events/s of
// each, and, from two sizes, the fit of "a fixed cost per flush + a cost per event" (docs/performance.md:
// with many keys, each flush rewrites the pages of the open hour's, day's and month's rows). The first round warms
// the tables and is printed, not fitted.

import { parseArgs } from 'node:util';
import { writeVerifications } from '../src/services/analytics/verification-writes.ts';
import type { VerificationEvent } from '../src/services/verification/verification-recorder.ts';
import { openStore } from '../src/store/store.ts';
import { importPopulation, type Population } from './analytics-events.ts';
import { addCleanup, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { scratchStore } from './scratch-store.ts';
import { startServer } from './server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    keys: { type: 'string', default: '100000' },
    events: { type: 'string', default: '100000' },
    batches: { type: 'string', default: '10000,30000' },
    rounds: { type: 'string', default: '3' },
  },
});
const dialect = args.store === 'postgres' ? 'postgres' : 'sqlite';
const sizes = args.batches.split(',').map(Number);
const events = Number(args.events);
const STREAM_MS_PER_EVENT = 20;

/** `n` events of random keys of `pop`, from `t0` on the stream. */
function eventsOf(pop: Population, n: number, t0: number, round: number): VerificationEvent[] {
  return Array.from({ length: n }, (_, j) => {
    const k = pop.keys[Math.floor(Math.random() * pop.keys.length)];
    const time = t0 + j * STREAM_MS_PER_EVENT;
    return {
      keyId: k.id,
      workspaceId: pop.workspaceId,
      apiId: k.apiId,
      identityId: k.identityId,
      externalId: k.externalId,
      code: 'VALID',
      time,
      latency: 1,
      requestId: `req_${round}_${time}`,
    };
  });
}

const scratch = scratchStore(dialect);
addCleanup(scratch.cleanup);
const server = await startServer(scratch.url, { env: { KEYHOLD_PRUNE_INTERVAL_MINUTES: '0' } });
const store = openStore(scratch.url, { postgres: { statementMs: 0, queryMs: 0 } });
try {
  const pop = await importPopulation(server, store.db, Number(args.keys), 1000);
  await stopChild(server.child);
  console.log(`${dialect}: ${fmt(pop.keys.length, 0)} keys; ${fmt(events, 0)} events per size and round, each of a random key`);
  let t = Date.now();
  const cost = new Map<number, number[]>(sizes.map((s) => [s, []]));
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const size of sizes) {
      let cpu = 0;
      const wall = performance.now();
      for (let done = 0; done < events; done += size) {
        const batch = eventsOf(pop, Math.min(size, events - done), t, round);
        t += batch.length * STREAM_MS_PER_EVENT;
        const c = process.cpuUsage();
        await writeVerifications(store.db, batch, 'local', dialect);
        const d = process.cpuUsage(c);
        cpu += d.user + d.system;
      }
      const seconds = (performance.now() - wall) / 1000;
      if (round > 0) cost.get(size)!.push(cpu / events);
      console.log(
        `   round ${round + 1}, batches of ${fmt(size, 0)}: ${fmt(cpu / events, 1)} µs CPU/event, ${fmt(events / seconds, 0)} events/s${round === 0 ? ' (warm-up)' : ''}`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  if (sizes.length === 2 && Number(args.rounds) > 1) {
    const [a, b] = sizes.map((s) => median(cost.get(s)!));
    const perFlushUs = (a - b) / (1 / sizes[0] - 1 / sizes[1]);
    console.log(`fit (medians): ${fmt(perFlushUs / 1e6, 2)} s of CPU per flush + ${fmt(a - perFlushUs / sizes[0], 1)} µs per event`);
  }
} finally {
  await stopChild(server.child);
  await store.close();
  await scratch.cleanup();
}
