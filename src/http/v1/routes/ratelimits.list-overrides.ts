import { Type } from '@sinclair/typebox';
import { listOverrides } from '../../../services/ratelimits/overrides.ts';
import type { App, Deps } from '../../types.ts';
import { PageQuery, requires, responses, CappedTotal } from '../../schemas/common.ts';
import { NamespaceRefProps, Override } from '../../schemas/ratelimits.ts';

export default function ratelimitsListOverrides(app: App, deps: Deps) {
  app.get(
    '/v1/ratelimits.listOverrides',
    {
      schema: {
        ...requires('List the overrides of a namespace, by id, with cursor pagination', '`ratelimit.<namespaceId>.read_override`'),
        querystring: Type.Composite([PageQuery, Type.Object(NamespaceRefProps)]),
        response: responses(
          Type.Object({
            overrides: Type.Array(Override),
            total: CappedTotal('Overrides in the namespace'),
            cursor: Type.Optional(Type.String({ description: 'Present when another page exists.' })),
          }),
        ),
      },
    },
    (req) => listOverrides(deps.store.db, req.caller, req.query),
  );
}
