import { Type } from '@sinclair/typebox';
import { deleteKeys } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';

export default function apisDeleteKeys(app: App, deps: Deps) {
  app.post(
    '/v1/apis.deleteKeys',
    {
      schema: {
        ...requires(
          'Delete every key of an API (soft by default; `permanent: true` removes the rows, soft-deleted ones included)',
          '`api.<apiId>.delete_key`',
        ),
        body: Body({
          apiId: Type.String({ minLength: 1 }),
          permanent: Type.Optional(Type.Boolean({ default: false, description: 'Remove the key rows instead of marking them deleted.' })),
        }),
        response: responses(
          Type.Object({
            deletedKeys: Type.Integer({
              description: 'Keys this call deleted: the live keys, or with `permanent` every key row removed (soft-deleted ones included).',
            }),
          }),
        ),
      },
    },
    (req) => deleteKeys(deps.store.db, req.caller, req.body.apiId, req.body.permanent === true),
  );
}
