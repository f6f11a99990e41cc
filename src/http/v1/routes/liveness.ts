import { Type } from '@sinclair/typebox';
import type { App, Deps } from '../../types.ts';
import { responses } from '../../schemas/common.ts';

export default function liveness(app: App, deps: Deps) {
  app.get(
    '/v1/liveness',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness',
        description: 'Whether the server process is up. Needs no root key.',
        response: responses(Type.Object({ status: Type.Literal('ok'), services: Type.Object({ database: Type.String() }) })),
      },
    },
    async () => ({ status: 'ok' as const, services: { database: deps.store.caps.dialect } }),
  );
}
