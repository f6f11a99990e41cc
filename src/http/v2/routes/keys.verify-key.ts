import { invalid } from '../../../domain/errors.ts';
import { parsePermissionQueryText } from '../../../domain/permission-query.ts';
import type { Caller } from '../../../services/caller.ts';
import type { VerifyRequest } from '../../../services/verification/verifier.ts';
import { verifyKeyV2 as verifyKeyV2Service } from '../../../services/verification/verify-key-v2.ts';
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

/** keys.verifyKey v2 for the route and the lane: the body in the service's terms, its answer in v2's (services/verification/verify-key-v2.ts). */
export async function verifyKeyV2(deps: Deps, caller: Caller, body: VerifyKeyV2Input) {
  const req = verifierRequest(body, parsedQuery(body.permissions));
  const verified = await verifyKeyV2Service(
    { db: deps.store.db, verifier: deps.verifier },
    caller,
    req,
    body.migrationId,
    caller.requestId,
  );
  return verified ? verifyKeyV2Data(verified) : { valid: false, code: 'NOT_FOUND' as const };
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
