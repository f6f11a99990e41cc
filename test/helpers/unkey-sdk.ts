import assert from 'node:assert/strict';
import { v1ShapeProblems } from './unkey-shapes.ts';

/** What every @unkey/api method resolves to: `{result}` on a 2xx, else `{error}` (the body of the 4xx/5xx). */
export interface SdkResult<T> {
  result?: T;
  error?: { code: string; message: string; docs: string; requestId: string };
}

/**
 * The `result` of an SDK call that must succeed: asserts `error` is undefined and that `result` has the shape
 * @unkey/api declares for `<method> /v1/<operation>` (required members present, every member of its declared type,
 * no `null` where v1 has none).
 */
export function expectV1<T>(res: SdkResult<T>, operation: string, method: 'get' | 'post', status: '200' | '202' = '200'): T {
  assert.equal(res.error, undefined, `${operation} failed: ${JSON.stringify(res.error)}`);
  assert.ok(res.result !== undefined, `${operation} resolved without a result`);
  assert.deepEqual(v1ShapeProblems(operation, method, res.result, status), [], `${operation} answered ${JSON.stringify(res.result)}`);
  return res.result;
}

/** The `error` of an SDK call that must fail with `code`: every member a v1 client reads is defined. */
export function expectV1Error(res: SdkResult<unknown>, code: string): NonNullable<SdkResult<unknown>['error']> {
  assert.equal(res.result, undefined, `expected ${code}, got the result ${JSON.stringify(res.result)}`);
  const { error } = res;
  assert.ok(error, 'neither result nor error');
  assert.equal(error.code, code, JSON.stringify(error));
  assert.equal(typeof error.message, 'string', 'error.message');
  assert.ok(error.message.length > 0, 'error.message is empty');
  assert.match(error.docs, /^https:\/\//, 'error.docs is a URL');
  assert.match(error.requestId, /^req_/, 'error.requestId');
  return error;
}

/**
 * An operation @unkey/api 0.38 declares in its OpenAPI types but has no method for (apis.deleteKeys,
 * keys.whoami): sent as the SDK's private `fetch` sends every request (same headers, JSON body, same handling
 * of 2xx and 4xx), so it reads as a method of the SDK would.
 */
export async function sdkStyleCall<T>(baseUrl: string, rootKey: string, operation: string, body: unknown): Promise<SdkResult<T>> {
  const res = await fetch(`${baseUrl}/v1/${operation}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Authorization: `Bearer ${rootKey}`,
      'Unkey-Telemetry-SDK': '@unkey/api@0.38.0',
      'Unkey-Telemetry-Runtime': `node@${process.version}`,
    },
    body: JSON.stringify(body),
  });
  if (res.status >= 200 && res.status <= 299) return { result: (await res.json()) as T };
  return (await res.json()) as SdkResult<T>;
}

/** Polls `check` every 25 ms until it holds (or `timeoutMs` pass: then fails naming `what`). */
export async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
