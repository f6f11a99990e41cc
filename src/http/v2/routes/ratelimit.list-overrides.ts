import { Type } from '@sinclair/typebox';
import { listOverridesIn } from '../../../services/ratelimits/overrides.ts';
import { namespaceByNameOrId } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { paged, v2PageResponses, v2Requires } from '../envelope.ts';
import { PageBody } from '../schemas.ts';
import { NamespaceNameOrId, V2Override, v2Override } from '../ratelimit-schemas.ts';

export default function v2RatelimitListOverrides(app: App, deps: Deps) {
  app.post(
    '/v2/ratelimit.listOverrides',
    {
      schema: {
        ...v2Requires(
          'List the overrides of a namespace, by id, with cursor pagination',
          '`ratelimit.*.read_override` or `ratelimit.<namespaceId>.read_override`',
        ),
        body: Body({
          namespace: NamespaceNameOrId,
          ...PageBody,
          // What Unkey's v2 server does when the member is absent (its document says 10; its SDK always sends it).
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
        }),
        response: v2PageResponses(V2Override),
      },
    },
    async (req) => {
      const { namespace, limit, cursor } = req.body;
      const page = await listOverridesIn(deps.store.db, req.caller, namespaceByNameOrId(namespace), { limit, cursor, withTotal: false });
      return paged(req.id, page.overrides.map(v2Override), page.cursor);
    },
  );
}
