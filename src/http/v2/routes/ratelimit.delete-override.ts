import { Type } from '@sinclair/typebox';
import { deleteOverrideIn } from '../../../services/ratelimits/overrides.ts';
import { namespaceByNameOrId } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { V2OverrideRef } from '../ratelimit-schemas.ts';

export default function v2RatelimitDeleteOverride(app: App, deps: Deps) {
  app.post(
    '/v2/ratelimit.deleteOverride',
    {
      schema: {
        ...v2Requires(
          'Delete the override of exactly this identifier (or pattern); setting it again later creates a new one',
          '`ratelimit.*.delete_override` or `ratelimit.<namespaceId>.delete_override`',
        ),
        body: Body(V2OverrideRef),
        response: v2Responses(Type.Object({})),
      },
    },
    async (req) => {
      const { namespace, identifier } = req.body;
      await deleteOverrideIn(deps.store.db, req.caller, namespaceByNameOrId(namespace), identifier);
      return ok(req.id, {});
    },
  );
}
