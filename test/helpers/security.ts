import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Response, World } from './harness.ts';
import { ACTIONS, type ResourceType } from '../../src/domain/permissions.ts';
import { assertV1ErrorMembers } from './errors.ts';
import { OPERATOR } from './harness.ts';
import { insertRootKey } from '../../src/services/workspaces/root-keys.ts';
import { revokeRootKey, setRootKeyPermissions } from '../../src/services/workspaces/root-key-changes.ts';

export interface SecurityRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  query?: Record<string, string | number | boolean>;
}

export interface SecurityCase {
  /** A valid request against resources of `w.workspaceId` (created here as needed). */
  request(w: World): Promise<SecurityRequest>;
  /**
   * A permission the route requires (`type.id.action`, or just its action): a root key holding only unrelated
   * permissions (`unrelatedPermissions`) gets 403 naming it.
   */
  permission: string;
  /** The same request against a resource of another workspace (made with `other.root`), sent with `w.root`: must be 404. */
  foreign?(w: World, other: { workspaceId: string; root: string }): Promise<SecurityRequest>;
}

/** The resource type of a permission given as `type.id.action` or as a bare action. */
function typeOf(permission: string): ResourceType {
  const parts = permission.split('.');
  const types = Object.keys(ACTIONS) as ResourceType[];
  const type =
    parts.length === 3 ? types.find((t) => t === parts[0]) : types.find((t) => (ACTIONS[t] as readonly string[]).includes(permission));
  assert.ok(type, `"${permission}" names no resource type or action of src/domain/permissions.ts`);
  return type;
}

/**
 * A root key's permissions unrelated to `required`, computed from the catalog: every action, on any id, of a
 * resource type other than `required`'s (the last such type of ACTIONS). A grant matches type and action, so
 * none of them can satisfy `required`, whichever type it is of.
 */
export function unrelatedPermissions(required: string): string[] {
  const type = typeOf(required);
  const other = (Object.keys(ACTIONS) as ResourceType[]).findLast((t) => t !== type);
  assert.ok(other, 'the permission catalog has a single resource type');
  return ACTIONS[other].map((action) => `${other}.*.${action}`);
}

const send = (w: World, r: SecurityRequest, key: string | null): Promise<Response> =>
  r.method === 'GET' ? w.get(r.path, r.query ?? {}, key) : w.post(r.path, r.body, key);

const assertEnvelope = (r: Response, status: number, type: string) => {
  assert.equal(r.status, status, r.body);
  assert.equal(r.json.error.status, status);
  assert.equal(r.json.error.type, `https://keyhold.dev/errors/${type}`);
  assert.match(r.json.meta.requestId, /^req_/);
  assert.equal(r.headers['x-request-id'], r.json.meta.requestId);
  assertV1ErrorMembers(r.json, r.body);
};

/**
 * A new `*` root key of the world's workspace that has authenticated a request, so its server has cached it (a
 * change must then drop it from the cache: the next request sees the change).
 */
export async function cachedRootKey(w: World, expiresAt?: number): Promise<{ rootKey: string; rootKeyId: string }> {
  const made = await insertRootKey(w.store.db, { workspaceId: w.workspaceId, permissions: ['*'], expiresAt }, OPERATOR);
  const warm = await w.get('/v1/apis.getApi', { apiId: 'api_none' }, made.rootKey);
  assert.equal(warm.status, 404, warm.body);
  return made;
}

/**
 * The security tests every authenticated route runs: no key, malformed, unknown, revoked and expired keys (401),
 * a cached root key revoked, expired or narrowed (refused on the next request), missing permission (403),
 * another workspace's resource (404).
 */
export function securityTests(getWorld: () => World, c: SecurityCase): void {
  test('no root key → 401 auth/missing', async () => {
    const w = getWorld();
    assertEnvelope(await send(w, await c.request(w), null), 401, 'auth/missing');
  });
  test('malformed Authorization → 401 auth/malformed', async () => {
    const w = getWorld();
    const r = await c.request(w);
    const res =
      r.method === 'GET'
        ? await w.app.inject({
            method: 'GET',
            url: r.path,
            query: Object.fromEntries(Object.entries(r.query ?? {}).map(([k, v]) => [k, String(v)])),
            headers: { authorization: 'Basic abc' },
          })
        : await w.app.inject({
            method: 'POST',
            url: r.path,
            payload: JSON.stringify(r.body),
            headers: { authorization: 'Bearer not-a-root-key', 'content-type': 'application/json' },
          });
    assertEnvelope({ status: res.statusCode, json: res.json(), headers: res.headers, body: res.body }, 401, 'auth/malformed');
  });
  test('unknown root key → 401 auth/invalid', async () => {
    const w = getWorld();
    assertEnvelope(await send(w, await c.request(w), 'kh_root_1111111111111111111111111'), 401, 'auth/invalid');
  });
  test('revoked root key → 401 auth/revoked', async () => {
    const w = getWorld();
    assertEnvelope(await send(w, await c.request(w), await w.revokedRootKey()), 401, 'auth/revoked');
  });
  test('expired root key → 401 auth/expired', async () => {
    const w = getWorld();
    assertEnvelope(await send(w, await c.request(w), await w.rootKey(['*'], { expiresAt: Date.now() - 1000 })), 401, 'auth/expired');
  });
  test('a root key in use, then revoked → the next request 401 auth/revoked', async () => {
    const w = getWorld();
    const { rootKey, rootKeyId } = await cachedRootKey(w);
    await revokeRootKey(w.store.db, rootKeyId, OPERATOR);
    assertEnvelope(await send(w, await c.request(w), rootKey), 401, 'auth/revoked');
  });
  test('a root key in use, then expired → 401 auth/expired from its expiry on', async () => {
    const w = getWorld();
    const expiresAt = Date.now() + 1_000; // the warm-up request must end before it: under a loaded CI it has taken over 250 ms
    const { rootKey } = await cachedRootKey(w, expiresAt);
    await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 1));
    assertEnvelope(await send(w, await c.request(w), rootKey), 401, 'auth/expired');
  });
  test(`a root key in use, then narrowed → the next request 403 naming ${c.permission}`, async () => {
    const w = getWorld();
    const { rootKey, rootKeyId } = await cachedRootKey(w);
    await setRootKeyPermissions(w.store.db, rootKeyId, unrelatedPermissions(c.permission), OPERATOR);
    const res = await send(w, await c.request(w), rootKey);
    assertEnvelope(res, 403, 'auth/insufficient-permissions');
  });
  test(`missing permission → 403 naming ${c.permission}`, async () => {
    const w = getWorld();
    const res = await send(w, await c.request(w), await w.rootKey(unrelatedPermissions(c.permission)));
    assertEnvelope(res, 403, 'auth/insufficient-permissions');
    assert.ok(res.json.error.detail.includes(c.permission), `${res.json.error.detail} should name ${c.permission}`);
  });
  if (c.foreign) {
    test("another workspace's resource → 404", async () => {
      const w = getWorld();
      const other = await w.otherWorkspace();
      const res = await send(w, await c.foreign!(w, other), w.root);
      assert.equal(res.status, 404, res.body);
      assert.equal(res.json.error.code, 'NOT_FOUND');
    });
  }
}
