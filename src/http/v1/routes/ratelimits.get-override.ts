import { Type } from '@sinclair/typebox';
import { getOverride } from '../../../services/ratelimits/overrides.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { NamespaceRefProps, Override, OverrideIdentifier } from '../../schemas/ratelimits.ts';

export default function ratelimitsGetOverride(app: App, deps: Deps) {
  app.get(
    '/v1/ratelimits.getOverride',
    {
      schema: {
        ...requires('Get the override of exactly this identifier (or pattern)', '`ratelimit.<namespaceId>.read_override`'),
        querystring: Type.Object({ ...NamespaceRefProps, identifier: OverrideIdentifier }),
        response: responses(Override),
      },
    },
    (req) => getOverride(deps.store.db, req.caller, req.query),
  );
}
