import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { App } from './types.ts';

/** `/openapi.json`, generated from the route schemas, and the `/docs` page that renders it. */
export async function registerDocs(app: App): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Keyhold API',
        version: '1',
        description:
          'Self-hostable API-key management. Every operation except liveness and keys.verifyKey needs `Authorization: Bearer <root key>`; each operation names the permission it requires.',
      },
      components: { securitySchemes: { rootKey: { type: 'http', scheme: 'bearer', description: 'A root key, kh_root_…' } } },
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
}

/** Serves the generated document; registered after every route, so it lists them all. */
export function registerOpenApiRoute(app: App): void {
  app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () => app.swagger());
}
