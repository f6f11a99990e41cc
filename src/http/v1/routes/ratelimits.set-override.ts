import { Type } from '@sinclair/typebox';
import { setOverride } from '../../../services/ratelimits/overrides.ts';
import { namespaceRefProblems } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Bounded, requires, responses } from '../../schemas/common.ts';
import { NamespaceRefProps, OverrideIdentifier } from '../../schemas/ratelimits.ts';

export default function ratelimitsSetOverride(app: App, deps: Deps) {
  app.post(
    '/v1/ratelimits.setOverride',
    {
      schema: {
        ...requires(
          'Create or replace the override of an identifier (or `*` pattern) in a namespace: its limit and duration replace the request’s',
          '`ratelimit.<namespaceId>.set_override`',
        ),
        body: Body({
          ...NamespaceRefProps,
          identifier: OverrideIdentifier,
          limit: Bounded('limit'),
          duration: Bounded('duration', { description: 'Window length in ms.' }),
          async: Type.Optional(Type.Boolean({ description: 'Absent: each ratelimits.limit request decides.' })),
        }),
        response: responses(Type.Object({ overrideId: Type.String() })),
      },
      config: { bodyRules: namespaceRefProblems },
    },
    (req) => setOverride(deps.store.db, req.caller, req.body),
  );
}
