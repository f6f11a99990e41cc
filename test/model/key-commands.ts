import assert from 'node:assert/strict';
import type fc from 'fast-check';
import {
  changeLinks,
  effective,
  LONG_WINDOW_MS,
  queryText,
  reroll,
  sorted,
  updateCredits,
  verify,
  type CreditOp,
  type LinkKind,
  type LinkMode,
  type Model,
  type ModelKey,
  type Query,
} from './key-model.ts';
import { send, type Answer, type ModelWorld } from './model-world.ts';

// The model's commands: each sends one request of v1 or v2 to the app and compares the answer with what the
// model (key-model.ts) predicts, then applies the change to the model. A command naming a key picks it by
// `pick` modulo the keys created so far (deleted ones included), so shrinking keeps sequences meaningful.

export type Version = 1 | 2;
type Cmd = fc.AsyncCommand<Model, ModelWorld>;

export const picked = (m: Model, pick: number): ModelKey => m.keys[pick % m.keys.length];
export const hasKeys = (m: Model): boolean => m.keys.length > 0;

/** The attributes a verification (not NOT_FOUND) or a getKey answers, in the terms both versions share. */
export interface Seen {
  keyId?: string;
  enabled?: boolean;
  remaining?: number | null;
  permissions?: string[];
  roles?: string[];
  externalId?: string;
}

export function assertAttributes(k: ModelKey, seen: Seen, what: string): void {
  const expected: Seen = {
    keyId: k.keyId,
    enabled: k.enabled,
    remaining: k.remaining ?? undefined,
    permissions: effective(k),
    roles: sorted(k.roles),
    externalId: k.externalId,
  };
  const got: Seen = {
    keyId: seen.keyId,
    enabled: seen.enabled,
    remaining: seen.remaining ?? undefined,
    permissions: sorted(seen.permissions ?? []),
    roles: sorted(seen.roles ?? []),
    externalId: seen.externalId,
  };
  assert.deepEqual(got, expected, `${what}: attributes`);
}

/** Asserts a status; 404 is the key's (v1 `data/key-not-found`, v2 `key_not_found`), 'role-404' a role's. */
export function assertStatus(res: Answer<unknown>, status: number | 'role-404', what: string): void {
  assert.equal(res.status, status === 'role-404' ? 404 : status, `${what}: ${res.body}`);
  if (status === 404) assert.match(res.body, /key-not-found|key_not_found/, `${what}: ${res.body}`);
  if (status === 'role-404') assert.match(res.body, /role-not-found|role_not_found/, `${what}: ${res.body}`);
}

export interface CreateSpec {
  version: Version;
  api: number;
  remaining: number | null;
  limit: number | null;
  direct: string[];
  roles: string[];
  externalId?: string;
  enabled: boolean;
}

export class Create implements Cmd {
  readonly spec: CreateSpec;
  constructor(spec: CreateSpec) {
    this.spec = spec;
  }
  check = (): boolean => true;
  async run(m: Model, r: ModelWorld): Promise<void> {
    const s = this.spec;
    const externalId = s.externalId && `${s.externalId}-${m.tag}`;
    const common = { apiId: r.apis[s.api], permissions: s.direct, roles: s.roles, externalId, enabled: s.enabled };
    const body =
      s.version === 1
        ? { ...common, remaining: s.remaining ?? undefined, ratelimit: s.limit === null ? undefined : limitV1(s.limit) }
        : { ...common, credits: s.remaining === null ? undefined : { remaining: s.remaining }, ratelimits: limitsV2(s.limit) };
    const res = await send<{ keyId: string; key: string; data: { keyId: string; key: string } }>(
      r,
      'POST',
      `/v${s.version}/keys.createKey`,
      body,
    );
    assertStatus(res, 200, this.toString());
    const { keyId, key } = s.version === 1 ? res.json : res.json.data;
    m.keys.push({
      keyId,
      key,
      api: s.api,
      enabled: s.enabled,
      remaining: s.remaining,
      direct: new Set(s.direct),
      roles: new Set(s.roles),
      limit: s.limit,
      limitName: s.version === 1 ? 'default' : 'model-limit',
      externalId,
      expired: false,
      deleted: false,
    });
  }
  toString = (): string => `create v${this.spec.version} ${JSON.stringify(this.spec)}`;
}

const limitV1 = (limit: number) => ({ type: 'consistent', limit, duration: LONG_WINDOW_MS });
const limitsV2 = (limit: number | null) =>
  limit === null ? undefined : [{ name: 'model-limit', limit, duration: LONG_WINDOW_MS, autoApply: true }];

export interface VerifySpec {
  version: Version;
  pick: number;
  /** Verify a key that was never issued. */
  unknown: boolean;
  api?: number;
  query?: Query;
  cost?: number;
}

interface VerifyV1 extends Seen {
  valid: boolean;
  code: string;
  identity?: { externalId: string };
}
interface VerifyV2 {
  data: Omit<VerifyV1, 'remaining'> & { credits?: number };
}

export class Verify implements Cmd {
  readonly spec: VerifySpec;
  constructor(spec: VerifySpec) {
    this.spec = spec;
  }
  check = (m: Model): boolean => this.spec.unknown || hasKeys(m);
  async run(m: Model, r: ModelWorld): Promise<void> {
    const s = this.spec;
    const k = s.unknown ? undefined : picked(m, s.pick);
    const key = k?.key ?? 'model_3ZbqTbYBTgbRZFK3PHnYSQNg';
    const expected = verify(m, k, { api: s.version === 1 ? s.api : undefined, query: s.query, cost: s.cost });
    const seen = await verifyRequest(r, s, key);
    const what = `${this.toString()} → expected ${expected}`;
    assert.equal(seen.code, expected, what);
    assert.equal(seen.valid, expected === 'VALID', what);
    if (k && expected !== 'NOT_FOUND') {
      const { valid: _v, code: _c, identity, ...attributes } = seen;
      if (s.version === 2) attributes.externalId = identity?.externalId;
      assertAttributes(k, attributes, what);
    }
  }
  toString = (): string => `verify v${this.spec.version} ${JSON.stringify(this.spec)}`;
}

/** Sends a verification of `key` as `s` says, on `node`; answers in v1's terms. */
export async function verifyRequest(
  r: ModelWorld,
  s: Omit<VerifySpec, 'pick' | 'unknown'>,
  key: string,
  node = r.nodes[0],
): Promise<VerifyV1> {
  if (s.version === 1) {
    const body = {
      key,
      apiId: s.api === undefined ? undefined : r.apis[s.api],
      authorization: s.query === undefined ? undefined : { permissions: s.query },
      remaining: s.cost === undefined ? undefined : { cost: s.cost },
    };
    const res = await send<VerifyV1>(r, 'POST', '/v1/keys.verifyKey', body, node);
    assert.equal(res.status, 200, res.body);
    r.codes[res.json.code] = (r.codes[res.json.code] ?? 0) + 1;
    return res.json;
  }
  const body = {
    key,
    permissions: s.query === undefined ? undefined : queryText(s.query),
    credits: s.cost === undefined ? undefined : { cost: s.cost },
  };
  const res = await send<VerifyV2>(r, 'POST', '/v2/keys.verifyKey', body, node);
  assert.equal(res.status, 200, res.body);
  const { credits, ...rest } = res.json.data;
  r.codes[rest.code] = (r.codes[rest.code] ?? 0) + 1;
  return { ...rest, remaining: credits };
}

export class Credits implements Cmd {
  readonly spec: { version: Version; pick: number; op: CreditOp; value: number | null };
  constructor(spec: Credits['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: Model, r: ModelWorld): Promise<void> {
    const { version, pick, op, value } = this.spec;
    const k = picked(m, pick);
    const status = updateCredits(k, version, op, value);
    const [path, body] =
      version === 1
        ? ['/v1/keys.updateRemaining', { keyId: k.keyId, op, value }]
        : ['/v2/keys.updateCredits', { keyId: k.keyId, operation: op, value }];
    const res = await send<{ remaining: number | null; data: { remaining: number | null } }>(r, 'POST', path, body);
    assertStatus(res, status, this.toString());
    if (status === 200) assert.equal((version === 1 ? res.json : res.json.data).remaining, k.remaining, this.toString());
  }
  toString = (): string => `credits v${this.spec.version} ${JSON.stringify(this.spec)}`;
}

export class SetEnabled implements Cmd {
  readonly spec: { version: Version; pick: number; enabled: boolean };
  constructor(spec: SetEnabled['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: Model, r: ModelWorld): Promise<void> {
    const { version, pick, enabled } = this.spec;
    const k = picked(m, pick);
    const res = await send(r, 'POST', `/v${version}/keys.updateKey`, { keyId: k.keyId, enabled });
    assertStatus(res, k.deleted ? 404 : 200, this.toString());
    if (!k.deleted) k.enabled = enabled;
  }
  toString = (): string => `${this.spec.enabled ? 'enable' : 'disable'} v${this.spec.version} ${JSON.stringify(this.spec)}`;
}

export class Links implements Cmd {
  readonly spec: { version: Version; pick: number; kind: LinkKind; mode: LinkMode; items: string[] };
  constructor(spec: Links['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: Model, r: ModelWorld): Promise<void> {
    const { version, pick, kind, mode, items } = this.spec;
    const k = picked(m, pick);
    const status = changeLinks(k, version, kind, mode, items);
    const named = version === 2 ? items : items.map((item) => (kind === 'roles' ? { name: item } : { slug: item }));
    const path = `/v${version}/keys.${mode}${kind === 'roles' ? 'Roles' : 'Permissions'}`;
    const res = await send<{ data: Array<{ name: string; slug: string }> }>(r, 'POST', path, { keyId: k.keyId, [kind]: named });
    assertStatus(res, status, this.toString());
    if (status === 200 && version === 2) {
      const names = res.json.data.map((item) => (kind === 'roles' ? item.name : item.slug));
      assert.deepEqual(names, sorted(kind === 'roles' ? k.roles : k.direct), `${this.toString()}: the resulting set`);
    }
  }
  toString = (): string => `${this.spec.mode} ${this.spec.kind} v${this.spec.version} ${JSON.stringify(this.spec)}`;
}

export class Reroll implements Cmd {
  readonly spec: { pick: number; grace: number };
  constructor(spec: Reroll['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: Model, r: ModelWorld): Promise<void> {
    const k = picked(m, this.spec.pick);
    const res = await send<{ data: { keyId: string; key: string } }>(r, 'POST', '/v2/keys.rerollKey', {
      keyId: k.keyId,
      expiration: this.spec.grace,
    });
    assertStatus(res, k.deleted ? 404 : 200, this.toString());
    if (!k.deleted) m.keys.push(reroll(k, this.spec.grace, res.json.data));
  }
  toString = (): string => `reroll v2 ${JSON.stringify(this.spec)}`;
}

export class Delete implements Cmd {
  readonly spec: { version: Version; pick: number; permanent: boolean };
  constructor(spec: Delete['spec']) {
    this.spec = spec;
  }
  check = hasKeys;
  async run(m: Model, r: ModelWorld): Promise<void> {
    const { version, pick, permanent } = this.spec;
    const k = picked(m, pick);
    const res = await send(r, 'POST', `/v${version}/keys.deleteKey`, { keyId: k.keyId, permanent });
    assertStatus(res, k.deleted ? 404 : 200, this.toString());
    k.deleted = true;
  }
  toString = (): string => `delete v${this.spec.version} ${JSON.stringify(this.spec)}`;
}
