import { Type } from '@sinclair/typebox';
import type { App, Deps } from '../../types.ts';
import { Body, Meta, OneOf, responses } from '../../schemas.ts';
import type { Verifier, VerifyRequest } from '../../../services/verification/verifier.ts';

const Code = OneOf(['VALID', 'NOT_FOUND', 'FORBIDDEN', 'USAGE_EXCEEDED', 'RATE_LIMITED', 'DISABLED', 'INSUFFICIENT_PERMISSIONS', 'EXPIRED'] as const);

export const VERIFY_PATH = '/v1/keys.verifyKey';

/** The request body of keys.verifyKey (also compiled by the verification lane, src/http/verify-lane.ts). */
export const VerifyKeyBody = Body({
  key: Type.String({ minLength: 1, maxLength: 1024 }),
  apiId: Type.Optional(Type.String({ minLength: 1, description: 'The key must belong to this API (else FORBIDDEN).' })),
  authorization: Type.Optional(Type.Object({
    permissions: Type.Unknown({ description: 'A permission, or {and: [...]} / {or: [...]} of queries, nested.' }),
  }, { additionalProperties: false })),
  remaining: Type.Optional(Type.Object({ cost: Type.Optional(Type.Integer({ minimum: 0, default: 1 })) }, { additionalProperties: false })),
  ratelimits: Type.Optional(Type.Array(Type.Object({
    name: Type.String({ minLength: 1 }),
    cost: Type.Optional(Type.Integer({ minimum: 0, default: 1 })),
    limit: Type.Optional(Type.Integer({ minimum: 0 })),
    duration: Type.Optional(Type.Integer({ minimum: 1000, description: 'Window in milliseconds.' })),
  }, { additionalProperties: false }), { maxItems: 20 })),
});

/** The 200 body of keys.verifyKey. */
export const VerifyKeyResult = Type.Object({
  valid: Type.Boolean(),
  code: Code,
  keyId: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  ownerId: Type.Optional(Type.String({ description: 'Deprecated: the identity\'s externalId.' })),
  externalId: Type.Optional(Type.String()),
  meta: Type.Optional(Meta),
  expires: Type.Optional(Type.Integer()),
  remaining: Type.Optional(Type.Integer({ description: 'Credits left after this call.' })),
  ratelimit: Type.Optional(Type.Object({ limit: Type.Integer(), remaining: Type.Integer(), reset: Type.Integer() })),
  enabled: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.Array(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  environment: Type.Optional(Type.String()),
  identity: Type.Optional(Type.Object({ id: Type.String(), externalId: Type.String(), meta: Meta })),
  requestId: Type.String(),
});

/** What keys.verifyKey answers with a valid body, on either path (this route or the verification lane). */
export async function answerVerifyKey(verifier: Verifier, body: VerifyRequest, requestId: string) {
  return { ...(await verifier.verify(body)), requestId };
}

export default function keysVerifyKey(app: App, deps: Deps) {
  app.post(VERIFY_PATH, {
    config: { public: true },
    schema: {
      summary: 'Verify a key',
      description: 'Verify a key presented to your API. Needs no root key: the key is the credential (an Authorization header is ignored). '
        + 'Always 200 with `valid` and `code`; checks in order NOT_FOUND, DISABLED, FORBIDDEN, EXPIRED, INSUFFICIENT_PERMISSIONS, RATE_LIMITED, USAGE_EXCEEDED, VALID.',
      body: VerifyKeyBody,
      response: responses(VerifyKeyResult),
    },
  }, (req) => answerVerifyKey(deps.verifier, req.body, req.id));
}
