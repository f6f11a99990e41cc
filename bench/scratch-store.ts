import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** The PostgreSQL benchmarks use: KEYHOLD_BENCH_POSTGRES_URL, else KEYHOLD_TEST_POSTGRES_URL, else none. */
export const BENCH_PG_URL = process.env.KEYHOLD_BENCH_POSTGRES_URL || process.env.KEYHOLD_TEST_POSTGRES_URL;

/**
 * A throwaway store for one benchmark run: a SQLite file in a temp dir, or a fresh PostgreSQL schema. `cleanup`
 * removes it, unless KEYHOLD_BENCH_KEEP_STORE=1: then it prints the store's URL and leaves it (to look into a
 * result afterwards; remove it yourself).
 */
export function scratchStore(dialect: 'sqlite' | 'postgres'): { url: string; cleanup: () => Promise<void> } {
  const made = makeScratchStore(dialect);
  if (process.env.KEYHOLD_BENCH_KEEP_STORE !== '1') return made;
  return { url: made.url, cleanup: async () => console.log(`   store kept (KEYHOLD_BENCH_KEEP_STORE=1): ${made.url}`) };
}

function makeScratchStore(dialect: 'sqlite' | 'postgres'): { url: string; cleanup: () => Promise<void> } {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'keyhold-bench-'));
    return { url: `sqlite:${join(dir, 'keyhold.db')}`, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!BENCH_PG_URL) throw new Error('PostgreSQL benchmarks need KEYHOLD_BENCH_POSTGRES_URL or KEYHOLD_TEST_POSTGRES_URL');
  const schema = `kh_bench_${randomBytes(6).toString('hex')}`;
  const url = new URL(BENCH_PG_URL);
  url.searchParams.delete('schema');
  const admin = url.toString();
  url.searchParams.set('schema', schema);
  return {
    url: url.toString(),
    async cleanup() {
      const client = new pg.Client({ connectionString: admin });
      await client.connect();
      try {
        await client.query(`drop schema if exists ${schema} cascade`);
      } finally {
        await client.end();
      }
    },
  };
}
