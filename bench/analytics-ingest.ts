// Parts 2 and 3 of bench/analytics.ts: how many events per second the store takes through the server's own batch
// writer (VerificationRecorder's flush, called in this process: bench/analytics-events.ts BatchWriter), in batches
// of the server's size (10,000), and what they take on disk. A fresh store; the server (src/main.ts) starts once to
// create it and import the workspace's keys (analytics-events.ts importPopulation), and is stopped; then `events`
// events are written as a server under steady load would write them: timestamps of a stream of 50,000 events/s
// starting now (a batch holds 0.2 s of it, so its roll-ups group as a real flush's do). Only the writes are timed
// (the events of the next batch are made between them). Then the raw table's and the roll-ups' growth on disk
// (analytics-events.ts analyticsSizes), per event.

import { GRAINS } from '../src/services/analytics/rollups.ts';
import type { VerificationEvent } from '../src/services/verification/verification-recorder.ts';
import { openStore } from '../src/store/store.ts';
import {
  analyticsSizes,
  BatchWriter,
  EventMaker,
  importPopulation,
  noisePopulation,
  rollupRows,
  SERVER_BATCH,
  type Dialect,
  type Sizes,
} from './analytics-events.ts';
import { addCleanup, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { scratchStore } from './scratch-store.ts';
import { startServer } from './server.ts';

/** The stream the ingested events' timestamps describe. */
const STREAM_PER_SECOND = 50_000;

export interface IngestSettings {
  events: number;
  keys: number;
  identities: number;
}

/** Growth of the tables over `events` events. */
export interface DiskUse {
  events: number;
  rawBytesPerEvent: number;
  rollupBytesPerEvent: Record<(typeof GRAINS)[number], number>;
  rollupRowsPerEvent: Record<(typeof GRAINS)[number], number>;
  how: string;
}

export interface IngestResult {
  store: Dialect;
  events: number;
  batch: number;
  writeSeconds: number;
  eventsPerSec: number;
  wallSeconds: number;
  disk: DiskUse;
}

export function diskUse(before: Sizes, after: Sizes, rows: Record<(typeof GRAINS)[number], number>, events: number): DiskUse {
  const per = (f: (g: (typeof GRAINS)[number]) => number) =>
    Object.fromEntries(GRAINS.map((g) => [g, f(g) / events])) as Record<(typeof GRAINS)[number], number>;
  return {
    events,
    rawBytesPerEvent: (after.raw - before.raw) / events,
    rollupBytesPerEvent: per((g) => after.rollups[g] - before.rollups[g]),
    rollupRowsPerEvent: per((g) => rows[g]),
    how: after.how,
  };
}

export function diskLine(d: DiskUse): string {
  const rollups = GRAINS.map((g) => `${g} ${fmt(d.rollupBytesPerEvent[g], 0)} B (${fmt(d.rollupRowsPerEvent[g], 2)} rows)`).join(', ');
  return `raw ${fmt(d.rawBytesPerEvent, 0)} B per event; roll-ups per event: ${rollups} [${d.how}]`;
}

export async function benchIngest(dialect: Dialect, s: IngestSettings): Promise<IngestResult> {
  const scratch = scratchStore(dialect);
  addCleanup(scratch.cleanup);
  console.log(`\n== ${dialect}, ingestion: a fresh store, ${fmt(s.keys, 0)} keys imported through the server`);
  const env = { KEYHOLD_PRUNE_INTERVAL_MINUTES: '0' };
  const server = await startServer(scratch.url, { env });
  const store = openStore(scratch.url);
  try {
    const main = await importPopulation(server, store.db, s.keys, s.identities);
    await stopChild(server.child);
    const before = await analyticsSizes(store.db, dialect);
    const writer = new BatchWriter(store.db, { dialect });
    const maker = new EventMaker(main, noisePopulation(), 2);
    const start = Date.now();
    const started = performance.now();
    let writeMs = 0;
    let nextReport = s.events / 4;
    for (let done = 0; done < s.events; ) {
      const n = Math.min(SERVER_BATCH, s.events - done);
      const batch: VerificationEvent[] = new Array(n);
      for (let j = 0; j < n; j++) batch[j] = maker.make(start + Math.floor(((done + j) * 1000) / STREAM_PER_SECOND)).event;
      const t = performance.now();
      await writer.writeBatch(batch);
      writeMs += performance.now() - t;
      done += n;
      if (done >= nextReport || done === s.events) {
        console.log(`   ${fmt(done, 0)} events written, ${fmt(done / (writeMs / 1000), 0)} events/s (writes only)`);
        nextReport += s.events / 4;
      }
    }
    const wallSeconds = (performance.now() - started) / 1000;
    const disk = diskUse(before, await analyticsSizes(store.db, dialect), await rollupRows(store.db), s.events);
    console.log(`   on disk: ${diskLine(disk)}`);
    return {
      store: dialect,
      events: s.events,
      batch: SERVER_BATCH,
      writeSeconds: writeMs / 1000,
      eventsPerSec: s.events / (writeMs / 1000),
      wallSeconds,
      disk,
    };
  } finally {
    await stopChild(server.child);
    await store.close();
    await scratch.cleanup();
  }
}
