// The events of bench/analytics.ts: who verifies (a workspace's keys, identities and APIs, imported into the store
// through the server; and a second workspace of noise), synthetic verification events over them, the server's own
// batch writer called in this process, and the analytics tables' size on disk.
//
// The events: 90% of the workspace's (its keys, skewed: key k is drawn as ⌊K·u²⌋, so the hottest key takes 1% of
// them at 10,000 keys), 10% of the noise workspace's (1,000 keys of its own); identities as imported (8 keys in
// 10 have one); outcomes VALID 92%, RATE_LIMITED 4%, USAGE_EXCEEDED 1.5%, INSUFFICIENT_PERMISSIONS 1%, DISABLED,
// EXPIRED and FORBIDDEN 0.5% each; tags none (30%) or `path=…` of 5 (35%) or that and `region=…` of 3 (35%);
// one credit spent by a VALID verification of every third key; latency 0.1–3 ms; a request id as the server
// makes them.

import { packVerifications } from '../src/services/analytics/verification-backlog.ts';
import { sql } from 'kysely';
import { newId } from '../src/domain/ids.ts';
import type { VerifyCode } from '../src/domain/verify-codes.ts';
import { GRAINS } from '../src/services/analytics/rollups.ts';
import { VerificationRecorder, type VerificationEvent } from '../src/services/verification/verification-recorder.ts';
import type { Db } from '../src/store/store.ts';
import { createKeys, hashKey, randomKeys } from './keyset.ts';
import { call, type Server } from './server.ts';

export type Dialect = 'sqlite' | 'postgres';

/** A key events are recorded for. */
export interface KeyRef {
  id: string;
  apiId: string;
  identityId: string | null;
  externalId: string | null;
}

/** Who verifies: a workspace's keys (in import order: index 0 is the hottest). */
export interface Population {
  workspaceId: string;
  keys: KeyRef[];
}

/**
 * The server's writer of a flush, called directly: `write(batch)` is what a flush of VerificationRecorder runs (ONE
 * transaction: the raw rows, the per-minute/hour/day/month roll-ups, the keys' last_used_at; on PostgreSQL the day
 * partitions first). The server's batches are at most 10,000 events (EventQueue's maxBatch).
 */
export class BatchWriter extends VerificationRecorder {
  writeBatch(batch: VerificationEvent[]): Promise<void> {
    return this.write(packVerifications(batch));
  }
}

/** The most events one flush of the server writes (EventQueue: min(10,000, capacity / 2), capacity 100,000). */
export const SERVER_BATCH = 10_000;

const IMPORT_BATCH = 1_000;

/**
 * Two APIs in the server's (bootstrap root key's) workspace and `keys` keys imported into them as hashes
 * (migrations.createKeys), 8 in 10 with an identity (externalId `user_<n>`, `identities` of them); then, read back
 * from the store, the workspace and its keys in import order.
 */
export async function importPopulation(server: Server, db: Db, keys: number, identities: number): Promise<Population> {
  const apiIds: string[] = [];
  for (const name of ['bench-analytics-a', 'bench-analytics-b']) {
    const api = await call(server, { method: 'POST', path: '/v1/apis.createApi', body: JSON.stringify({ name }), rootKey: server.rootKey });
    if (api.status !== 200) throw new Error(`apis.createApi: ${api.status} ${JSON.stringify(api.json)}`);
    apiIds.push(api.json.apiId);
  }
  const plaintexts = randomKeys(keys, 'bench');
  const keyIds: string[] = [];
  for (let i = 0; i < keys; i += IMPORT_BATCH) {
    const items = plaintexts.slice(i, i + IMPORT_BATCH).map((key, j) => {
      const k = i + j;
      const externalId = k % 10 < 8 ? `user_${Math.floor(k / 10) % identities}` : undefined;
      return { apiId: apiIds[k % 2], prefix: 'bench', hash: { value: hashKey(key), variant: 'sha256_base64' }, externalId };
    });
    keyIds.push(...(await createKeys(server, items)));
  }
  const rows = await db
    .selectFrom('keys')
    .leftJoin('identities', 'identities.id', 'keys.identity_id')
    .select(['keys.id', 'keys.api_id', 'keys.workspace_id', 'keys.identity_id', 'identities.external_id'])
    .where('keys.api_id', 'in', apiIds)
    .execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  const refs = keyIds.map((id) => {
    const r = byId.get(id);
    if (!r) throw new Error(`imported key ${id} is not in the store`);
    return { id, apiId: r.api_id, identityId: r.identity_id, externalId: r.external_id ?? null };
  });
  return { workspaceId: rows[0].workspace_id, keys: refs };
}

/** The second workspace: only in the analytics tables (its keys exist nowhere else). */
export function noisePopulation(): Population {
  const keys = Array.from({ length: 1_000 }, (_, i) => ({
    id: `key_benchnoise${i}`,
    apiId: `api_benchnoise${i % 3}`,
    identityId: i % 2 ? `id_benchnoise${i % 100}` : null,
    externalId: i % 2 ? `noise_${i % 100}` : null,
  }));
  return { workspaceId: 'ws_benchnoise', keys };
}

const PATHS = ['/v1/orders', '/v1/users', '/v1/invoices', '/v1/search', '/v1/items'].map((p) => `path=${p}`);
const REGIONS = ['us-east-1', 'eu-west-1', 'ap-south-1'].map((r) => `region=${r}`);
const TAG_SETS: ReadonlyArray<readonly string[]> = [[], ...PATHS.map((p) => [p]), ...PATHS.flatMap((p) => REGIONS.map((r) => [p, r]))];
const OUTCOMES: Array<[VerifyCode, number]> = [
  ['VALID', 0.92],
  ['RATE_LIMITED', 0.04],
  ['USAGE_EXCEEDED', 0.015],
  ['INSUFFICIENT_PERMISSIONS', 0.01],
  ['DISABLED', 0.005],
  ['EXPIRED', 0.005],
  ['FORBIDDEN', 0.005],
];

/** A small fast PRNG (mulberry32): the same events for the same seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Which workspace and key index an event is for. */
export interface Drawn {
  main: boolean;
  keyIndex: number;
  event: VerificationEvent;
}

/** Draws events over the main workspace (90%) and the noise (10%). */
export class EventMaker {
  readonly #main: Population;
  readonly #noise: Population;
  readonly #rnd: () => number;

  constructor(main: Population, noise: Population, seed = 1) {
    this.#main = main;
    this.#noise = noise;
    this.#rnd = random(seed);
  }

  make(time: number): Drawn {
    const rnd = this.#rnd;
    const main = rnd() < 0.9;
    const pop = main ? this.#main : this.#noise;
    const u = rnd();
    const keyIndex = Math.min(pop.keys.length - 1, Math.floor(pop.keys.length * u * u));
    const key = pop.keys[keyIndex];
    let o = rnd();
    let code: VerifyCode = 'VALID';
    for (const [c, p] of OUTCOMES) {
      if (o < p) {
        code = c;
        break;
      }
      o -= p;
    }
    const t = rnd();
    const tags =
      t < 0.3
        ? TAG_SETS[0]
        : t < 0.65
          ? TAG_SETS[1 + Math.floor(rnd() * PATHS.length)]
          : TAG_SETS[1 + PATHS.length + Math.floor(rnd() * PATHS.length * REGIONS.length)];
    const event: VerificationEvent = {
      keyId: key.id,
      workspaceId: pop.workspaceId,
      apiId: key.apiId,
      identityId: key.identityId,
      externalId: key.externalId,
      code,
      time,
      requestId: newId('req'),
      tags,
      spentCredits: code === 'VALID' && keyIndex % 3 === 0 ? 1 : 0,
      latency: Math.round((0.1 + rnd() * 2.9) * 1000) / 1000,
    };
    return { main, keyIndex, event };
  }
}

/** Bytes on disk of the raw verification table (with its indexes; on PostgreSQL every partition) and of each roll-up table. */
export interface Sizes {
  raw: number;
  rollups: Record<(typeof GRAINS)[number], number>;
  /** How they were measured. */
  how: string;
}

const RAW = 'analytics_key_verifications';
const rollupTable = (grain: (typeof GRAINS)[number]) => `${RAW}_per_${grain}`;

/** The sizes now (SQLite: dbstat, else the whole file's pages as `raw`; PostgreSQL: pg_total_relation_size). */
export async function analyticsSizes(db: Db, dialect: Dialect): Promise<Sizes> {
  const rollups = { minute: 0, hour: 0, day: 0, month: 0 };
  if (dialect === 'postgres') {
    const raw = await sql<{ bytes: string }>`select coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) as bytes
      from pg_inherits i where i.inhparent = ${RAW}::regclass`.execute(db);
    for (const grain of GRAINS) {
      const r = await sql<{ bytes: string }>`select pg_total_relation_size(${rollupTable(grain)}::regclass) as bytes`.execute(db);
      rollups[grain] = Number(r.rows[0].bytes);
    }
    return {
      raw: Number(raw.rows[0].bytes),
      rollups,
      how: 'pg_total_relation_size (table, indexes, TOAST; every day partition of the raw table)',
    };
  }
  try {
    const { rows } = await sql<{ tbl: string; bytes: number }>`select m.tbl_name as tbl, sum(s.pgsize) as bytes
      from dbstat s join sqlite_master m on m.name = s.name group by m.tbl_name`.execute(db);
    const of = (table: string) => Number(rows.find((r) => r.tbl === table)?.bytes ?? 0);
    for (const grain of GRAINS) rollups[grain] = of(rollupTable(grain));
    return { raw: of(RAW), rollups, how: 'SQLite dbstat (pages of the table and its indexes)' };
  } catch {
    const { rows } = await sql<{
      bytes: number;
    }>`select page_count * page_size as bytes from pragma_page_count(), pragma_page_size()`.execute(db);
    return {
      raw: Number(rows[0].bytes),
      rollups,
      how: 'SQLite without dbstat: the whole file (page_count × page_size), raw and roll-ups together',
    };
  }
}

/** Rows of each roll-up table. */
export async function rollupRows(db: Db): Promise<Record<(typeof GRAINS)[number], number>> {
  const out = { minute: 0, hour: 0, day: 0, month: 0 };
  for (const grain of GRAINS) {
    const { rows } = await sql<{ n: number }>`select count(*) as n from ${sql.table(rollupTable(grain))}`.execute(db);
    out[grain] = Number(rows[0].n);
  }
  return out;
}
