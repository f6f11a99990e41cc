import { limitNamed } from '../../../services/ratelimits/multi-limit.ts';
import type { App, Deps } from '../../types.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { V2LimitBody, V2LimitResult } from '../ratelimit-schemas.ts';

export default function v2RatelimitLimit(app: App, deps: Deps) {
  app.post(
    '/v2/ratelimit.limit',
    {
      schema: {
        ...v2Requires(
          'Count a request against a limit of (namespace, identifier), on the same counters as v1’s ratelimits.limit: `success` says whether it may proceed',
          '`ratelimit.*.limit` or `ratelimit.<namespaceId>.limit`; for a namespace that does not exist yet `ratelimit.*.create_namespace` and `ratelimit.*.limit`',
        ),
        body: V2LimitBody,
        response: v2Responses(V2LimitResult),
      },
    },
    async (req) => {
      const { limit, remaining, reset, success, overrideId } = await limitNamed(deps.ratelimits, req.caller, req.body);
      return ok(req.id, { limit, remaining, reset, success, ...(overrideId ? { overrideId } : {}) });
    },
  );
}
