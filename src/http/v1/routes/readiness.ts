import { Type } from '@sinclair/typebox';
import type { App, Deps } from '../../types.ts';
import { OneOf, responses } from '../../schemas/common.ts';

const Readiness = Type.Object({
  status: OneOf(['ready', 'degraded'] as const),
  checks: Type.Object({
    store: Type.Literal('up'),
    redis: Type.Optional(OneOf(['up', 'down'] as const)),
    oidc: Type.Optional(OneOf(['up', 'down'] as const)),
  }),
});

export default function readiness(app: App, deps: Deps) {
  app.get(
    '/v1/readiness',
    {
      config: { public: true },
      schema: {
        summary: 'Readiness',
        description:
          'Whether this server can serve: the store answers a trivial query and Redis (when configured) a PING, each within 1 s. ' +
          '503 `store/unavailable` when the store does not; `degraded` when only Redis does not (the server works on without it). ' +
          'With single sign-on configured, `checks.oidc` says whether the provider answered its discovery (down: `degraded`; API and sign-in links work on). Needs no root key.',
        response: responses(Readiness),
      },
    },
    () => deps.readiness(),
  );
}
