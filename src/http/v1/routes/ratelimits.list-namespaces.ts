import { Type } from '@sinclair/typebox';
import { listNamespaces } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { PageQuery, requires, responses, CappedTotal } from '../../schemas/common.ts';
import { Namespace } from '../../schemas/ratelimits.ts';

export default function ratelimitsListNamespaces(app: App, deps: Deps) {
  app.get(
    '/v1/ratelimits.listNamespaces',
    {
      schema: {
        ...requires('List the rate-limit namespaces of the workspace, by id, with cursor pagination', '`ratelimit.*.read_namespace`'),
        querystring: PageQuery,
        response: responses(
          Type.Object({
            namespaces: Type.Array(Namespace),
            total: CappedTotal('Namespaces in the workspace'),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listNamespaces(deps.store.db, req.caller, req.query),
  );
}
