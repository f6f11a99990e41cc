import { limit } from '../../../services/ratelimits/limit.ts';
import type { App, Deps } from '../../types.ts';
import { requires, responses } from '../../schemas/common.ts';
import { LimitBody, LimitResult } from '../../schemas/ratelimits.ts';

/** Answered over HTTP by the lane (http/lane-operations.ts) too, with the same service call. */
export const RATELIMIT_LIMIT_PATH = '/v1/ratelimits.limit';

export default function ratelimitsLimit(app: App, deps: Deps) {
  app.post(
    RATELIMIT_LIMIT_PATH,
    {
      schema: {
        ...requires(
          'Count a request against a limit of (namespace, identifier): `success` says whether it may proceed',
          '`ratelimit.<namespaceId>.limit`; for a namespace that does not exist yet `ratelimit.*.create_namespace` and `ratelimit.*.limit`',
        ),
        body: LimitBody,
        response: responses(LimitResult),
      },
    },
    (req) => limit(deps.ratelimits, req.caller, req.body),
  );
}
