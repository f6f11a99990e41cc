import { Type } from '@sinclair/typebox';
import { notFound } from '../../../domain/errors.ts';
import { listKeys } from '../../../services/apis/apis.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { paged, v2PageResponses, v2Requires } from '../envelope.ts';
import { hideDenial } from '../hide-denial.ts';
import { KeyResponseData, keyData } from '../key-data.ts';
import { PageBody, ResourceId } from '../schemas.ts';

export default function v2ApisListKeys(app: App, deps: Deps) {
  app.post(
    '/v2/apis.listKeys',
    {
      schema: {
        ...v2Requires(
          'List the live keys of an API by id, a page at a time. Without the permission to read them, the answer is the 404 of a missing API.',
          '`api.<apiId>.read_api` and `api.<apiId>.read_key` (or `api.*.…`); with `decrypt` also `decrypt_key`',
        ),
        body: Body({
          apiId: ResourceId,
          ...PageBody,
          externalId: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Only the keys of this identity.' })),
          decrypt: Type.Optional(Type.Boolean({ default: false, description: 'Return `plaintext` of keys stored encrypted.' })),
          revalidateKeysCache: Type.Optional(
            Type.Boolean({ default: false, description: 'Accepted and ignored: lists are read from the store.' }),
          ),
        }),
        response: v2PageResponses(KeyResponseData),
      },
    },
    async (req) => {
      const { apiId, limit, cursor, externalId, decrypt } = req.body;
      const work = listKeys(
        deps.store.db,
        req.caller,
        { apiId, limit: limit ?? 100, cursor, externalId, decrypt, withTotal: false },
        deps.vault,
      );
      const needed = [`api.${apiId}.read_api`, `api.${apiId}.read_key`];
      const page = await hideDenial(work, req.caller, needed, () => notFound('api', apiId));
      return paged(req.id, page.keys.map(keyData), page.cursor);
    },
  );
}
