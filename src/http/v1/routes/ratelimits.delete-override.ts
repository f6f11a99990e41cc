import { Type } from '@sinclair/typebox';
import { deleteOverride } from '../../../services/ratelimits/overrides.ts';
import { namespaceRefProblems } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { NamespaceRefProps, OverrideIdentifier } from '../../schemas/ratelimits.ts';

export default function ratelimitsDeleteOverride(app: App, deps: Deps) {
  app.post(
    '/v1/ratelimits.deleteOverride',
    {
      schema: {
        ...requires('Delete the override of exactly this identifier (or pattern)', '`ratelimit.<namespaceId>.delete_override`'),
        body: Body({ ...NamespaceRefProps, identifier: OverrideIdentifier }),
        response: responses(Type.Object({})),
      },
      config: { bodyRules: namespaceRefProblems },
    },
    async (req) => {
      await deleteOverride(deps.store.db, req.caller, req.body);
      return {};
    },
  );
}
