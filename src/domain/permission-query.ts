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

/** One token of a v2 query string, at its 1-based character position. */
interface Token {
  kind: 'name' | 'and' | 'or' | '(' | ')';
  text: string;
  at: number;
}

const NAME = /[A-Za-z0-9._\-*:/]+/y;
const SPACE = /\s+/y;

/** The tokens of a v2 query string, or the syntax error of its first character that starts none. */
function tokens(text: string): Token[] | string {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    SPACE.lastIndex = i;
    if (SPACE.test(text)) {
      i = SPACE.lastIndex;
      continue;
    }
    const c = text[i];
    if (c === '(' || c === ')') {
      out.push({ kind: c, text: c, at: i + 1 });
      i++;
      continue;
    }
    NAME.lastIndex = i;
    const m = NAME.exec(text);
    if (!m) return `unexpected character ${JSON.stringify(c)} at character ${i + 1}`;
    const word = m[0].toLowerCase();
    out.push({ kind: word === 'and' || word === 'or' ? word : 'name', text: m[0], at: i + 1 });
    i += m[0].length;
  }
  return out;
}

/** A node of `op` over `children` (the child alone when there is one), nested so no node has more than MAX_QUERY_ITEMS. */
function node(op: 'and' | 'or', children: PermissionQuery[]): PermissionQuery {
  let items = children;
  while (items.length > MAX_QUERY_ITEMS) {
    const groups: PermissionQuery[] = [];
    for (let i = 0; i < items.length; i += MAX_QUERY_ITEMS) {
      const group = items.slice(i, i + MAX_QUERY_ITEMS);
      groups.push(group.length === 1 ? group[0] : op === 'and' ? { and: group } : { or: group });
    }
    items = groups;
  }
  if (items.length === 1) return items[0];
  return op === 'and' ? { and: items } : { or: items };
}

class SyntaxProblem extends Error {}

/**
 * Unkey v2's permission query string (keys.verifyKey `permissions`, e.g. `"a AND (b OR c)"`) as the
 * PermissionQuery v1 gives as JSON, so both are decided by `satisfies`: permission names of letters, digits
 * and `. _ - * : /` (`*` is a literal character, matching is exact), `AND` / `OR` in any case as whole
 * words, `AND` binding tighter than `OR`, and parentheses. Anything else (an unknown character, a missing
 * operand or parenthesis, `()`, a trailing token, a query nesting deeper than v1's) is a syntax error,
 * returned as a message naming its position.
 */
export function parsePermissionQueryText(text: string): { query: PermissionQuery } | { error: string } {
  const list = tokens(text);
  if (typeof list === 'string') return { error: list };
  let next = 0;
  const where = () => (next < list.length ? `${JSON.stringify(list[next].text)} at character ${list[next].at}` : 'the end of the query');
  const fail = (expected: string): never => {
    throw new SyntaxProblem(`expected ${expected} but found ${where()}`);
  };
  const sequence = (op: 'and' | 'or', operand: (depth: number) => PermissionQuery, depth: number): PermissionQuery => {
    const children = [operand(depth)];
    while (list[next]?.kind === op) {
      next++;
      children.push(operand(depth));
    }
    return node(op, children);
  };
  const or = (depth: number): PermissionQuery => sequence('or', and, depth);
  const and = (depth: number): PermissionQuery => sequence('and', operand, depth);
  const operand = (depth: number): PermissionQuery => {
    const token = list[next];
    if (token?.kind === 'name') {
      next++;
      return token.text;
    }
    if (token?.kind !== '(') return fail('a permission or "("');
    if (depth >= MAX_DEPTH) throw new SyntaxProblem(`parentheses nest deeper than ${MAX_DEPTH} levels at character ${token.at}`);
    next++;
    const inner = or(depth + 1);
    if (list[next]?.kind !== ')') return fail(`")" closing the "(" at character ${token.at}`);
    next++;
    return inner;
  };
  try {
    const query = or(0);
    if (next < list.length) fail('"AND", "OR" or the end of the query');
    const problems = permissionQueryProblems(query, '');
    return problems.length ? { error: problems[0].message } : { query };
  } catch (err) {
    if (err instanceof SyntaxProblem) return { error: err.message };
    throw err;
  }
}
