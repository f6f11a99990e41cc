// Part 3 of `npm run bench:scale` (bench/scale.ts): how long the reads of a big workspace take, end to end, on the
// restarted server of part 2. Each read is sent twice unmeasured (the first time is printed), then `repeat` times one
// at a time, its round trip timed here (fetch, keep-alive): p50, p95 and max; target p95 ≤ 100 ms. Operations use the
// bootstrap root key, dashboard pages a session from `keyhold dashboard link`. "21st page" is the page after 20 pages
// of 100 (the dashboard's: of 50) walked by cursor. keys.getKey and the dashboard's key page read a different key of
// the big API each time. The CLI's `keyhold audit list` is timed as its own process (Node's start included; no target).

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { median } from './cold-start.ts';
import { exited, track } from './processes.ts';
import { fmt } from './report.ts';
import { figure, type Figure } from './scale-report.ts';
import { ROOT, type Server } from './server.ts';

export const READ_TARGET_MS = 100;
const WARM = 2;
const PAGES_IN = 20;

export interface ReadsInput {
  server: Server;
  databaseUrl: string;
  /** The dashboard session's cookie (`keyhold_session=…`). */
  cookie: string;
  workspaceId: string;
  apiId: string;
  /** Ids of big-API keys, a different one per keys.getKey. */
  keyIds: string[];
  /** An identity with keys in the big API. */
  externalId: string;
  repeat: number;
}

interface Req {
  method: 'GET' | 'POST';
  path: string;
  body?: object;
  /** A dashboard page: the session cookie instead of the root key. */
  dashboard?: boolean;
}

interface Read {
  id: string;
  label: string;
  /** The i-th request of the read (0-based, warm-ups included). */
  request: (i: number) => Req;
}

export interface ReadResult {
  id: string;
  label: string;
  firstMs: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  runs: number;
}

async function send(input: ReadsInput, r: Req): Promise<{ ms: number; text: string }> {
  const headers: Record<string, string> = r.dashboard ? { cookie: input.cookie } : { authorization: `Bearer ${input.server.rootKey}` };
  if (r.body) headers['content-type'] = 'application/json';
  const started = performance.now();
  const res = await fetch(input.server.base + r.path, {
    method: r.method,
    headers,
    body: r.body && JSON.stringify(r.body),
    redirect: 'manual',
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`${r.method} ${r.path}: ${res.status} ${text.slice(0, 300)}`);
  return { ms, text };
}

/** The cursor of the page after `pages` pages, walked from the first; undefined when there are not that many. */
async function cursorAfter(input: ReadsInput, pages: number, at: (cursor?: string) => Req, next: (text: string) => string | undefined) {
  let cursor: string | undefined;
  for (let p = 0; p < pages; p++) {
    cursor = next((await send(input, at(cursor))).text);
    if (cursor === undefined) return undefined;
  }
  return cursor;
}

const q = encodeURIComponent;
/** The cursor of the dashboard pager's "Next page" link. */
const nextPageLink = (text: string): string | undefined => {
  const href = /<a href="([^"]+)">Next page<\/a>/.exec(text)?.[1]?.replaceAll('&amp;', '&');
  return href === undefined ? undefined : (new URL(href, 'http://x').searchParams.get('cursor') ?? undefined);
};

const v1Keys = (apiId: string, cursor?: string): Req => ({
  method: 'GET',
  path: `/v1/apis.listKeys?apiId=${q(apiId)}&limit=100${cursor ? `&cursor=${q(cursor)}` : ''}`,
});
const v2Keys = (apiId: string, cursor?: string): Req => ({
  method: 'POST',
  path: '/v2/apis.listKeys',
  body: { apiId, limit: 100, cursor },
});
const audit = (cursor?: string): Req => ({ method: 'GET', path: `/v1/audit.listLogs?limit=100${cursor ? `&cursor=${q(cursor)}` : ''}` });
const dashApi = (apiId: string, cursor?: string): Req => ({
  method: 'GET',
  path: `/dashboard/apis/${q(apiId)}${cursor ? `?cursor=${q(cursor)}` : ''}`,
  dashboard: true,
});

interface Cursors {
  v1?: string;
  v2?: string;
  audit?: string;
  dashboard?: string;
}

/** The cursors 20 pages in of the paginated reads. */
async function cursors(input: ReadsInput): Promise<Cursors> {
  const { apiId } = input;
  return {
    v1: await cursorAfter(
      input,
      PAGES_IN,
      (c) => v1Keys(apiId, c),
      (t) => JSON.parse(t).cursor,
    ),
    v2: await cursorAfter(
      input,
      PAGES_IN,
      (c) => v2Keys(apiId, c),
      (t) => JSON.parse(t).pagination.cursor,
    ),
    audit: await cursorAfter(input, PAGES_IN, audit, (t) => JSON.parse(t).cursor),
    dashboard: await cursorAfter(input, PAGES_IN, (c) => dashApi(apiId, c), nextPageLink),
  };
}

/** The reads of the issue's list (and a few beside them); a page 20 pages in only where there are that many. */
async function reads(input: ReadsInput): Promise<Read[]> {
  const c = await cursors(input);
  const all = [...keyReads(input, c), ...identityAndRoleReads(input.externalId), ...auditAndDashboardReads(input, c)];
  return all.filter((r): r is Read => r !== false);
}

const keyOf = (input: ReadsInput, i: number): string => input.keyIds[i % input.keyIds.length];

function keyReads(input: ReadsInput, c: Cursors): Array<Read | false> {
  const { apiId, externalId } = input;
  return [
    { id: 'v1-listkeys-first', label: 'v1 apis.listKeys, big API, first page', request: () => v1Keys(apiId) },
    !!c.v1 && { id: 'v1-listkeys-21', label: 'v1 apis.listKeys, big API, 21st page', request: () => v1Keys(apiId, c.v1) },
    { id: 'v2-listkeys-first', label: 'v2 apis.listKeys, big API, first page', request: () => v2Keys(apiId) },
    !!c.v2 && { id: 'v2-listkeys-21', label: 'v2 apis.listKeys, big API, 21st page', request: () => v2Keys(apiId, c.v2) },
    {
      id: 'v1-listkeys-external',
      label: 'v1 apis.listKeys, big API, filtered by externalId',
      request: () => ({ method: 'GET', path: `/v1/apis.listKeys?apiId=${q(apiId)}&externalId=${q(externalId)}` }),
    },
    {
      id: 'v2-listkeys-external',
      label: 'v2 apis.listKeys, big API, filtered by externalId',
      request: () => ({ method: 'POST', path: '/v2/apis.listKeys', body: { apiId, externalId } }),
    },
    { id: 'v1-getkey', label: 'v1 keys.getKey', request: (i) => ({ method: 'GET', path: `/v1/keys.getKey?keyId=${q(keyOf(input, i))}` }) },
    {
      id: 'v2-getkey',
      label: 'v2 keys.getKey',
      request: (i) => ({ method: 'POST', path: '/v2/keys.getKey', body: { keyId: keyOf(input, i + 7) } }),
    },
  ];
}

function auditAndDashboardReads(input: ReadsInput, c: Cursors): Array<Read | false> {
  const { apiId } = input;
  return [
    { id: 'v1-audit-first', label: 'v1 audit.listLogs, first page', request: () => audit() },
    !!c.audit && { id: 'v1-audit-21', label: 'v1 audit.listLogs, 21st page', request: () => audit(c.audit) },
    {
      id: 'v1-audit-target',
      label: "v1 audit.listLogs, filtered by a key's id",
      request: (i) => ({ method: 'GET', path: `/v1/audit.listLogs?targetId=${q(keyOf(input, i + 13))}` }),
    },
    { id: 'dash-api', label: "dashboard: the big API's page", request: () => dashApi(apiId) },
    !!c.dashboard && { id: 'dash-api-21', label: "dashboard: the big API's page, 21st page", request: () => dashApi(apiId, c.dashboard) },
    {
      id: 'dash-key',
      label: "dashboard: a key's page",
      request: (i) => ({ method: 'GET', path: `/dashboard/keys/${q(keyOf(input, i + 19))}`, dashboard: true }),
    },
    {
      id: 'dash-search-key',
      label: "dashboard: the big API's key search, by a key's id",
      request: (i) => ({ method: 'GET', path: `/dashboard/apis/${q(apiId)}?q=${q(keyOf(input, i + 29))}`, dashboard: true }),
    },
    {
      id: 'dash-search-identity',
      label: "dashboard: the big API's key search, by an externalId",
      request: () => ({ method: 'GET', path: `/dashboard/apis/${q(apiId)}?q=${q(input.externalId)}`, dashboard: true }),
    },
    {
      id: 'dash-audit',
      label: 'dashboard: the audit log page',
      request: () => ({ method: 'GET', path: '/dashboard/audit-log', dashboard: true }),
    },
    {
      id: 'dash-audit-target',
      label: "dashboard: the audit log page, filtered by a key's id",
      request: (i) => ({ method: 'GET', path: `/dashboard/audit-log?targetId=${q(keyOf(input, i + 23))}`, dashboard: true }),
    },
  ];
}

function identityAndRoleReads(externalId: string): Read[] {
  const digits = externalId.replace(/\D/g, '');
  return [
    {
      id: 'v1-identities',
      label: 'v1 identities.listIdentities, first page',
      request: () => ({ method: 'GET', path: '/v1/identities.listIdentities' }),
    },
    {
      id: 'v2-identities',
      label: 'v2 identities.listIdentities, first page',
      request: () => ({ method: 'POST', path: '/v2/identities.listIdentities', body: {} }),
    },
    {
      id: 'v2-identities-search',
      label: "v2 identities.listIdentities, search (an externalId's digits)",
      request: () => ({ method: 'POST', path: '/v2/identities.listIdentities', body: { search: digits } }),
    },
    {
      id: 'v1-roles',
      label: 'v1 permissions.listRoles (every role)',
      request: () => ({ method: 'GET', path: '/v1/permissions.listRoles' }),
    },
    {
      id: 'v2-roles',
      label: 'v2 permissions.listRoles, first page',
      request: () => ({ method: 'POST', path: '/v2/permissions.listRoles', body: {} }),
    },
  ];
}

/** The value at rank ⌈q·n⌉ of the sorted values (nearest rank). */
const quantile = (sorted: number[], p: number): number => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];

async function measure(input: ReadsInput, read: Read): Promise<ReadResult> {
  const first = await send(input, read.request(0));
  for (let i = 1; i < WARM; i++) await send(input, read.request(i));
  const times: number[] = [];
  for (let i = 0; i < input.repeat; i++) times.push((await send(input, read.request(WARM + i))).ms);
  times.sort((a, b) => a - b);
  const r = {
    id: read.id,
    label: read.label,
    firstMs: first.ms,
    p50Ms: quantile(times, 0.5),
    p95Ms: quantile(times, 0.95),
    maxMs: times.at(-1)!,
    runs: times.length,
  };
  console.log(
    `   ${read.label.padEnd(62)} p50 ${fmt(r.p50Ms, 1)} ms, p95 ${fmt(r.p95Ms, 1)} ms, max ${fmt(r.maxMs, 1)} ms (first ${fmt(r.firstMs, 1)} ms)`,
  );
  return r;
}

/** Wall time of `keyhold audit list --workspace W` (its own process), `runs` times. */
async function cliAuditList(input: ReadsInput, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const child = track(
      spawn(process.execPath, [join(ROOT, 'bin', 'keyhold.js'), 'audit', 'list', '--workspace', input.workspaceId, '--json'], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: input.databaseUrl },
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
    );
    await exited(child);
    if (child.exitCode !== 0) throw new Error(`keyhold audit list exited with ${child.exitCode ?? child.signalCode}`);
    times.push(performance.now() - started);
  }
  return times;
}

export async function benchReads(input: ReadsInput): Promise<{ figures: Figure[]; results: ReadResult[]; cliMs: number[] }> {
  console.log(`\n== reads: ${input.repeat} times each after ${WARM} unmeasured, one at a time`);
  const results: ReadResult[] = [];
  for (const read of await reads(input)) results.push(await measure(input, read));
  const cliMs = await cliAuditList(input, 3);
  console.log(`   keyhold audit list (CLI, its own process): ${cliMs.map((t) => `${fmt(t, 0)} ms`).join(', ')}`);
  const figures = results.map((r) =>
    figure(`read-${r.id}`, `read: ${r.label}, p95`, r.p95Ms, 'ms', {
      digits: 1,
      note: `p50 ${fmt(r.p50Ms, 1)}, max ${fmt(r.maxMs, 1)}, first ${fmt(r.firstMs, 1)} ms`,
      target: { op: '≤', value: READ_TARGET_MS },
    }),
  );
  figures.push(
    figure('read-cli-audit', 'read: keyhold audit list (CLI process, Node start included), median of 3', median(cliMs), 'ms', {
      digits: 0,
    }),
  );
  return { figures, results, cliMs };
}
