import { Type } from '@sinclair/typebox';
import type { App } from '../../types.ts';
import { ok, v2Responses } from '../envelope.ts';

export default function v2Liveness(app: App) {
  app.get(
    '/v2/liveness',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness (v2)',
        description: 'Whether the server process is up. Needs no root key.',
        response: v2Responses(Type.Object({ message: Type.String() })),
      },
    },
    async (req) => ok(req.id, { message: "we're cooking" }),
  );
}
