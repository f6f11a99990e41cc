import { Type } from '@sinclair/typebox';
import { updateRemaining, updateRemainingProblems } from '../../../services/keys/update-remaining.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Nullable, requires, responses, Bounded } from '../../schemas/common.ts';

export default function keysUpdateRemaining(app: App, deps: Deps) {
  app.post(
    '/v1/keys.updateRemaining',
    {
      config: { bodyRules: updateRemainingProblems },
      schema: {
        ...requires(
          'Change the credits of a key atomically: increment, decrement (never below 0) or set (null: unlimited)',
          '`api.<apiId>.update_key`',
        ),
        body: Body({
          keyId: Type.String({ minLength: 1 }),
          op: Type.Unsafe<'increment' | 'decrement' | 'set'>({ type: 'string', enum: ['increment', 'decrement', 'set'] }),
          value: Nullable(
            Bounded('count', { description: 'Credits to add, take or set; null only with set (the key becomes unlimited).' }),
          ),
        }),
        response: responses(
          Type.Object({ remaining: Nullable(Type.Integer()) }, { description: 'The credits left after the change; null: unlimited.' }),
        ),
      },
    },
    async (req) => {
      return updateRemaining(deps.store.db, req.caller, req.body);
    },
  );
}
