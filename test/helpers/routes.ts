import { ROUTES } from '../../src/http/v1/operations.ts';
import { V2_ROUTES } from '../../src/http/v2/operations.ts';
import type { App, Deps } from '../../src/http/types.ts';

/** Every route the explicit route lists (v1 and v2) register, as the route files declare them. */
export function declaredRoutes(deps: Pick<Deps, 'store'>): Array<{ method: string; url: string; isPublic: boolean }> {
  const found: Array<{ method: string; url: string; isPublic: boolean }> = [];
  const add = (methods: string | string[], url: string, opts?: { config?: { public?: boolean } }) => {
    for (const method of ([] as string[]).concat(methods))
      found.push({ method: method.toUpperCase(), url, isPublic: opts?.config?.public === true });
  };
  const shorthand = (method: string) => (url: string, opts?: object) => {
    add(method, url, typeof opts === 'object' ? opts : undefined);
    return recorder;
  };
  const target: Record<string, unknown> = {
    get: shorthand('GET'),
    post: shorthand('POST'),
    put: shorthand('PUT'),
    patch: shorthand('PATCH'),
    delete: shorthand('DELETE'),
    route: (o: { method: string | string[]; url: string; config?: { public?: boolean } }) => {
      add(o.method, o.url, o);
      return recorder;
    },
  };
  // Anything else a route file might call on the app (decorators, schemas) is accepted and ignored.
  const recorder: unknown = new Proxy(target, { get: (t, p) => (typeof p === 'string' && p in t ? t[p] : () => recorder) });
  for (const register of [...ROUTES, ...V2_ROUTES]) register(recorder as App, deps as Deps);
  return found;
}
