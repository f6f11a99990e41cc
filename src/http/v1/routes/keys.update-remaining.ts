import { Type } from '@sinclair/typebox';
import { updateRemaining, updateRemainingProblems } from '../../../services/keys/update-key.ts';
import type { App, Deps } from '../../types.ts';
import { rejectInvalidBody } from '../../errors.ts';
import { Body, Nullable, requires, responses } from '../../schemas.ts';

export default function keysUpdateRemaining(app: App, deps: Deps) {
  app.post('/v1/keys.updateRemaining', {
    attachValidation: true,
    schema: {
      ...requires('Change the credits of a key atomically: increment, decrement (never below 0) or set (null: unlimited)', '`api.<apiId>.update_key`'),
      body: Body({
        keyId: Type.String({ minLength: 1 }),
        op: Type.Unsafe<'increment' | 'decrement' | 'set'>({ type: 'string', enum: ['increment', 'decrement', 'set'] }),
        value: Nullable(Type.Integer({
          minimum: 0, maximum: Number.MAX_SAFE_INTEGER,
          description: 'Credits to add, take or set; null only with set (the key becomes unlimited).',
        })),
      }),
      response: responses(Type.Object({ remaining: Nullable(Type.Integer()) }, { description: 'The credits left after the change; null: unlimited.' })),
    },
  }, async (req) => {
    rejectInvalidBody(req, updateRemainingProblems);
    return updateRemaining(deps.store.db, req.caller, req.body);
  });
}
