import { matchOverrideIn } from '../../../services/ratelimits/overrides.ts';
import { namespaceByNameOrId } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { Body } from '../../schemas/common.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { V2Override, V2OverrideRef, v2Override } from '../ratelimit-schemas.ts';

export default function v2RatelimitGetOverride(app: App, deps: Deps) {
  app.post(
    '/v2/ratelimit.getOverride',
    {
      schema: {
        ...v2Requires(
          'The override that applies to an identifier, matched as ratelimit.limit matches them: its own, else the best `*` pattern. Without the permission, a 404 as if there were none',
          '`ratelimit.*.read_override` or `ratelimit.<namespaceId>.read_override`',
        ),
        body: Body(V2OverrideRef),
        response: v2Responses(V2Override),
      },
    },
    async (req) => {
      const { namespace, identifier } = req.body;
      return ok(req.id, v2Override(await matchOverrideIn(deps.store.db, req.caller, namespaceByNameOrId(namespace), identifier)));
    },
  );
}
