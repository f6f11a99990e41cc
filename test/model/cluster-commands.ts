import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sleep } from '../helpers/timing.ts';
import { send, type ModelWorld } from './model-world.ts';
import { verifyRequest } from './key-commands.ts';

/**
 * The two-node variant: each step goes to one of two nodes sharing one store, and what must hold across nodes is
 * checked (docs/key-verification.md): credits are never over-spent (the VALID verifications of a key spend at most
 * the credits it was granted, and exactly: credits live in the store), a key that was not revoked is answered
 * exactly as one node would, and a revoked (disabled or deleted) key is never VALID on either node more than 1 s
 * after its revocation was answered (within that second a node may still answer from its cache).
 */

export const PROPAGATION_MS = 1000;

export interface ClusterKey {
  keyId: string;
  key: string;
  granted: number;
  spent: number;
  deleted: boolean;
  enabled: boolean;
  /** When the last disable or delete was answered (ms), or the last enable: until 1 s after, a node may not know it. */
  changedAt: number;
}
export interface ClusterModel {
  keys: ClusterKey[];
}

type Cmd = fc.AsyncCommand<ClusterModel, ModelWorld>;
const picked = (m: ClusterModel, pick: number): ClusterKey => m.keys[pick % m.keys.length];
const hasKeys = (m: ClusterModel): boolean => m.keys.length > 0;
/** Whether every node must know the key's latest state by now. */
const settled = (k: ClusterKey): boolean => Date.now() - k.changedAt > PROPAGATION_MS;

/** What a verification of `k` costing `cost` must answer, or undefined when a node may still hold an older state. */
function expectedCode(k: ClusterKey, cost: number): string | undefined {
  if (!settled(k)) return undefined;
  if (k.deleted) return 'NOT_FOUND';
  if (!k.enabled) return 'DISABLED';
  return cost > k.granted - k.spent ? 'USAGE_EXCEEDED' : 'VALID';
}

/** Applies one verification's answer to the model, checking what must hold whatever the nodes' caches hold. */
function account(k: ClusterKey, cost: number, seen: { valid: boolean; code: string; remaining?: number | null }, what: string): void {
  const expected = expectedCode(k, cost);
  if (expected) assert.equal(seen.code, expected, `${what}: settled key`);
  if (!seen.valid) return;
  assert.ok(!(k.deleted || !k.enabled) || !settled(k), `${what}: a key revoked over ${PROPAGATION_MS} ms ago was VALID`);
  k.spent += cost;
  assert.ok(k.spent <= k.granted, `${what}: ${k.spent} credits spent of ${k.granted} granted`);
  assert.equal(seen.remaining, k.granted - k.spent, `${what}: remaining after a VALID verification`);
}

export class ClusterCreate implements Cmd {
  readonly spec: { node: number; version: 1 | 2; credits: number };
  constructor(spec: ClusterCreate['spec']) {
    this.spec = spec;
  }
  check = (): boolean => true;
  async run(m: ClusterModel, r: ModelWorld): Promise<void> {
    const { node, version, credits } = this.spec;
    const body = version === 1 ? { apiId: r.apis[0], remaining: credits } : { apiId: r.apis[0], credits: { remaining: credits } };
    const res = await send<{ keyId: string; key: string; data: { keyId: string; key: string } }>(
      r,
      'POST',
      `/v${version}/keys.createKey`,
      body,
      r.nodes[node],
    );
    assert.equal(res.status, 200, res.body);
    const { keyId, key } = version === 1 ? res.json : res.json.data;
    m.keys.push({ keyId, key, granted: credits, spent: 0, deleted: false, enabled: true, changedAt: 0 });
  }
  toString = (): string => `create ${JSON.stringify(this.spec)}`;
}

export class ClusterVerify implements Cmd {
  readonly spec: { node: number; version: 1 | 2; pick: number; cost: number };
  constructor(spec: ClusterVerify['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: ClusterModel, r: ModelWorld): Promise<void> {
    const { node, version, pick, cost } = this.spec;
    const k = picked(m, pick);
    const seen = await verifyRequest(r, { version, cost }, k.key, r.nodes[node]);
    account(k, cost, seen, this.toString());
  }
  toString = (): string => `verify ${JSON.stringify(this.spec)}`;
}

/** `n` concurrent verifications (cost 1) of one key, alternating between the nodes. */
export class ClusterBurst implements Cmd {
  readonly spec: { pick: number; n: number };
  constructor(spec: ClusterBurst['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: ClusterModel, r: ModelWorld): Promise<void> {
    const k = picked(m, this.spec.pick);
    const left = k.granted - k.spent;
    const sure = expectedCode(k, 1) !== undefined && !k.deleted && k.enabled;
    const answers = await Promise.all(
      Array.from({ length: this.spec.n }, (_, i) => verifyRequest(r, { version: 1, cost: 1 }, k.key, r.nodes[i % r.nodes.length])),
    );
    const valid = answers.filter((a) => a.valid).length;
    if (sure) assert.equal(valid, Math.min(this.spec.n, left), `${this.toString()}: VALID answers of ${left} credits left`);
    assert.ok(valid <= left, `${this.toString()}: ${valid} VALID answers with ${left} credits left`);
    const spent = answers.filter((a) => a.valid).map((a) => a.remaining!);
    assert.deepEqual(
      spent.sort((a, b) => b - a),
      Array.from({ length: valid }, (_, i) => left - 1 - i),
      `${this.toString()}: remaining`,
    );
    k.spent += valid;
  }
  toString = (): string => `burst ${JSON.stringify(this.spec)}`;
}

export class ClusterIncrement implements Cmd {
  readonly spec: { node: number; pick: number; value: number };
  constructor(spec: ClusterIncrement['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: ClusterModel, r: ModelWorld): Promise<void> {
    const { node, pick, value } = this.spec;
    const k = picked(m, pick);
    const res = await send<{ remaining: number }>(
      r,
      'POST',
      '/v1/keys.updateRemaining',
      { keyId: k.keyId, op: 'increment', value },
      r.nodes[node],
    );
    assert.equal(res.status, k.deleted ? 404 : 200, `${this.toString()}: ${res.body}`);
    if (k.deleted) return;
    k.granted += value;
    assert.equal(res.json.remaining, k.granted - k.spent, this.toString());
  }
  toString = (): string => `increment ${JSON.stringify(this.spec)}`;
}

/** Disable, enable or delete a key through one node. */
export class ClusterChange implements Cmd {
  readonly spec: { node: number; version: 1 | 2; pick: number; change: 'disable' | 'enable' | 'delete' };
  constructor(spec: ClusterChange['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: ClusterModel, r: ModelWorld): Promise<void> {
    const { node, version, pick, change } = this.spec;
    const k = picked(m, pick);
    const [op, body] = change === 'delete' ? ['deleteKey', {}] : ['updateKey', { enabled: change === 'enable' }];
    const res = await send(r, 'POST', `/v${version}/keys.${op}`, { keyId: k.keyId, ...body }, r.nodes[node]);
    assert.equal(res.status, k.deleted ? 404 : 200, `${this.toString()}: ${res.body}`);
    if (k.deleted) return;
    if (change === 'delete') k.deleted = true;
    else k.enabled = change === 'enable';
    k.changedAt = Date.now();
  }
  toString = (): string => `${this.spec.change} ${JSON.stringify(this.spec)}`;
}

export class ClusterWait implements Cmd {
  readonly ms: number;
  constructor(ms: number) {
    this.ms = ms;
  }
  check = (): boolean => true;
  run = (): Promise<void> => sleep(this.ms);
  toString = (): string => `wait ${this.ms} ms`;
}

/**
 * After a sequence: once 1 s has passed since the last change, every key is answered on every node as the store
 * says (a revoked key is refused everywhere), and the credits left are exactly those granted minus those spent.
 */
export async function clusterSettled(m: ClusterModel, r: ModelWorld): Promise<void> {
  const last = Math.max(0, ...m.keys.map((k) => k.changedAt));
  await sleep(Math.max(0, last + PROPAGATION_MS + 5 - Date.now()));
  for (const k of m.keys)
    for (const node of r.nodes) {
      const seen = await verifyRequest(r, { version: 1, cost: 0 }, k.key, node);
      const expected = k.deleted ? 'NOT_FOUND' : k.enabled ? 'VALID' : 'DISABLED';
      assert.equal(seen.code, expected, `after the sequence, ${node.name}, key ${k.keyId}`);
      if (!k.deleted) assert.equal(seen.remaining, k.granted - k.spent, `after the sequence, ${node.name}: credits of ${k.keyId}`);
    }
}

const node = fc.nat({ max: 1 });
const version = fc.constantFrom(1 as const, 2 as const);
const pick = fc.nat({ max: 3 });

export function clusterCommands(): fc.Arbitrary<Cmd>[] {
  return [
    fc.record({ node, version, credits: fc.integer({ min: 1, max: 6 }) }).map((s) => new ClusterCreate(s)),
    fc.record({ node, version, pick, cost: fc.integer({ min: 1, max: 2 }) }).map((s) => new ClusterVerify(s)),
    fc.record({ node, version, pick, cost: fc.integer({ min: 1, max: 2 }) }).map((s) => new ClusterVerify(s)),
    fc.record({ pick, n: fc.integer({ min: 2, max: 8 }) }).map((s) => new ClusterBurst(s)),
    fc.record({ node, pick, value: fc.integer({ min: 1, max: 3 }) }).map((s) => new ClusterIncrement(s)),
    fc
      .record({ node, version, pick, change: fc.constantFrom('disable' as const, 'enable' as const, 'delete' as const) })
      .map((s) => new ClusterChange(s)),
    fc.constantFrom(50, 300, 1100).map((ms) => new ClusterWait(ms)),
  ];
}
