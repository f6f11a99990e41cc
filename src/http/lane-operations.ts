import type { IncomingMessage } from 'node:http';
import fastJsonStringify from 'fast-json-stringify';
import { AppError } from '../domain/errors.ts';
import type { Caller } from '../services/caller.ts';
import { limit, type LimitInput } from '../services/ratelimits/limit.ts';
import type { Verifier, VerifyRequest } from '../services/verification/verifier.ts';
import type { RootKeyGuard } from '../services/workspaces/root-key-guard.ts';
import type { Validate } from './input-guards.ts';
import type { LaneHeaders, LaneOperation } from './lane.ts';
import { LimitResult } from './schemas/ratelimits.ts';
import { VerifyKeyResult } from './schemas/keys.ts';
import type { Deps } from './types.ts';
import { answerVerifyKey, VERIFY_BODY_LIMIT, VERIFY_PATH } from './v1/routes/keys.verify-key.ts';
import { RATELIMIT_LIMIT_PATH } from './v1/routes/ratelimits.limit.ts';
import { VERIFY_V2_PATH, verifyKeyV2 } from './v2/routes/keys.verify-key.ts';
import { VERIFY_V2_BODY_LIMIT, VerifyKeyV2Data, type VerifyKeyV2Input } from './v2/verify-data.ts';
import { ok, v2Responses } from './v2/envelope.ts';

/**
 * The largest ratelimits.limit body the lane takes. Its route takes up to the app's bodyLimit (5 MiB); a
 * limit request is a few hundred bytes, and larger bodies still reach the route, which answers them as before.
 */
export const LIMIT_LANE_MAX_BODY = 64 * 1024;

/** keys.verifyKey in the lane: public (the key is the credential), bodies up to its route's limit. */
export function verifyKeyOperation(verifier: Verifier, validate: Validate): LaneOperation {
  return {
    path: VERIFY_PATH,
    maxBody: VERIFY_BODY_LIMIT,
    validate,
    serialize: fastJsonStringify(VerifyKeyResult) as (result: unknown) => string,
    run: (body, _caller, requestId) => answerVerifyKey(verifier, body as VerifyRequest, requestId),
  };
}

/**
 * ratelimits.limit in the lane: authenticated by the hooks' own RootKeyGuard (hooks.ts) before the body is
 * parsed, with the 429's Retry-After the hooks set; then the route's service call.
 */
export function ratelimitsLimitOperation(guard: RootKeyGuard, ratelimits: Deps['ratelimits'], validate: Validate): LaneOperation {
  return {
    path: RATELIMIT_LIMIT_PATH,
    maxBody: LIMIT_LANE_MAX_BODY,
    validate,
    serialize: fastJsonStringify(LimitResult) as (result: unknown) => string,
    authenticate: (req, requestId, headers) => authenticate(guard, req, requestId, headers),
    run: (body, caller) => limit(ratelimits, caller as Caller, body as LimitInput),
  };
}

/**
 * v2's keys.verifyKey in the lane: authenticated as ratelimits.limit is (a root key with verify_key), then the
 * route's own function (http/v2/routes/keys.verify-key.ts) and its v2 envelope; errors take v2's envelope
 * from the path (http/errors.ts).
 */
export function verifyKeyV2Operation(guard: RootKeyGuard, deps: Deps, validate: Validate): LaneOperation {
  return {
    path: VERIFY_V2_PATH,
    maxBody: VERIFY_V2_BODY_LIMIT,
    validate,
    serialize: fastJsonStringify(v2Responses(VerifyKeyV2Data)[200]) as (result: unknown) => string,
    authenticate: (req, requestId, headers) => authenticate(guard, req, requestId, headers),
    run: async (body, caller, requestId) => ok(requestId, await verifyKeyV2(deps, caller as Caller, body as VerifyKeyV2Input)),
  };
}

/** As the hooks' onRequest: the caller of the Authorization header from the client's address (Fastify's request.ip). */
async function authenticate(guard: RootKeyGuard, req: IncomingMessage, requestId: string, headers: LaneHeaders): Promise<Caller> {
  try {
    return await guard.authenticate(req.headers.authorization, requestId, req.socket.remoteAddress ?? '');
  } catch (err) {
    if (err instanceof AppError && err.kind === 'limit/rate-limited') headers['retry-after'] = String(guard.retryAfterSeconds());
    throw err;
  }
}
