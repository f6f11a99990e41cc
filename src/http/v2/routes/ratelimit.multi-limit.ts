import { Type } from '@sinclair/typebox';
import { multiLimit } from '../../../services/ratelimits/multi-limit.ts';
import type { App, Deps } from '../../types.ts';
import { ok, v2Requires, v2Responses } from '../envelope.ts';
import { V2LimitBody, V2MultiLimitItem } from '../ratelimit-schemas.ts';

export default function v2RatelimitMultiLimit(app: App, deps: Deps) {
  app.post(
    '/v2/ratelimit.multiLimit',
    {
      schema: {
        ...v2Requires(
          'Count a request against several limits at once, all or nothing: the costs are counted only when every limit has room',
          '`ratelimit.*.limit` or, for each item, `ratelimit.<namespaceId>.limit`; for namespaces that do not exist yet `ratelimit.*.create_namespace` and `ratelimit.*.limit`',
        ),
        body: Type.Array(V2LimitBody, { minItems: 1, maxItems: 100, description: 'The limits, each as ratelimit.limit’s body.' }),
        response: v2Responses(
          Type.Object({
            passed: Type.Boolean({ description: 'Every item passed (and only then was any cost counted).' }),
            limits: Type.Array(V2MultiLimitItem),
          }),
        ),
      },
    },
    async (req) => {
      const { passed, limits } = await multiLimit(deps.ratelimits, req.caller, req.body);
      return ok(req.id, {
        passed,
        limits: limits.map(({ namespace, identifier, limit, remaining, reset, success, overrideId }) => ({
          namespace,
          identifier,
          limit,
          remaining,
          reset,
          passed: success,
          ...(overrideId ? { overrideId } : {}),
        })),
      });
    },
  );
}
