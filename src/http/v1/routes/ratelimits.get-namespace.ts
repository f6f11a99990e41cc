import { Type } from '@sinclair/typebox';
import { getNamespace } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { Namespace, NamespaceRefProps } from '../../schemas/ratelimits.ts';

export default function ratelimitsGetNamespace(app: App, deps: Deps) {
  app.get(
    '/v1/ratelimits.getNamespace',
    {
      schema: {
        ...requires('Get a rate-limit namespace by id or by name', '`ratelimit.<namespaceId>.read_namespace`'),
        querystring: Type.Object(NamespaceRefProps),
        response: responses(Namespace),
      },
    },
    (req) => getNamespace(deps.store.db, req.caller, req.query),
  );
}
