import { MAX_QUERY_ITEMS } from './bounds.ts';
import type { FieldProblem } from './errors.ts';

/** keys.verifyKey `authorization.permissions`: a permission, or `{and: […]}` / `{or: […]}` of queries, nested. */
export type PermissionQuery = string | { and: PermissionQuery[] } | { or: PermissionQuery[] };

const MAX_DEPTH = 16;

/** Every problem of a query, with its JSON path; empty when the query is valid. */
export function permissionQueryProblems(q: unknown, path: string, depth = 0): FieldProblem[] {
  if (depth > MAX_DEPTH) return [{ path, message: `nests deeper than ${MAX_DEPTH} levels` }];
  if (typeof q === 'string')
    return q.length > 0 && q.length <= 512 ? [] : [{ path, message: 'a permission is a string of 1 to 512 characters' }];
  if (q === null || typeof q !== 'object' || Array.isArray(q))
    return [{ path, message: 'must be a permission string or an object {and: […]} or {or: […]}' }];
  const keys = Object.keys(q);
  if (keys.length !== 1 || (keys[0] !== 'and' && keys[0] !== 'or'))
    return [{ path, message: 'an object must have exactly one member, "and" or "or"' }];
  const op = keys[0];
  const children = (q as Record<string, unknown>)[op];
  if (!Array.isArray(children) || children.length === 0) return [{ path: `${path}/${op}`, message: 'must be a non-empty array' }];
  if (children.length > MAX_QUERY_ITEMS) return [{ path: `${path}/${op}`, message: `must hold at most ${MAX_QUERY_ITEMS} queries` }];
  return children.flatMap((c, i) => permissionQueryProblems(c, `${path}/${op}/${i}`, depth + 1));
}

/** Whether the held permissions satisfy a (valid) query. Matching is exact: these are the caller's own permission names. */
export function satisfies(q: PermissionQuery, held: ReadonlySet<string>): boolean {
  if (typeof q === 'string') return held.has(q);
  if ('and' in q) return q.and.every((c) => satisfies(c, held));
  return q.or.some((c) => satisfies(c, held));
}
