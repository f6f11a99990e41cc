import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Response, World } from './harness.ts';
import { cachedRootKey, unrelatedPermissions } from './security.ts';
import { OPERATOR } from './harness.ts';
import { revokeRootKey, setRootKeyPermissions } from '../../src/services/workspaces/root-key-changes.ts';

/** Asserts a v2 error answer: status, `type` (after https://unkey.com/docs/errors/), the request id, and `errors` exactly on a 400. */
export function assertV2Error(r: Response, status: number, type: string): void {
  assert.equal(r.status, status, r.body);
  assert.equal(r.json.error.status, status);
  assert.equal(r.json.error.type, `https://unkey.com/docs/errors/${type}`);
  assert.equal(typeof r.json.error.title, 'string');
  assert.equal(typeof r.json.error.detail, 'string');
  assert.match(r.json.meta.requestId, /^req_/);
  assert.equal(r.headers['x-request-id'], r.json.meta.requestId);
  if (status === 400) assert.ok(Array.isArray(r.json.error.errors), 'a 400 lists its problems');
  else assert.equal(r.json.error.errors, undefined);
}

/** Asserts a v2 success answer and returns its `data`. */
export function v2Data<T = Record<string, unknown>>(r: Response): T {
  assert.equal(r.status, 200, r.body);
  assert.match(r.json.meta.requestId, /^req_/);
  return r.json.data as T;
}

export interface V2SecurityCase {
  /** A valid body for `path`, against resources of `w.workspaceId` (created here as needed). */
  body(w: World): Promise<unknown>;
  path: string;
  /** A permission the operation requires; a root key without it gets 403 naming it (or `masked`: v2's 404 of that type). */
  permission: string;
  masked?: string;
  /** The body naming a resource of another workspace (made with `other.root`), sent with `w.root`: 404 of this type. */
  foreign?: { body(w: World, other: { workspaceId: string; root: string }): Promise<unknown>; type: string };
}

/**
 * The security tests of every authenticated v2 operation: no or malformed Authorization (400), unknown and
 * revoked root keys (401), expired (403), a cached root key revoked, expired or narrowed (refused on the next
 * request), missing permission (403, or v2's masking 404), another workspace's resource (404).
 */
export function v2SecurityTests(getWorld: () => World, c: V2SecurityCase): void {
  const send = async (key: string | null) => {
    const w = getWorld();
    return w.post(c.path, await c.body(w), key);
  };
  test('no root key → 400 authentication/missing', async () => assertV2Error(await send(null), 400, 'unkey/authentication/missing'));
  test('malformed Authorization → 400 authentication/malformed', async () => {
    const w = getWorld();
    const res = await w.app.inject({
      method: 'POST',
      url: c.path,
      payload: JSON.stringify(await c.body(w)),
      headers: { authorization: 'Basic abc', 'content-type': 'application/json' },
    });
    assertV2Error(
      { status: res.statusCode, json: res.json(), headers: res.headers, body: res.body },
      400,
      'unkey/authentication/malformed',
    );
  });
  test('unknown root key → 401 key_not_found', async () =>
    assertV2Error(await send('kh_root_1111111111111111111111111'), 401, 'unkey/authentication/key_not_found'));
  test('revoked root key → 401 key_not_found', async () =>
    assertV2Error(await send(await getWorld().revokedRootKey()), 401, 'unkey/authentication/key_not_found'));
  test('expired root key → 403 forbidden', async () =>
    assertV2Error(await send(await getWorld().rootKey(['*'], { expiresAt: Date.now() - 1000 })), 403, 'unkey/authorization/forbidden'));
  test('a root key in use, then revoked → the next request 401 key_not_found', async () => {
    const { rootKey, rootKeyId } = await cachedRootKey(getWorld());
    await revokeRootKey(getWorld().store.db, rootKeyId, OPERATOR);
    assertV2Error(await send(rootKey), 401, 'unkey/authentication/key_not_found');
  });
  test('a root key in use, then expired → 403 forbidden from its expiry on', async () => {
    const expiresAt = Date.now() + 1_000; // the warm-up request must end before it: under a loaded CI it has taken over 250 ms
    const { rootKey } = await cachedRootKey(getWorld(), expiresAt);
    await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 1));
    assertV2Error(await send(rootKey), 403, 'unkey/authorization/forbidden');
  });
  test(`a root key in use, then narrowed → the next request ${c.masked ? `404 ${c.masked}` : '403'}`, async () => {
    const { rootKey, rootKeyId } = await cachedRootKey(getWorld());
    await setRootKeyPermissions(getWorld().store.db, rootKeyId, unrelatedPermissions(c.permission), OPERATOR);
    const res = await send(rootKey);
    assertV2Error(res, c.masked ? 404 : 403, c.masked ?? 'unkey/authorization/insufficient_permissions');
  });
  test(`missing permission → ${c.masked ? `404 ${c.masked}` : `403 naming ${c.permission}`}`, async () => {
    const res = await send(await getWorld().rootKey(unrelatedPermissions(c.permission)));
    if (c.masked) return assertV2Error(res, 404, c.masked);
    assertV2Error(res, 403, 'unkey/authorization/insufficient_permissions');
    assert.ok(res.json.error.detail.includes(c.permission), `${res.json.error.detail} should name ${c.permission}`);
  });
  if (c.foreign) {
    const foreign = c.foreign;
    test("another workspace's resource → 404", async () => {
      const w = getWorld();
      const other = await w.otherWorkspace();
      assertV2Error(await w.post(c.path, await foreign.body(w, other), w.root), 404, foreign.type);
    });
  }
}

/** The `location` of each problem of a v2 400. */
export const v2Locations = (r: Response): string[] =>
  (r.json.error.errors as unknown as Array<{ location: string }>).map((e) => e.location);
