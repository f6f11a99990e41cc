import assert from 'node:assert/strict';
import { AppError, type ErrorKind } from '../../src/domain/errors.ts';
import type { ErrorEnvelope } from './json.ts';

/** An error envelope as parsed from a body. */
export type EnvelopeBody = { meta: { requestId: unknown }; error: Record<string, unknown> };

/** The members of `error` in every envelope (SPEC §2); a 400 request/invalid-body adds `errors`. */
export const ENVELOPE_ERROR_MEMBERS = ['code', 'detail', 'docs', 'message', 'requestId', 'status', 'title', 'type'];

/**
 * Asserts the members of an error envelope Unkey v1 clients read (SPEC §2): `message` is `detail`, `docs` is
 * `type`, `requestId` is `meta.requestId`, and `error` has exactly the envelope's members.
 */
export function assertV1ErrorMembers(body: EnvelopeBody, what = ''): void {
  const { error } = body;
  const members = Object.keys(error).filter((m) => m !== 'errors');
  assert.deepEqual(members.sort(), ENVELOPE_ERROR_MEMBERS, `error members ${what}`);
  assert.equal(typeof error.message, 'string', what);
  assert.equal(error.message, error.detail, `error.message = error.detail ${what}`);
  assert.equal(error.docs, error.type, `error.docs = error.type ${what}`);
  assert.equal(error.requestId, body.meta.requestId, `error.requestId = meta.requestId ${what}`);
}

/** The JSON paths of a 400's `error.errors`, sorted and de-duplicated. */
export const paths = (res: { json: ErrorEnvelope }): string[] => [...new Set(res.json.error.errors.map((e) => e.path))].sort();

/** The JSON paths of a 400's `error.errors`, every one in the order given. */
export const allPaths = (res: { json: ErrorEnvelope }): string[] => res.json.error.errors.map((e) => e.path);

/** Asserts a 400 request/invalid-body answer and returns its paths, sorted and de-duplicated. */
export function errorPaths(r: { status: number; body: string; json: ErrorEnvelope }): string[] {
  assert.equal(r.status, 400, r.body);
  assert.equal(r.json.error.type, 'https://keyhold.dev/errors/request/invalid-body');
  return paths(r);
}

/** The AppError `promise` rejects with; fails when it resolves or rejects with anything else. */
export async function appError(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof AppError, `expected an AppError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected an AppError');
}

/** Asserts that `promise` rejects with an AppError of this kind, and returns it. */
export const expectKind = async (promise: Promise<unknown>, kind: ErrorKind): Promise<AppError> => {
  const err = await appError(promise);
  assert.equal(err.kind, kind, err.message);
  return err;
};
