import { Type } from '@sinclair/typebox';
import { whoami } from '../../../services/keys/keys.ts';
import type { App, Deps } from '../../types.ts';
import { Body, Meta, requires, responses } from '../../schemas/common.ts';

export default function keysWhoami(app: App, deps: Deps) {
  app.post(
    '/v1/keys.whoami',
    {
      schema: {
        ...requires('Describe a key given its plaintext', '`api.<apiId>.read_key`'),
        body: Body({ key: Type.String({ minLength: 1 }) }),
        response: responses(
          Type.Object({
            id: Type.String(),
            name: Type.Optional(Type.String()),
            remaining: Type.Optional(Type.Integer()),
            identity: Type.Optional(Type.Object({ id: Type.String(), externalId: Type.String() })),
            meta: Type.Optional(Meta),
            createdAt: Type.Integer(),
            enabled: Type.Boolean(),
            environment: Type.Optional(Type.String()),
          }),
        ),
      },
    },
    (req) => whoami(deps.store.db, req.caller, req.body.key),
  );
}
