// What PostgreSQL's own state does to `npm run bench:scale` (bench/scale.ts), read straight from the server: the
// write-ahead log written and the checkpoints taken during the import (they grow per key as its indexes grow; on
// this machine they were measured not to be what slows it: docs/performance.md, "Scale"), and a store brought to
// rest after it (the measurements that follow must not share the disk with the import's write-back).

import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectTo } from './scale-workspace.ts';

/** The whole PostgreSQL server's (not the schema's: nothing else should run during the bench). */
export interface WalReading {
  /** Bytes of write-ahead log written since the server's WAL began. */
  bytes: number;
  /** Checkpoints since the statistics were reset (timed and requested). */
  checkpoints: number;
}

/** Reads WalReadings through one connection until closed. */
export async function walProbe(databaseUrl: string): Promise<{ read(): Promise<WalReading>; close(): Promise<void> }> {
  const { client } = await connectTo(databaseUrl);
  const lsn = `pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as bytes`;
  // PostgreSQL 17 moved the checkpoint counts from pg_stat_bgwriter to pg_stat_checkpointer.
  const [before17, from17] = [
    `select ${lsn}, (select checkpoints_timed + checkpoints_req from pg_stat_bgwriter)::float8 as checkpoints`,
    `select ${lsn}, (select num_timed + num_requested from pg_stat_checkpointer)::float8 as checkpoints`,
  ];
  let query = before17;
  return {
    async read() {
      const run = () => client.query<WalReading>(query).then((r) => r.rows[0]);
      return run().catch(() => {
        query = from17;
        return run();
      });
    },
    close: () => client.end(),
  };
}

/** Dirty and under-write-back memory of the kernel (Linux), in bytes; undefined elsewhere. */
async function unwrittenBytes(): Promise<number | undefined> {
  const text = await readFile('/proc/meminfo', 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return (kb('Dirty') + kb('Writeback')) * 1024;
}

/**
 * Brings the store to rest after the import: a CHECKPOINT (PostgreSQL writes its dirty buffers), then a wait, at most
 * `maxMs`, until the kernel holds under 64 MB not yet written to disk. Without it, the first measurements would share
 * the disk with the import's write-back (825 MB to 1.4 GB of it at the end of a 4,000,000- or 10,000,000-key import).
 * Returns what was waited for.
 */
export async function settleStore(databaseUrl: string, maxMs = 600_000): Promise<{ seconds: number; unwrittenMiB?: number }> {
  const started = performance.now();
  const unwritten = await unwrittenBytes();
  const { client } = await connectTo(databaseUrl);
  try {
    await client.query('checkpoint');
  } finally {
    await client.end();
  }
  while (performance.now() - started < maxMs) {
    const now = await unwrittenBytes();
    if (now === undefined || now < 64 * 2 ** 20) break;
    await sleep(1_000);
  }
  return { seconds: (performance.now() - started) / 1000, unwrittenMiB: unwritten === undefined ? undefined : unwritten / 2 ** 20 };
}
