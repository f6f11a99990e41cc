import type { SqlNode as Node } from './parse.ts';
import { ALLOWED_FUNCTIONS, type ValueType } from './catalog.ts';
import type { Ex } from './compiled.ts';
import type { CompileContext, Scope } from './compile-context.ts';
import { DATE_FUNCTIONS, type FunctionCompiler } from './compile-dates.ts';
import { formatDateTime, toStringOf } from './compile-format.ts';
import { ARRAY_FUNCTIONS } from './compile-arrays.ts';
import { invalidQuery } from './parse.ts';

const count = (args: Node[], name: string, min: number, max = min): void => {
  if (args.length < min || args.length > max) throw invalidQuery(`${name} takes ${min === max ? min : `${min} to ${max}`} argument(s).`);
};

const numeric = (t: ValueType): boolean => t === 'int' || t === 'float' || t === 'bool' || t === 'null' || t === 'any';

/** count(), count(*), count(x), count(DISTINCT x): a number; NULLs are not counted. */
const countFn =
  (distinct: boolean): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    if (args.length === 0 || (args.length === 1 && args[0].type === 'all_columns')) return { sql: 'COUNT(*)', type: 'int' };
    count(args, 'count', 1);
    return { sql: `COUNT(${distinct ? 'DISTINCT ' : ''}${ctx.dialect.value(compile(args[0]))})`, type: 'int' };
  };

/** sum: 0 over no rows, as in ClickHouse. */
const sum: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'sum', 1);
  const e = compile(args[0]);
  if (!numeric(e.type)) throw invalidQuery('sum takes a number.');
  return { sql: `COALESCE(SUM(${ctx.dialect.value(e)}), 0)`, type: e.type === 'float' ? 'float' : 'int' };
};

const sumIf: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'sumIf', 2);
  const [e, cond] = [compile(args[0]), compile(args[1])];
  const d = ctx.dialect;
  return { sql: `COALESCE(SUM(CASE WHEN ${d.cond(cond)} THEN ${d.value(e)} ELSE 0 END), 0)`, type: e.type === 'float' ? 'float' : 'int' };
};

const countIf: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'countIf', 1);
  return { sql: `COUNT(CASE WHEN ${ctx.dialect.cond(compile(args[0]))} THEN 1 END)`, type: 'int' };
};

const avg: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'avg', 1);
  return { sql: `AVG(${ctx.dialect.castFloat(ctx.dialect.value(compile(args[0])))})`, type: 'float' };
};

const minMax =
  (fn: 'MIN' | 'MAX'): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    count(args, fn.toLowerCase(), 1);
    const e = compile(args[0]);
    return { ...e, sql: `${fn}(${ctx.dialect.value(e)})`, constant: false };
  };

const any: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'any', 1);
  const e = compile(args[0]);
  return { ...e, sql: ctx.dialect.anyValue(ctx.dialect.value(e)), constant: false };
};

const uniq: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'uniq', 1);
  return { sql: `COUNT(DISTINCT ${ctx.dialect.value(compile(args[0]))})`, type: 'int' };
};

const ifFn: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'if', 3);
  const [c, a, b] = args.map((n) => compile(n));
  const d = ctx.dialect;
  return { sql: `(CASE WHEN ${d.cond(c)} THEN ${d.value(a)} ELSE ${d.value(b)} END)`, type: a.type === 'null' ? b.type : a.type };
};

const coalesce: FunctionCompiler = (ctx, _scope, args, compile) => {
  if (args.length === 0) throw invalidQuery('coalesce takes at least one argument.');
  const parts = args.map((n) => compile(n));
  return {
    sql: `COALESCE(${parts.map((e) => ctx.dialect.value(e)).join(', ')})`,
    type: parts.find((e) => e.type !== 'null')?.type ?? 'null',
  };
};

const unary =
  (name: string, sql: (ctx: CompileContext, v: string) => string, type?: ValueType): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    count(args, name, 1);
    const e = compile(args[0]);
    return { sql: sql(ctx, ctx.dialect.value(e)), type: type ?? e.type, constant: e.constant };
  };

const round: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'round', 1, 2);
  const e = compile(args[0]);
  const digits = args[1] ? ctx.dialect.value(compile(args[1])) : '0';
  if (e.type === 'int') return e;
  return { sql: ctx.dialect.round(ctx.dialect.value(e), digits), type: 'float', constant: e.constant };
};

const toInt: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'toInt64', 1);
  return { sql: ctx.dialect.castInt(ctx.dialect.value(compile(args[0]))), type: 'int' };
};

const quantile =
  (level: Ex): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    count(args, 'quantile', 1);
    return {
      sql: ctx.dialect.quantile(ctx.dialect.value(level), ctx.dialect.castFloat(ctx.dialect.value(compile(args[0])))),
      type: 'float',
    };
  };

const substring: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'substring', 2, 3);
  const [s, from, len] = args.map((a) => ctx.dialect.value(compile(a)));
  return { sql: ctx.dialect.substring(s, from, len ?? null), type: 'string' };
};

const concat: FunctionCompiler = (ctx, _scope, args, compile) => {
  if (args.length < 1) throw invalidQuery('concat takes at least one argument.');
  return { sql: ctx.dialect.concat(args.map((a) => toStringOf(ctx, compile(a)))), type: 'string' };
};

const affix =
  (end: boolean): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    count(args, end ? 'endsWith' : 'startsWith', 2);
    const [s, fix] = args.map((a) => ctx.dialect.value(compile(a)));
    const d = ctx.dialect;
    const from = end ? `${d.byteLength(s)} - ${d.byteLength(fix)} + 1` : '1';
    return { sql: `(${d.substring(s, `(${from})`, d.byteLength(fix))} = ${fix})`, type: 'int', cond: true };
  };

const length: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'length', 1);
  const e = compile(args[0]);
  const v = ctx.dialect.value(e);
  return { sql: e.type === 'array' ? ctx.dialect.arrayLength(v) : ctx.dialect.byteLength(v), type: 'int' };
};

const toStringFn: FunctionCompiler = (ctx, _scope, args, compile) => {
  count(args, 'toString', 1);
  const e = compile(args[0]);
  return { sql: toStringOf(ctx, e), type: 'string', constant: e.constant };
};

/** The allow-list's functions other than dates and arrays, by ClickHouse's name. */
const FUNCTIONS: Record<string, FunctionCompiler> = {
  ...DATE_FUNCTIONS,
  ...ARRAY_FUNCTIONS,
  count: countFn(false),
  sum,
  sumIf,
  countIf,
  avg,
  min: minMax('MIN'),
  max: minMax('MAX'),
  any,
  uniq,
  uniqExact: uniq,
  if: ifFn,
  coalesce,
  round,
  floor: unary('floor', (_c, v) => `FLOOR(${v})`),
  ceil: unary('ceil', (_c, v) => `CEIL(${v})`),
  abs: unary('abs', (_c, v) => `ABS(${v})`),
  lower: unary('lower', (_c, v) => `LOWER(${v})`, 'string'),
  upper: unary('upper', (_c, v) => `UPPER(${v})`, 'string'),
  trim: unary('trim', (_c, v) => `TRIM(${v})`, 'string'),
  substring,
  concat,
  startsWith: affix(false),
  endsWith: affix(true),
  length,
  toString: toStringFn,
  toInt32: toInt,
  toInt64: toInt,
  toFloat64: unary('toFloat64', (c, v) => c.dialect.castFloat(v), 'float'),
  formatDateTime,
};

/** Compiles a call of an allow-listed function (validate.ts has refused the others). */
export function compileCall(ctx: CompileContext, scope: Scope, node: Node, compile: (n: Node, inScope?: Scope) => Ex): Ex {
  const nameNode = node.name as Node;
  const argsNode = (node.args as (Node & { expr: Node & { args: Node; distinctKw?: unknown } }) | undefined)?.expr;
  const args = argsNode ? ((argsNode.args as Node & { items: Node[] }).items ?? []) : [];
  if (nameNode.type === 'func_call') {
    const levelArgs = ((nameNode.args as Node & { expr: { args: { items: Node[] } } }).expr.args.items ?? []) as Node[];
    if (canonical(nameNode) !== 'quantile' || levelArgs.length !== 1) throw invalidQuery('Only quantile(level)(x) takes parameters.');
    return quantile(compile(levelArgs[0]))(ctx, scope, args, compile);
  }
  const name = canonical(node);
  if (name === 'quantile') throw invalidQuery('quantile is called as quantile(level)(x).');
  if (name === 'count' && argsNode?.distinctKw) return countFn(true)(ctx, scope, args, compile);
  if (argsNode?.distinctKw) throw invalidQuery(`DISTINCT is only allowed in count().`);
  const fn = FUNCTIONS[name];
  if (!fn) throw invalidQuery(`Function '${name}' is not supported.`);
  return fn(ctx, scope, args, compile);
}

const canonical = (call: Node): string => {
  const n = call.name as Node;
  const name = n.type === 'identifier' ? n.name : '';
  return ALLOWED_FUNCTIONS.get(name.toLowerCase()) ?? name;
};
