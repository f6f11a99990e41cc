import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifySchema, RouteOptions } from 'fastify';
import type { App } from './types.ts';

export const API_TITLE = 'Keyhold API';

/**
 * The tag of every operation group, with what /docs says of it, in the order /docs shows them. An operation's
 * tag is its group (`keys` for `/v1/keys.verifyKey`); operations outside a group (liveness, readiness) are
 * `health`. A group missing here fails the OpenAPI lint (test/http/openapi-lint.test.ts).
 */
export const TAGS: ReadonlyArray<{ name: string; description: string }> = [
  { name: 'keys', description: 'Keys: create, verify, read, update and delete them; their credits, roles and permissions.' },
  { name: 'apis', description: 'APIs: the keyspaces keys live in, and the listing of their keys.' },
  { name: 'permissions', description: 'Roles and permissions of the workspace, which keys are given.' },
  { name: 'identities', description: 'Identities: your users, whose keys share their rate limits.' },
  { name: 'ratelimits', description: 'Rate limits on anything you name, and their overrides per identifier.' },
  { name: 'migrations', description: 'Importing keys from existing key material: at once, or queued into a migration.' },
  { name: 'analytics', description: 'Verification counts by outcome, key, identity and time.' },
  { name: 'webhooks', description: 'Webhook endpoints that receive signed events (Standard Webhooks), and their deliveries.' },
  {
    name: 'usage',
    description: 'Usage exports: metered usage per identity or key and period, sent to OpenMeter or Stripe, and their reports.',
  },
  { name: 'audit', description: "The workspace's audit log: every change, who made it and when." },
  { name: 'health', description: 'Liveness and readiness of the server. They need no root key.' },
  { name: 'v2 apis', description: "Unkey v2's apis.* operations, on the same APIs and keys as v1." },
  { name: 'v2 keys', description: "Unkey v2's keys.* operations, on the same keys as v1." },
  { name: 'v2 identities', description: "Unkey v2's identities.* operations." },
  { name: 'v2 permissions', description: "Unkey v2's permissions.* operations: roles and permissions." },
  { name: 'v2 ratelimit', description: "Unkey v2's ratelimit.* operations, on the same namespaces and counters as v1's ratelimits.*." },
  { name: 'v2 analytics', description: "Unkey v2's analytics.* (not served: see docs/compatibility-v2.md)." },
  { name: 'v2 health', description: "Unkey v2's liveness. It needs no root key." },
];

const HEALTH_TAG = 'health';
const ROOT_KEY = [{ rootKey: [] }];

/** The name of the operation at `/v1/<name>` (`keys.verifyKey`, `liveness`), which is its operationId; undefined off /v1. */
export function operationName(url: string): string | undefined {
  return /^\/v1\/([A-Za-z][\w.]*)$/.exec(url)?.[1];
}

/** The name of the operation at `/v2/<name>`; its operationId is `v2.<name>` (v1 has the bare names). */
export const v2OperationName = (url: string): string | undefined => /^\/v2\/([A-Za-z][\w.]*)$/.exec(url)?.[1];

/** The tag of an operation: its group (what precedes the dot of its name), or `health` for one outside a group. */
export function operationTag(name: string): string {
  const dot = name.indexOf('.');
  return dot === -1 ? HEALTH_TAG : name.slice(0, dot);
}

/**
 * What every /v1 operation gets in the document, from its URL and route options alone (so a route added later
 * gets it too): its name as operationId, its group as tag, and its security — none (`[]`) for a public route
 * (`config: { public: true }`), else the root key.
 */
export function documentOperation({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }): {
  schema: FastifySchema;
  url: string;
} {
  const v1 = operationName(url);
  const v2 = v2OperationName(url);
  const name = v1 ?? v2;
  if (!name) return { schema, url };
  const security = route.config?.public ? [] : ((schema as { security?: unknown[] } | undefined)?.security ?? ROOT_KEY);
  const [operationId, tag] = v1 ? [name, operationTag(name)] : [`v2.${name}`, `v2 ${operationTag(name)}`];
  return { url, schema: { ...schema, operationId, tags: [tag], security } as FastifySchema };
}

/** `/openapi.json`, generated from the route schemas, and the `/docs` page that renders it, grouped by tag. */
export async function registerDocs(app: App): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: API_TITLE,
        version: '1',
        description:
          'Self-hostable API-key management. Every operation except liveness, readiness and keys.verifyKey needs `Authorization: Bearer <root key>`; each operation names the permission it requires.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      // Relative to where the document was fetched from: the server serving /openapi.json serves the API.
      servers: [{ url: '/', description: 'This server' }],
      tags: [...TAGS],
      security: ROOT_KEY,
      components: { securitySchemes: { rootKey: { type: 'http', scheme: 'bearer', description: 'A root key, kh_root_…' } } },
    },
    transform: documentOperation,
    transformObject: (document) => ('openapiObject' in document ? withUsedTags(document.openapiObject) : document.swaggerObject),
    refResolver: { buildLocalReference: (json, _base, _frag, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' }, theme: { title: API_TITLE } });
}

/** The document listing only the tags some operation has: a group's tag appears with the group's first operation. */
function withUsedTags<D extends { paths?: object; tags?: Array<{ name: string }> }>(doc: D): D {
  const used = new Set<string>();
  for (const item of Object.values(doc.paths ?? {}) as Array<Record<string, { tags?: string[] } | undefined>>)
    for (const operation of Object.values(item ?? {})) for (const tag of operation?.tags ?? []) used.add(tag);
  return { ...doc, tags: doc.tags?.filter((t) => used.has(t.name)) };
}

/** Serves the generated document; registered after every route, so it lists them all. */
export function registerOpenApiRoute(app: App): void {
  app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () => app.swagger());
}
