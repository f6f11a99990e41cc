import { Type } from '@sinclair/typebox';
import { updateRemaining, updateRemainingProblems, type CreditRules } from '../../../services/keys/update-remaining.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Bounded, Nullable, OneOf } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { creditsData, KeyCreditsData } from '../key-data.ts';
import { withV2Paths } from '../key-requests.ts';

/** v2's rules: a decrement floors at 0; `set` to unlimited removes the refill with the count. */
const V2_CREDIT_RULES: CreditRules = { decrementBelowZero: 'floor', unlimitedWithRefill: 'clear-refill' };

/** The shared service's rule about a missing value, at v2's member names (`operation`, not `op`). */
const rules = (body: unknown) =>
  updateRemainingProblems(
    body && typeof body === 'object'
      ? { op: (body as Record<string, unknown>).operation, value: (body as Record<string, unknown>).value ?? null }
      : body,
  );

export default function v2KeysUpdateCredits(app: App, deps: Deps) {
  app.post(
    '/v2/keys.updateCredits',
    {
      config: { bodyRules: rules },
      schema: {
        ...v2Requires(
          'Change the credits of a key atomically: increment, decrement (floored at 0) or set (null or no value: unlimited, without refill)',
          '`api.*.update_key` or `api.<apiId>.update_key`',
        ),
        body: Body({
          keyId: Type.String({ minLength: 3, maxLength: 255 }),
          operation: OneOf(['set', 'increment', 'decrement'] as const),
          value: Type.Optional(Nullable(Bounded('count', { description: 'Required by increment and decrement.' }))),
        }),
        response: v2Responses(KeyCreditsData),
      },
    },
    async (req) => {
      const { keyId, operation, value } = req.body;
      const input = { keyId, op: operation, value: value ?? null };
      const after = await withV2Paths(updateRemaining(deps.store.db, req.caller, input, V2_CREDIT_RULES));
      return ok(req.id, creditsData(after.remaining, after.refill));
    },
  );
}
