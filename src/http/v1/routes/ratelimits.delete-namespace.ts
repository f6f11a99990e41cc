import { Type } from '@sinclair/typebox';
import { deleteNamespace, namespaceRefProblems } from '../../../services/ratelimits/namespaces.ts';
import type { App, Deps } from '../../types.ts';
import { Body, requires, responses } from '../../schemas/common.ts';
import { NamespaceRefProps } from '../../schemas/ratelimits.ts';

export default function ratelimitsDeleteNamespace(app: App, deps: Deps) {
  app.post(
    '/v1/ratelimits.deleteNamespace',
    {
      schema: {
        ...requires(
          'Delete a rate-limit namespace and its overrides; a namespace later made with the same name starts from zero',
          '`ratelimit.<namespaceId>.delete_namespace`',
        ),
        body: Body(NamespaceRefProps),
        response: responses(Type.Object({})),
      },
      config: { bodyRules: namespaceRefProblems },
    },
    async (req) => {
      await deleteNamespace(deps.store.db, req.caller, req.body);
      return {};
    },
  );
}
