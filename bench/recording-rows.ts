// What building a batch's rows costs, apart from the store (not run by `npm run bench`):
//
//   node --expose-gc --disable-warning=ExperimentalWarning bench/recording-rows.ts <checkout A> <checkout B>
//        [--store postgres|sqlite] [--batches 60] [--keys 100000] [--hot]
//
// writeVerifications of each checkout (e.g. a `git worktree` of the previous commit, and this one) on a Kysely
// whose driver runs nothing (DummyDriver): the roll-up rows, their forms, the statements' texts and parameters
// (PostgreSQL: the JSON of the rows) are built; nothing is written. The two run the same batch one after the
// other, alternating which goes first, in one process: batches of 10,000 events, each of a random one of `--keys`
// keys, a third with an identity, a quarter with tags; with `--hot`, every event of one key without identity or tags
// (the batches of `npm run bench`'s cached verification). Each run starts after a full collection, so that neither
// pays for the other's garbage. Prints the median CPU per event of each (the first six batches left out) and B/A.

import { parseArgs } from 'node:util';
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { VerificationEvent } from '../src/services/verification/verification-recorder.ts';
import { base58 } from './processes.ts';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'postgres' },
    batches: { type: 'string', default: '60' },
    keys: { type: 'string', default: '100000' },
    hot: { type: 'boolean', default: false },
  },
});
if (positionals.length !== 2) throw new Error('usage: bench/recording-rows.ts <checkout A> <checkout B>');
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const dialect = args.store === 'sqlite' ? 'sqlite' : 'postgres';
const pg = dialect === 'postgres';
const BATCH = 10_000;
const WARM_UP = 6;

type Write = (db: unknown, batch: VerificationEvent[], region: string, dialect: 'sqlite' | 'postgres') => Promise<void>;
const writers: Write[] = await Promise.all(
  positionals.map(
    async (root) =>
      (await import(pathToFileURL(resolve(root, 'src/services/analytics/verification-writes.ts')).href)).writeVerifications as Write,
  ),
);
const db = new Kysely<unknown>({
  dialect: {
    createAdapter: () => (pg ? new PostgresAdapter() : new SqliteAdapter()),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => (pg ? new PostgresIntrospector(k) : new SqliteIntrospector(k)),
    createQueryCompiler: () => (pg ? new PostgresQueryCompiler() : new SqliteQueryCompiler()),
  },
});

const id = (prefix: string) => `${prefix}_${base58(22)}`;
const keys = Array.from({ length: args.hot ? 1 : Number(args.keys) }, () => id('key'));
const [workspaceId, apiId, identityId] = [id('ws'), id('api'), id('id')];
let t = Date.now() - 86_400_000;

function batchOf(): VerificationEvent[] {
  const batch = Array.from({ length: BATCH }, (_, j): VerificationEvent => {
    const named = !args.hot && j % 3 === 0;
    return {
      keyId: keys[Math.floor(Math.random() * keys.length)],
      workspaceId,
      apiId,
      identityId: named ? identityId : null,
      externalId: named ? 'user_1' : null,
      code: 'VALID',
      time: t + j * 20,
      requestId: id('req'),
      latency: 1,
      tags: !args.hot && j % 4 === 0 ? ['plan', `region-${j % 3}`] : undefined,
    };
  });
  t += BATCH * 20;
  return batch;
}

const costs: number[][] = [[], []];
for (let i = 0; i < Number(args.batches); i++) {
  const batch = batchOf();
  for (const side of i % 2 ? [1, 0] : [0, 1]) {
    gc();
    const before = process.cpuUsage();
    await writers[side](
      db,
      batch.map((e) => ({ ...e })),
      'local',
      dialect,
    );
    const spent = process.cpuUsage(before);
    if (i >= WARM_UP) costs[side].push((spent.user + spent.system) / BATCH);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [a, b] = costs.map(median);
console.log(`${dialect}: A ${positionals[0]} ${a.toFixed(2)} µs CPU/event, B ${positionals[1]} ${b.toFixed(2)}; B/A ${(b / a).toFixed(3)}`);
