import type { App, Deps } from '../../types.ts';
import type { Verifier, VerifyRequest } from '../../../services/verification/verifier.ts';
import { responses } from '../../schemas/common.ts';
import { VerifyKeyBody, VerifyKeyResult } from '../../schemas/keys.ts';

export const VERIFY_PATH = '/v1/keys.verifyKey';

/** A verification is small: larger bodies are a 413 on every path (the lane's and this route's). */
export const VERIFY_BODY_LIMIT = 64 * 1024;

/** What keys.verifyKey answers with a valid body, on either path (this route or the lane, http/lane-operations.ts). */
export async function answerVerifyKey(verifier: Verifier, body: VerifyRequest, requestId: string) {
  // The verifier's answer is a new object each time: it takes the request id in place, without a copy.
  return Object.assign(await verifier.verify(body, Date.now(), undefined, requestId), { requestId });
}

export default function keysVerifyKey(app: App, deps: Deps) {
  app.post(
    VERIFY_PATH,
    {
      config: { public: true },
      bodyLimit: VERIFY_BODY_LIMIT,
      schema: {
        summary: 'Verify a key',
        description:
          'Verify a key presented to your API. Needs no root key: the key is the credential (an Authorization header is ignored). ' +
          'Always 200 with `valid` and `code`; checks in order NOT_FOUND, DISABLED, FORBIDDEN, EXPIRED, INSUFFICIENT_PERMISSIONS, RATE_LIMITED, USAGE_EXCEEDED, VALID.',
        body: VerifyKeyBody,
        response: responses(VerifyKeyResult),
      },
    },
    (req) => answerVerifyKey(deps.verifier, req.body, req.id),
  );
}
