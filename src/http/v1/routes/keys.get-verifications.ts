import { Type } from '@sinclair/typebox';
import { getKeyVerifications } from '../../../services/analytics/key-verifications.ts';
import type { App, Deps } from '../../types.ts';
import { OneOf, requires, responses, Bounded } from '../../schemas/common.ts';

const Count = Type.Integer({ minimum: 0 });

export default function keysGetVerifications(app: App, deps: Deps) {
  app.get(
    '/v1/keys.getVerifications',
    {
      schema: {
        ...requires(
          'Verification counts of a key, or of every live key of an identity, per hour or day',
          '`api.<apiId>.read_analytics` for the API of every key involved',
        ),
        querystring: Type.Object({
          keyId: Type.Optional(Type.String({ minLength: 1 })),
          ownerId: Type.Optional(
            Type.String({
              minLength: 1,
              description: 'The externalId of an identity: counts summed over its live keys. Used when keyId is absent.',
            }),
          ),
          start: Type.Optional(
            Bounded('timestamp', { description: 'Epoch ms; default 24 h before end. Widened to the start of its bucket.' }),
          ),
          end: Type.Optional(
            Bounded('timestamp', { minimum: 1, description: 'Epoch ms, exclusive; default now. Widened to the end of its bucket.' }),
          ),
          granularity: Type.Optional(OneOf(['day', 'hour'] as const)),
        }),
        response: responses(
          Type.Object({
            verifications: Type.Array(
              Type.Object({
                time: Type.Integer({ description: 'Start of the bucket (UTC hour or day), epoch ms.' }),
                success: Count,
                rateLimited: Count,
                usageExceeded: Count,
                forbidden: Count,
                disabled: Count,
                insufficientPermissions: Count,
                expired: Count,
                total: Count,
              }),
              { description: 'Buckets with at least one verification, ascending.' },
            ),
          }),
        ),
      },
    },
    (req) => getKeyVerifications(deps.store.db, req.caller, req.query),
  );
}
