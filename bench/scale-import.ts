// The key import of `npm run bench:scale` (bench/scale.ts): a derived key set (bench/scale-key-derivation.ts) goes
// into an API through the public import, POST /v1/migrations.createKeys with the keys' hashes (bench/keyset.ts
// createKeys), 1,000 keys a request, `concurrency` requests in flight. The rate of each chunk (a million keys at
// 10,000,000) is printed as it is done, with the time left at the rate so far and the server's RSS.

import { hashKey, createKeys } from './keyset.ts';
import { keyAt, type KeySet } from './scale-key-derivation.ts';
import { residentMiB } from './processes.ts';
import { fmt } from './report.ts';
import type { Server } from './server.ts';
import type { WalReading } from './scale-store-state.ts';

/** A migrations.createKeys request holds at most 1,000 items. */
const BATCH = 1_000;

export interface ImportSpec {
  label: string;
  apiId: string;
  set: KeySet;
  /** More fields of item i (externalId, remaining). */
  fields?: (i: number) => object;
  concurrency: number;
  /** Keys per reported chunk (a multiple of 1,000). */
  chunk: number;
  /** The ids of every `sampleEvery`-th key are kept (ids are the server's, not derived). */
  sampleEvery: number;
  /** PostgreSQL's write-ahead log and checkpoints, read at every chunk's end. */
  wal?: () => Promise<WalReading>;
}

export interface ChunkRate {
  /** Keys imported at the end of the chunk. */
  upTo: number;
  keysPerSec: number;
  /** Write-ahead log per key of the chunk, and checkpoints during it (with `wal`). */
  walBytesPerKey?: number;
  checkpoints?: number;
}

export interface ImportResult {
  label: string;
  keys: number;
  seconds: number;
  keysPerSec: number;
  chunks: ChunkRate[];
  /** Key index → key id, for every `sampleEvery`-th key. */
  ids: Map<number, string>;
}

export const minutes = (seconds: number): string =>
  seconds < 60 ? `${fmt(seconds, 0)} s` : `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;

/** Imports the set; every request must answer 200 (else it throws). */
export async function importKeySet(server: Server, spec: ImportSpec): Promise<ImportResult> {
  const { set, apiId } = spec;
  const ids = new Map<number, string>();
  const chunks: ChunkRate[] = [];
  const started = performance.now();
  let chunkStarted = started;
  let next = 0;
  let done = 0;
  let wal = await spec.wal?.();
  const report = async () => {
    while (done >= (chunks.length + 1) * spec.chunk || (done === set.count && chunks.at(-1)?.upTo !== done)) {
      const upTo = Math.min((chunks.length + 1) * spec.chunk, set.count);
      const now = performance.now();
      const size = upTo - (chunks.at(-1)?.upTo ?? 0);
      // Recorded before anything is awaited: the other workers call report() too.
      const chunk: ChunkRate = { upTo, keysPerSec: size / ((now - chunkStarted) / 1000) };
      chunks.push(chunk);
      chunkStarted = now;
      Object.assign(chunk, await walOf(size));
      const elapsed = (now - started) / 1000;
      const overall = upTo / elapsed;
      const walNote =
        chunk.walBytesPerKey === undefined ? '' : `; WAL ${fmt(chunk.walBytesPerKey, 0)} B/key, ${chunk.checkpoints} checkpoints`;
      console.log(
        `   ${spec.label}: ${fmt(upTo, 0)} of ${fmt(set.count, 0)} keys, ${fmt(chunk.keysPerSec, 0)} keys/s over the last ${fmt(size, 0)} ` +
          `(${fmt(overall, 0)} overall), ${minutes(elapsed)}, about ${minutes((set.count - upTo) / overall)} left; server RSS ${fmt((await residentMiB(server.child.pid)) ?? Number.NaN, 0)} MB${walNote}`,
      );
    }
  };
  const walOf = async (keys: number): Promise<Pick<ChunkRate, 'walBytesPerKey' | 'checkpoints'>> => {
    const now = await spec.wal?.();
    if (!now || !wal) return {};
    const since = wal;
    wal = now;
    return { walBytesPerKey: (now.bytes - since.bytes) / keys, checkpoints: now.checkpoints - since.checkpoints };
  };
  const worker = async () => {
    while (next < set.count) {
      const from = next;
      const size = Math.min(BATCH, set.count - from);
      next += size;
      const items = Array.from({ length: size }, (_, j) => ({
        apiId,
        prefix: set.prefix,
        hash: { value: hashKey(keyAt(set, from + j)), variant: 'sha256_base64' },
        ...spec.fields?.(from + j),
      }));
      const keyIds = await createKeys(server, items);
      keyIds.forEach((id, j) => {
        if ((from + j) % spec.sampleEvery === 0) ids.set(from + j, id);
      });
      done += size;
      await report();
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { label: spec.label, keys: set.count, seconds, keysPerSec: set.count / seconds, chunks, ids };
}
