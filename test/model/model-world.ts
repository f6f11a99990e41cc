import { world, type World, type Response } from '../helpers/harness.ts';
import type { App } from '../../src/http/types.ts';
import type { LooseJson } from '../helpers/json.ts';
import { PERMISSIONS, ROLES } from './key-model.ts';

/** One node of the system under test: the app requests are injected into. */
export interface Node {
  name: string;
  app: App;
}

/**
 * What the model's commands drive: a test world (a fresh store and a `*` root key) with two APIs and the
 * model's permissions and roles, and the nodes answering requests (one, or two sharing the store).
 */
export interface ModelWorld {
  dialect: 'sqlite' | 'postgres';
  w: World;
  apis: [string, string];
  nodes: Node[];
  /** Requests sent so far. */
  requests: number;
  /** Verification outcomes seen so far, by code (what the sequences covered). */
  codes: Record<string, number>;
  /** Closes the nodes and removes the store. */
  close(): Promise<void>;
}

/** A world for the model: two APIs, the permissions and roles of key-model.ts. */
export async function modelWorld(dialect: 'sqlite' | 'postgres'): Promise<ModelWorld> {
  const w = await world(dialect);
  const apis: [string, string] = [await w.createApi('model-a'), await w.createApi('model-b')];
  for (const slug of PERMISSIONS) await ok(w.post('/v1/permissions.createPermission', { name: slug }));
  for (const [name, permissions] of Object.entries(ROLES)) await ok(w.post('/v1/permissions.createRole', { name, permissions }));
  return { dialect, w, apis, nodes: [{ name: 'node-1', app: w.app }], requests: 0, codes: {}, close: () => w.close() };
}

async function ok(r: Promise<Response>): Promise<void> {
  const res = await r;
  if (res.status !== 200) throw new Error(`model world: ${res.status} ${res.body}`);
}

/** An answer as the commands read it. */
export interface Answer<T = LooseJson> {
  status: number;
  json: T;
  body: string;
}

/** Sends a request with the world's `*` root key to `node` (default the first). */
export async function send<T = LooseJson>(
  mw: ModelWorld,
  method: 'GET' | 'POST',
  path: string,
  body: Record<string, unknown>,
  node = mw.nodes[0],
): Promise<Answer<T>> {
  mw.requests++;
  const res = await node.app.inject({
    method,
    url: path,
    headers: { authorization: `Bearer ${mw.w.root}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
    query: method === 'GET' ? Object.fromEntries(Object.entries(body).map(([k, v]) => [k, String(v)])) : undefined,
    payload: method === 'POST' ? JSON.stringify(body) : undefined,
  });
  let json: T;
  try {
    json = res.json<T>();
  } catch {
    json = undefined as T;
  }
  return { status: res.statusCode, json, body: res.body };
}
