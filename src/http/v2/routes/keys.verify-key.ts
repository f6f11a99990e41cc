import { invalid } from '../../../domain/errors.ts';
import { parsePermissionQueryText } from '../../../domain/permission-query.ts';
import { can, type Caller } from '../../../services/caller.ts';
import { rehashMigratedKey } from '../../../services/migrations/lazy-rehash.ts';
import { configuredLimits } from '../../../services/verification/configured-limits.ts';
import type { KeyRecord } from '../../../services/verification/key-record.ts';
import type { VerifyRequest } from '../../../services/verification/verifier.ts';
import type { App, Deps } from '../../types.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import {
  VERIFY_V2_BODY_LIMIT,
  verifierRequest,
  verifyKeyV2Data,
  VerifyKeyV2Body,
  VerifyKeyV2Data,
  type VerifyKeyV2Input,
} from '../verify-data.ts';

/** The permission query of a v2 body, parsed (a syntax error is a 400 locating it, whatever the key). */
function parsedQuery(text: string | undefined): VerifyRequest['authorization'] {
  if (text === undefined) return undefined;
  const parsed = parsePermissionQueryText(text);
  if ('error' in parsed) throw invalid([{ path: '/permissions', message: `permission query syntax error: ${parsed.error}` }]);
  return { permissions: parsed.query };
}

/**
 * keys.verifyKey in v2 terms, through v1's verifier (same checks, credits and limits). The key must be of the
 * caller's workspace and the root key must grant `api.<its api>.verify_key`; otherwise the answer is the bare
 * NOT_FOUND of an unknown key, decided before anything is spent or recorded. A key not found with a
 * `migrationId` is looked up among that migration's foreign hashes, rehashed, and verified once more.
 */
export async function verifyKeyV2(deps: Deps, caller: Caller, body: VerifyKeyV2Input) {
  const req = verifierRequest(body, parsedQuery(body.permissions));
  let found: KeyRecord | undefined;
  const authorize = (record: KeyRecord): boolean => {
    found = record;
    return record.workspaceId === caller.workspaceId && can(caller, `api.${record.apiId}.verify_key`);
  };
  let result = await deps.verifier.verify(req, Date.now(), authorize);
  if (
    found === undefined &&
    body.migrationId !== undefined &&
    (await rehashMigratedKey(deps.store.db, caller.workspaceId, body.migrationId, body.key))
  ) {
    result = await deps.verifier.verify(req, Date.now(), authorize);
  }
  if (result.code === 'NOT_FOUND' || found === undefined) return { valid: false, code: 'NOT_FOUND' as const };
  const rows = found.limits.size > 0 ? await configuredLimits(deps.store.db, found.id, found.identity?.id) : [];
  return verifyKeyV2Data(result, found, req, rows);
}

export const VERIFY_V2_PATH = '/v2/keys.verifyKey';

/** Over HTTP, JSON bodies of this operation are answered by the lane (http/lane-operations.ts); this route answers the rest and app.inject(). */
export default function v2KeysVerifyKey(app: App, deps: Deps) {
  app.post(
    VERIFY_V2_PATH,
    {
      bodyLimit: VERIFY_V2_BODY_LIMIT,
      schema: {
        ...v2Requires(
          'Verify a key',
          "`api.*.verify_key` or `api.<apiId>.verify_key` (of the key's API). Without it, or for a key of another workspace, the answer is " +
            '200 `{valid: false, code: "NOT_FOUND"}`, exactly as for an unknown key, and nothing is spent or recorded. ' +
            "Checks as v1's keys.verifyKey: DISABLED, EXPIRED, INSUFFICIENT_PERMISSIONS, RATE_LIMITED, USAGE_EXCEEDED, VALID.",
        ),
        body: VerifyKeyV2Body,
        response: v2Responses(VerifyKeyV2Data),
      },
    },
    async (req) => ok(req.id, await verifyKeyV2(deps, req.caller, req.body)),
  );
}
