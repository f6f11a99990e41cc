import { Type } from '@sinclair/typebox';
import { setOverrideIn } from '../../../services/ratelimits/overrides.ts';
import { namespaceByNameOrId } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Bounded } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { V2OverrideRef } from '../ratelimit-schemas.ts';

export default function v2RatelimitSetOverride(app: App, deps: Deps) {
  app.post(
    '/v2/ratelimit.setOverride',
    {
      schema: {
        ...v2Requires(
          'Create or replace the override of an identifier (or `*` pattern) in a namespace: its limit and duration replace the request’s',
          '`ratelimit.*.set_override` or `ratelimit.<namespaceId>.set_override`',
        ),
        body: Body({
          ...V2OverrideRef,
          limit: Bounded('limit', { description: '0 refuses every request of a cost above 0.' }),
          duration: Bounded('duration', { description: 'Window length in ms.' }),
        }),
        response: v2Responses(Type.Object({ overrideId: Type.String() })),
      },
    },
    async (req) => {
      const { namespace, identifier, limit, duration } = req.body;
      const { overrideId } = await setOverrideIn(
        deps.store.db,
        req.caller,
        namespaceByNameOrId(namespace),
        { identifier, limit, duration },
        { keepAsync: true },
      );
      return ok(req.id, { overrideId });
    },
  );
}
