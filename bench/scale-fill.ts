// Part 1 of `npm run bench:scale` (bench/scale.ts): the workspace, filled through the public operations on a server
// started on the fresh schema (then stopped): two APIs, `roles` roles, then the keys by hash through
// migrations.createKeys (bench/scale-import.ts) — the small API's, the big API's (its rate per chunk printed as it
// goes), and in the big API the credit keys (each with `credits` credits) and the keys the three-node part revokes.
// Every key has an externalId of `identities` (key i: `user_<i mod identities>`), so the import creates the
// identities, and writes one audit record per key: nothing is written straight into the store. Then ANALYZE of the
// schema's tables (the statistics autovacuum gathers as a store grows; this machine's test server runs without
// autovacuum, and without statistics the planner misjudges a big table: the dashboard's audit page read every
// record of the workspace) and the size of each table on disk.

import { residentMiB, stopChild } from './processes.ts';
import { fmt } from './report.ts';
import { importKeySet, minutes, type ImportResult } from './scale-import.ts';
import { newKeySet, type KeySet } from './scale-key-derivation.ts';
import { figure, type Figure } from './scale-report.ts';
import { settleStore, walProbe } from './scale-store-state.ts';
import { analyzeSchema, createApi, createRoles, tableSizes } from './scale-workspace.ts';
import { startServer } from './server.ts';

export interface FillSettings {
  keys: number;
  small: number;
  identities: number;
  roles: number;
  creditKeys: number;
  credits: number;
  revocations: number;
  concurrency: number;
}

export interface Filled {
  rootKey: string;
  workspaceId: string;
  big: { apiId: string; set: KeySet };
  small: { apiId: string; set: KeySet };
  credit: { set: KeySet; ids: string[]; credits: number };
  revoke: { set: KeySet; ids: string[] };
  /** Ids of about 10,000 big-API keys, spread over the import. */
  keyIds: string[];
  /** An identity with keys in the big API. */
  externalId: string;
  imports: ImportResult[];
  tables: Array<{ table: string; bytes: number }>;
  /** PostgreSQL's autovacuum setting. */
  autovacuum: string;
  figures: Figure[];
}

/** Keys per reported chunk: a million from 2,000,000 keys on, else a tenth (in thousands). */
const chunkOf = (n: number): number => (n >= 2_000_000 ? 1_000_000 : Math.max(1_000, Math.ceil(n / 10 / 1_000) * 1_000));

export async function fill(databaseUrl: string, s: FillSettings): Promise<Filled> {
  console.log(`\n== filling: ${fmt(s.small, 0)} + ${fmt(s.keys, 0)} keys, ${fmt(s.identities, 0)} identities, ${fmt(s.roles, 0)} roles`);
  const server = await startServer(databaseUrl, {});
  const wal = await walProbe(databaseUrl);
  try {
    const big = { ...(await createApi(server, 'big')), set: newKeySet('big', s.keys) };
    const small = { ...(await createApi(server, 'small')), set: newKeySet('small', s.small) };
    await createRoles(server, s.roles);
    const externalId = (i: number) => ({ externalId: `user_${i % s.identities}` });
    const imports: ImportResult[] = [];
    const run = async (label: string, apiId: string, set: KeySet, sampleEvery: number, fields = externalId) => {
      const chunk = chunkOf(set.count);
      const r = await importKeySet(server, { label, apiId, set, fields, concurrency: s.concurrency, chunk, sampleEvery, wal: wal.read });
      console.log(`   ${label}: ${fmt(r.keys, 0)} keys in ${minutes(r.seconds)}, ${fmt(r.keysPerSec, 0)} keys/s`);
      imports.push(r);
      return r;
    };
    await run('small API', small.apiId, small.set, s.small);
    const bigImport = await run('big API', big.apiId, big.set, Math.max(1, Math.floor(s.keys / 10_000)));
    const creditSet = newKeySet('credit', s.creditKeys);
    const credit = await run('credit keys', big.apiId, creditSet, 1, (i) => ({ ...externalId(i), remaining: s.credits }));
    const revokeSet = newKeySet('revoke', s.revocations);
    const revoke = await run('revocation keys', big.apiId, revokeSet, 1);
    console.log(`   importing server's RSS at the end: ${fmt((await residentMiB(server.child.pid)) ?? Number.NaN, 0)} MB`);
    const started = performance.now();
    const autovacuum = await analyzeSchema(databaseUrl);
    console.log(
      `   ANALYZE of the schema's tables: ${minutes((performance.now() - started) / 1000)} (PostgreSQL's autovacuum is ${autovacuum})`,
    );
    const tables = await tableSizes(databaseUrl);
    const settled = await settleStore(databaseUrl);
    console.log(
      `   brought to rest (CHECKPOINT, then the kernel's write-back): ${minutes(settled.seconds)}` +
        (settled.unwrittenMiB === undefined ? '' : `, ${fmt(settled.unwrittenMiB, 0)} MB not yet on disk before`),
    );
    return {
      rootKey: server.rootKey,
      workspaceId: big.workspaceId,
      big,
      small,
      credit: { set: creditSet, ids: [...credit.ids.values()], credits: s.credits },
      revoke: { set: revokeSet, ids: [...revoke.ids.values()] },
      keyIds: [...bigImport.ids.values()],
      externalId: `user_${7 % s.identities}`,
      imports,
      tables,
      autovacuum,
      figures: fillFigures(bigImport, imports[0], tables, s),
    };
  } finally {
    await wal.close();
    await stopChild(server.child);
  }
}

function fillFigures(big: ImportResult, small: ImportResult, tables: Array<{ table: string; bytes: number }>, s: FillSettings): Figure[] {
  const first = big.chunks[0];
  const last = big.chunks.at(-1)!;
  const chunk = fmt(first.upTo, 0);
  const total = tables.reduce((n, t) => n + t.bytes, 0);
  const keys = s.keys + s.small + s.creditKeys + s.revocations;
  const mb = (bytes: number) => `${fmt(bytes / 2 ** 20, 0)} MB`;
  const top = tables
    .slice(0, 4)
    .map((t) => `${t.table} ${mb(t.bytes)}`)
    .join(', ');
  console.log(`   store: ${mb(total)} on disk (${top}, …)`);
  return [
    figure('import-small', 'import by hash, small API: keys/s', small.keysPerSec, 'keys/s'),
    figure('import-big', 'import by hash, big API: keys/s', big.keysPerSec, 'keys/s', { note: `${minutes(big.seconds)} in all` }),
    figure('import-first', 'import by hash, big API: keys/s of the first chunk', first.keysPerSec, 'keys/s', {
      note: `chunks of ${chunk} keys`,
    }),
    figure('import-last', 'import by hash, big API: keys/s of the last chunk', last.keysPerSec, 'keys/s', {
      note: `every chunk: ${big.chunks.map((c) => fmt(c.keysPerSec, 0)).join(', ')}${walNote(big)}`,
    }),
    figure(
      'import-last-over-first',
      "import by hash, big API: the last chunk's rate ÷ the first's",
      last.keysPerSec / first.keysPerSec,
      '×',
      {
        target: { op: '≥', value: 0.8 },
      },
    ),
    figure('store-bytes-per-key', 'store on disk per key (every table, indexes, audit records)', total / keys, 'B', {
      digits: 0,
      note: `${mb(total)} in all; ${top}`,
    }),
  ];
}

/** PostgreSQL's write-ahead log per key of each chunk and its checkpoints: why the last chunk is slower, if it is. */
function walNote(big: ImportResult): string {
  if (big.chunks.some((c) => c.walBytesPerKey === undefined)) return '';
  const perKey = big.chunks.map((c) => fmt(c.walBytesPerKey!, 0)).join(', ');
  return `; WAL per key ${perKey} B; checkpoints ${big.chunks.reduce((n, c) => n + c.checkpoints!, 0)}`;
}
