import type { SqlNode as Node } from './parse.ts';
import type { FunctionCompiler } from './compile-dates.ts';
import { nameOf } from './compile-context.ts';
import { invalidQuery } from './parse.ts';

const two = (args: Node[], name: string): void => {
  if (args.length !== 2) throw invalidQuery(`${name} takes 2 arguments.`);
};

const groupArray =
  (distinct: boolean): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    if (args.length !== 1) throw invalidQuery(`${distinct ? 'groupUniqArray' : 'groupArray'} takes 1 argument.`);
    const e = compile(args[0]);
    return { sql: ctx.dialect.groupArray(ctx.dialect.value(e), distinct), type: 'array', elem: e.type };
  };

const membership =
  (name: 'has' | 'hasAny' | 'hasAll'): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    two(args, name);
    const [array, other] = args.map((a) => compile(a));
    if (array.type !== 'array') throw invalidQuery(`${name} takes an array first.`);
    const d = ctx.dialect;
    if (name === 'has') return { sql: d.has(d.value(array), d.castText(d.value(other))), type: 'int', cond: true };
    if (other.type !== 'array') throw invalidQuery(`${name} takes two arrays.`);
    return {
      sql: name === 'hasAny' ? d.hasAny(d.value(array), d.value(other)) : d.hasAll(d.value(array), d.value(other)),
      type: 'int',
      cond: true,
    };
  };

/** arrayJoin(array): one row per element; the expansion joins the SELECT's FROM items. */
const arrayJoin: FunctionCompiler = (ctx, scope, args, compile) => {
  if (args.length !== 1) throw invalidQuery('arrayJoin takes 1 argument.');
  const array = compile(args[0]);
  if (array.type !== 'array') throw invalidQuery('arrayJoin takes an array.');
  const { from, element } = ctx.dialect.arrayJoin(ctx.dialect.value(array), ctx.fresh('aj'));
  scope.laterals.push(from);
  return { sql: element, type: array.elem ?? 'string' };
};

/**
 * A lambda `x -> body`. The MySQL grammar reads `->` as its JSON operator, which binds tighter than anything
 * else, so `x -> x = 'a' OR x = 'b'` arrives as `((x -> x) = 'a') OR (x = 'b')`: the lambda's parameter sits
 * in the leftmost operand, and the body is the tree with that `x -> x` replaced by its right side.
 */
export function splitLambda(node: Node): { param: string; body: Node } | null {
  if (node.type !== 'binary_expr') return null;
  if (node.operator === '->') return { param: nameOf(node.left as Node), body: node.right as Node };
  const inner = splitLambda(node.left as Node);
  return inner ? { param: inner.param, body: { ...node, left: inner.body } as Node } : null;
}

/** arrayFilter(x -> condition, array): the elements for which the condition holds, in order. */
const arrayFilter: FunctionCompiler = (ctx, scope, args, compile) => {
  two(args, 'arrayFilter');
  const lambda = splitLambda(args[0]);
  if (!lambda) throw invalidQuery('arrayFilter takes a lambda first: arrayFilter(x -> condition, array).');
  const array = compile(args[1]);
  if (array.type !== 'array') throw invalidQuery('arrayFilter takes an array second.');
  const d = ctx.dialect;
  const sql = d.arrayFilter(d.value(array), ctx.fresh('af'), (element) => {
    const inner = { ...scope, lambdas: new Map(scope.lambdas).set(lambda.param, { sql: element, type: array.elem ?? 'string' }) };
    return d.cond(compile(lambda.body, inner));
  });
  return { sql, type: 'array', elem: array.elem ?? 'string' };
};

/** The array functions of the allow-list. */
export const ARRAY_FUNCTIONS: Record<string, FunctionCompiler> = {
  groupArray: groupArray(false),
  groupUniqArray: groupArray(true),
  has: membership('has'),
  hasAny: membership('hasAny'),
  hasAll: membership('hasAll'),
  arrayJoin,
  arrayFilter,
};
