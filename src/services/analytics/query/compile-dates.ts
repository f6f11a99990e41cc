import type { SqlNode as Node } from './parse.ts';
import type { ValueType } from './catalog.ts';
import type { Ex } from './compiled.ts';
import type { CompileContext, Scope } from './compile-context.ts';
import { invalidQuery } from './parse.ts';

/** A function's compiler: its argument nodes, and how to compile one in the caller's scope (or another, for lambdas). */
export type FunctionCompiler = (ctx: CompileContext, scope: Scope, args: Node[], compile: (n: Node, inScope?: Scope) => Ex) => Ex;

const DAY = 86_400_000;
const isTime = (t: ValueType): boolean => t === 'datetime' || t === 'date';

/** ms since the epoch of a UTC date-time text as ClickHouse reads one (`YYYY-MM-DD[ HH:MM:SS[.fff]]`), or null. */
export function parseTimeText(text: string): number | null {
  const iso = text.length === 10 ? `${text}T00:00:00Z` : `${text.replace(' ', 'T')}Z`;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) || text.length < 10 ? null : ms;
}

/** A value read as a time: a text parsed (at compile time when it is a literal), anything else as it is. */
export function asTime(ctx: CompileContext, e: Ex, constantText?: string): Ex {
  if (e.type !== 'string') return e;
  if (constantText !== undefined) {
    const ms = parseTimeText(constantText);
    if (ms === null) throw invalidQuery(`'${constantText}' is not a date-time (YYYY-MM-DD HH:MM:SS, UTC).`);
    ctx.release(e);
    return ctx.literal(ms, 'datetime');
  }
  return { sql: ctx.dialect.parseTime(ctx.dialect.value(e)), type: 'datetime' };
}

/** A text literal's value, to parse at compile time. */
const literalText = (e: Ex): string | undefined => (e.type === 'string' && typeof e.literal === 'string' ? e.literal : undefined);

/** Two operands made comparable as ClickHouse does: a text compared with a date-time is read as one. */
export function comparable(ctx: CompileContext, a: Ex, b: Ex): [Ex, Ex] {
  if (isTime(a.type) && b.type === 'string') return [a, asTime(ctx, b, literalText(b))];
  if (isTime(b.type) && a.type === 'string') return [asTime(ctx, a, undefined), b];
  return [a, b];
}

const numericType = (a: Ex, b: Ex): ValueType => (a.type === 'float' || b.type === 'float' ? 'float' : 'int');

/** `+ - * / %` with ClickHouse's rules for date-times and intervals. */
export function arithmetic(ctx: CompileContext, op: string, a: Ex, b: Ex): Ex {
  const d = ctx.dialect;
  const constant = Boolean(a.constant && b.constant);
  if (b.type === 'interval' && (op === '+' || op === '-')) return shift(ctx, a, b, op === '-');
  if (a.type === 'interval' && op === '+') return shift(ctx, b, a, false);
  if (a.type === 'interval' || b.type === 'interval') throw invalidQuery(`An INTERVAL cannot be used with ${op} here.`);
  if (isTime(a.type) && isTime(b.type) && op === '-') {
    return { sql: d.castInt(d.div(`(${d.value(a)} - ${d.value(b)})`, '1000')), type: 'int', constant };
  }
  if (op === '/') return { sql: d.div(d.value(a), d.value(b)), type: 'float', constant };
  return { sql: `(${d.value(a)} ${op} ${d.value(b)})`, type: op === '%' ? 'int' : numericType(a, b), constant };
}

/** A time moved by an interval (calendar months for MONTH, QUARTER and YEAR). */
function shift(ctx: CompileContext, time: Ex, interval: Ex, back: boolean): Ex {
  const d = ctx.dialect;
  const unit = interval.unit!;
  const constant = Boolean(time.constant && interval.constant);
  const sign = back ? '-' : '+';
  const type: ValueType = time.type === 'date' && !('ms' in unit && unit.ms % DAY !== 0) ? 'date' : time.type;
  if ('ms' in unit) return { sql: `(${d.value(time)} ${sign} (${interval.sql}) * ${unit.ms})`, type, constant };
  return { sql: d.addMonths(d.value(time), `(${sign}(${interval.sql}) * ${unit.months})`), type, constant };
}

/** The start of the `unitMs` bucket holding a ms time (times are never before 1970). */
const floorTo = (ctx: CompileContext, e: Ex, unitMs: number, type: ValueType): Ex => ({
  sql: `(${ctx.dialect.value(e)} - (${ctx.dialect.value(e)} % ${unitMs}))`,
  type,
  constant: e.constant,
});

/** The start of the week (Sunday, ClickHouse's mode 0; Monday for date_trunc): 1970-01-01 was a Thursday. */
const weekStart = (ctx: CompileContext, e: Ex, monday: boolean): Ex => {
  const day = `(${ctx.dialect.castInt(ctx.dialect.div(`(${ctx.dialect.value(e)} - (${ctx.dialect.value(e)} % ${DAY}))`, String(DAY)))})`;
  return { sql: `((${day} - ((${day} + ${monday ? 3 : 4}) % 7)) * ${DAY})`, type: 'date', constant: e.constant };
};

const one = (args: Node[], name: string, count = 1): void => {
  if (args.length !== count) throw invalidQuery(`${name} takes ${count} argument${count === 1 ? '' : 's'}.`);
};

const timeArg = (ctx: CompileContext, e: Ex): Ex => asTime(ctx, e, literalText(e));

const startOf =
  (unit: 'minute' | 'hour' | 'day' | 'week' | 'month' | 'quarter' | 'year'): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    one(args, `toStartOf${unit}`);
    const e = timeArg(ctx, compile(args[0]));
    if (unit === 'minute') return floorTo(ctx, e, 60_000, 'datetime');
    if (unit === 'hour') return floorTo(ctx, e, 3_600_000, 'datetime');
    if (unit === 'day') return floorTo(ctx, e, DAY, 'datetime');
    if (unit === 'week') return weekStart(ctx, e, false);
    return { sql: ctx.dialect.startOf(unit, ctx.dialect.value(e)), type: 'date', constant: e.constant };
  };

/** date_trunc('unit', t): the unit is a literal. */
const dateTrunc: FunctionCompiler = (ctx, _scope, args, compile) => {
  one(args, 'date_trunc', 2);
  const unitNode = args[0];
  if (unitNode.type !== 'string_literal') throw invalidQuery("date_trunc's unit must be a literal such as 'hour'.");
  const e = timeArg(ctx, compile(args[1]));
  const unit = unitNode.value.toLowerCase();
  const fixed: Record<string, number> = { second: 1_000, minute: 60_000, hour: 3_600_000, day: DAY };
  if (unit in fixed) return floorTo(ctx, e, fixed[unit], 'datetime');
  if (unit === 'week') return { ...weekStart(ctx, e, true), type: 'datetime' };
  if (unit === 'month' || unit === 'quarter' || unit === 'year') {
    return { sql: ctx.dialect.startOf(unit, ctx.dialect.value(e)), type: 'datetime', constant: e.constant };
  }
  throw invalidQuery(`date_trunc does not know the unit '${unitNode.value}'.`);
};

/** toDateTime(x): a text parsed, a number read as Unix seconds (as ClickHouse does), a time truncated to the second. */
const toDateTime =
  (keepMs: boolean): FunctionCompiler =>
  (ctx, _scope, args, compile) => {
    if (args.length < 1 || args.length > 2) throw invalidQuery('toDateTime takes a value (and for toDateTime64 a precision).');
    const e = compile(args[0]);
    const d = ctx.dialect;
    if (e.type === 'int' || e.type === 'float') return { sql: d.castInt(`(${d.value(e)} * 1000)`), type: 'datetime', constant: e.constant };
    const t = timeArg(ctx, e);
    if (!isTime(t.type)) throw invalidQuery(`${keepMs ? 'toDateTime64' : 'toDateTime'} cannot convert this value.`);
    return keepMs ? { ...t, type: 'datetime' } : floorTo(ctx, t, 1_000, 'datetime');
  };

const toDate: FunctionCompiler = (ctx, _scope, args, compile) => {
  one(args, 'toDate');
  const e = compile(args[0]);
  if (e.type === 'int' || e.type === 'float') {
    const d = ctx.dialect;
    return floorTo(ctx, { sql: d.castInt(`(${d.value(e)} * 1000)`), type: 'datetime', constant: e.constant }, DAY, 'date');
  }
  return floorTo(ctx, timeArg(ctx, e), DAY, 'date');
};

const now: FunctionCompiler = (ctx, _s, args) => {
  one(args, 'now', 0);
  return ctx.literal(ctx.nowMs - (ctx.nowMs % 1000), 'datetime');
};
const now64: FunctionCompiler = (ctx, _s, args) => {
  if (args.length > 1) throw invalidQuery('now64 takes at most a precision.');
  return ctx.literal(ctx.nowMs, 'datetime');
};
const today: FunctionCompiler = (ctx, _s, args) => {
  one(args, 'today', 0);
  return ctx.literal(ctx.nowMs - (ctx.nowMs % DAY), 'date');
};

const retype =
  (name: string, from: (t: ValueType) => boolean, type: ValueType): FunctionCompiler =>
  (_ctx, _s, args, compile) => {
    one(args, name);
    const e = compile(args[0]);
    if (!from(e.type) && e.type !== 'null') throw invalidQuery(`${name} cannot convert this value.`);
    return { ...e, type };
  };

const toInterval =
  (unit: string): FunctionCompiler =>
  (ctx, _s, args, compile) => {
    one(args, `toInterval${unit}`);
    const count = compile(args[0]);
    return { sql: ctx.dialect.value(count), type: 'interval', unit: INTERVAL_UNITS[unit.toUpperCase()], constant: count.constant };
  };

export const INTERVAL_UNITS: Record<string, { ms: number } | { months: number }> = {
  MILLISECOND: { ms: 1 },
  SECOND: { ms: 1_000 },
  MINUTE: { ms: 60_000 },
  HOUR: { ms: 3_600_000 },
  DAY: { ms: DAY },
  WEEK: { ms: 7 * DAY },
  MONTH: { months: 1 },
  QUARTER: { months: 3 },
  YEAR: { months: 12 },
};

/** The date and time functions of the allow-list, by ClickHouse's name. */
export const DATE_FUNCTIONS: Record<string, FunctionCompiler> = {
  now,
  now64,
  today,
  toDate,
  toDateTime: toDateTime(false),
  toDateTime64: toDateTime(true),
  toStartOfMinute: startOf('minute'),
  toStartOfHour: startOf('hour'),
  toStartOfDay: startOf('day'),
  toStartOfWeek: startOf('week'),
  toStartOfMonth: startOf('month'),
  toStartOfQuarter: startOf('quarter'),
  toStartOfYear: startOf('year'),
  date_trunc: dateTrunc,
  fromUnixTimestamp64Milli: retype('fromUnixTimestamp64Milli', (t) => t === 'int' || t === 'any', 'datetime'),
  toUnixTimestamp64Milli: retype('toUnixTimestamp64Milli', (t) => isTime(t) || t === 'int', 'int'),
  ...Object.fromEntries(Object.keys(INTERVAL_UNITS).map((u) => [`toInterval${u[0]}${u.slice(1).toLowerCase()}`, toInterval(u)])),
};
