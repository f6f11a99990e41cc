// The workspace `npm run bench:scale` (bench/scale.ts) fills, made through the public operations with the bootstrap
// root key: its APIs and roles (POST /v1/apis.createApi, /v1/permissions.createRole); a dashboard session from a
// one-time link of `keyhold dashboard link` (the CLI, its own process); and, straight through PostgreSQL, the schema's
// planner statistics (ANALYZE) and what it takes on disk.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { exited, track } from './processes.ts';
import { call, ROOT, type Server } from './server.ts';

async function ok(server: Server, method: 'GET' | 'POST', path: string, body?: object): Promise<any> {
  const res = await call(server, { method, path, body: body && JSON.stringify(body), rootKey: server.rootKey });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
  return res.json;
}

/** A new API; its id and its workspace's. */
export async function createApi(server: Server, name: string): Promise<{ apiId: string; workspaceId: string }> {
  const { apiId } = await ok(server, 'POST', '/v1/apis.createApi', { name });
  const { workspaceId } = await ok(server, 'GET', `/v1/apis.getApi?apiId=${encodeURIComponent(apiId)}`);
  return { apiId, workspaceId };
}

/** `n` roles `role-<i>`, four requests in flight. */
export async function createRoles(server: Server, n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await ok(server, 'POST', '/v1/permissions.createRole', { name: `role-${next++}` });
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

/** The session cookie of a dashboard session of the workspace: `keyhold dashboard link`, then its link opened once. */
export async function dashboardCookie(server: Server, databaseUrl: string, workspaceId: string): Promise<string> {
  const child = track(
    spawn(process.execPath, [join(ROOT, 'bin', 'keyhold.js'), 'dashboard', 'link', '--workspace', workspaceId, '--json'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, KEYHOLD_PUBLIC_URL: server.base },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  child.stderr!.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  await exited(child);
  if (child.exitCode !== 0) throw new Error(`keyhold dashboard link exited with ${child.exitCode ?? child.signalCode}: ${out}`);
  const { url } = JSON.parse(out) as { url: string };
  const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('keyhold_session='));
  if (!cookie) throw new Error(`opening the sign-in link answered ${res.status} without a session cookie`);
  return cookie.split(';')[0];
}

/** A client of the store's database (without the `schema` parameter, which pg does not know) and the schema's name. */
export async function connectTo(databaseUrl: string): Promise<{ client: pg.Client; schema: string }> {
  const url = new URL(databaseUrl);
  const schema = url.searchParams.get('schema') ?? 'public';
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  return { client, schema };
}

/**
 * ANALYZE of every table of the store's schema (not the whole database, which others share): the planner
 * statistics autovacuum would have gathered during an import that took that long. Returns PostgreSQL's
 * `autovacuum` setting, since where it is off (as on this machine's test server) nothing else gathers them.
 */
export async function analyzeSchema(databaseUrl: string): Promise<string> {
  const { client, schema } = await connectTo(databaseUrl);
  try {
    const { rows } = await client.query<{ table: string }>(`select tablename as table from pg_tables where schemaname = $1`, [schema]);
    for (const { table } of rows) await client.query(`analyze ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(table)}`);
    return (await client.query<{ autovacuum: string }>('show autovacuum')).rows[0].autovacuum;
  } finally {
    await client.end();
  }
}

/** Bytes on disk of each table of the store's schema (with its indexes and TOAST; partitions each on their own), largest first. */
export async function tableSizes(databaseUrl: string): Promise<Array<{ table: string; bytes: number }>> {
  const { client, schema } = await connectTo(databaseUrl);
  try {
    const { rows } = await client.query<{ table: string; bytes: string }>(
      `select c.relname as table, pg_total_relation_size(c.oid) as bytes from pg_class c
         join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $1 and c.relkind = 'r'
        order by 2 desc`,
      [schema],
    );
    return rows.map((r) => ({ table: r.table, bytes: Number(r.bytes) }));
  } finally {
    await client.end();
  }
}
