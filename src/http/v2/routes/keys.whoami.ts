import { Type } from '@sinclair/typebox';
import { AppError } from '../../../domain/errors.ts';
import { whoamiKey } from '../../../services/keys/keys.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { hideDenial } from '../hide-denial.ts';
import { KeyResponseData, keyData } from '../key-data.ts';

export default function v2KeysWhoami(app: App, deps: Deps) {
  app.post(
    '/v2/keys.whoami',
    {
      schema: {
        ...v2Requires(
          'Describe a key given its plaintext, without verifying it. Without the permission to read it, the answer is the 404 of a missing key.',
          '`api.*.read_key` or `api.<apiId>.read_key`',
        ),
        body: Body({ key: Type.String({ minLength: 1, maxLength: 512 }) }),
        response: v2Responses(KeyResponseData),
      },
    },
    async (req) => {
      const work = whoamiKey(deps.store.db, req.caller, req.body.key);
      const view = await hideDenial(work, req.caller, 'any', () => new AppError('data/key-not-found', 'key not found'));
      return ok(req.id, keyData(view));
    },
  );
}
