import type { SqlNode as Node } from './parse.ts';
import { AppError } from '../../../domain/errors.ts';
import type { PublicTable } from './catalog.ts';
import { operatorText, type Scope } from './compile-context.ts';
import { INTERVAL_UNITS, parseTimeText } from './compile-dates.ts';

const DAY = 86_400_000;
/** A range may start this much before a table's retention (so `toStartOfDay(now() - INTERVAL 30 DAY)` stays allowed). */
export const RETENTION_GRACE_MS = DAY;

type Interval = { ms: number } | { months: number };
type Value = { time: number } | { interval: Interval; count: number };

const addMonths = (ms: number, months: number): number => {
  const d = new Date(ms);
  d.setUTCMonth(d.getUTCMonth() + months);
  return d.getTime();
};

const floorTo = (ms: number, unit: number): number => ms - (((ms % unit) + unit) % unit);

const START_OF: Record<string, (ms: number) => number> = {
  tostartofminute: (ms) => floorTo(ms, 60_000),
  tostartofhour: (ms) => floorTo(ms, 3_600_000),
  tostartofday: (ms) => floorTo(ms, DAY),
  todate: (ms) => floorTo(ms, DAY),
  tostartofmonth: (ms) => Date.UTC(new Date(ms).getUTCFullYear(), new Date(ms).getUTCMonth(), 1),
  tostartofyear: (ms) => Date.UTC(new Date(ms).getUTCFullYear(), 0, 1),
  todatetime: (ms) => floorTo(ms, 1_000),
  todatetime64: (ms) => ms,
  fromunixtimestamp64milli: (ms) => ms,
  tounixtimestamp64milli: (ms) => ms,
};

function evalCall(node: Node, nowMs: number): Value | null {
  const nameNode = node.name as Node;
  if (nameNode.type !== 'identifier') return null;
  const name = nameNode.name.toLowerCase();
  const args = ((node.args as (Node & { expr: { args: { items: Node[] } } }) | undefined)?.expr.args.items ?? []) as Node[];
  if (name === 'now') return { time: floorTo(nowMs, 1_000) };
  if (name === 'now64') return { time: nowMs };
  if (name === 'today') return { time: floorTo(nowMs, DAY) };
  if (name.startsWith('tointerval') && args.length === 1) {
    const unit = INTERVAL_UNITS[name.slice('tointerval'.length).toUpperCase()];
    const n = args[0].type === 'number_literal' ? args[0].value : null;
    return unit && n !== null ? { interval: unit, count: n } : null;
  }
  const start = START_OF[name];
  if (!start || args.length === 0) return null;
  const arg = evalConst(args[0], nowMs);
  return arg && 'time' in arg ? { time: start(arg.time) } : null;
}

/** The value of a constant time expression (now(), literals, INTERVAL arithmetic, toStartOf…), or null when it is not one. */
export function evalConst(node: Node, nowMs: number): Value | null {
  switch (node.type) {
    case 'paren_expr':
      return evalConst(node.expr as Node, nowMs);
    case 'number_literal':
      return { time: node.value };
    case 'string_literal': {
      const ms = parseTimeText(node.value);
      return ms === null ? null : { time: ms };
    }
    case 'interval_literal': {
      const unit = INTERVAL_UNITS[operatorText((node.unit as { unitKw: unknown }).unitKw).toUpperCase()];
      const n = (node.value as Node).type === 'number_literal' ? (node.value as Node & { value: number }).value : null;
      return unit && n !== null ? { interval: unit, count: n } : null;
    }
    case 'func_call':
      return evalCall(node, nowMs);
    case 'binary_expr': {
      const op = operatorText(node.operator);
      const [a, b] = [evalConst(node.left as Node, nowMs), evalConst(node.right as Node, nowMs)];
      if (!a || !b || (op !== '+' && op !== '-') || !('time' in a) || !('interval' in b)) return null;
      const sign = op === '-' ? -1 : 1;
      const unit = b.interval;
      return { time: 'ms' in unit ? a.time + sign * b.count * unit.ms : addMonths(a.time, sign * b.count * unit.months) };
    }
    default:
      return null;
  }
}

/** Whether a node names the `time` column of one of the SELECT's public tables; returns that table. */
function timeColumnOf(node: Node, scope: Scope, tables: PublicTable[]): PublicTable | null {
  if (node.type === 'identifier' && node.name === 'time') {
    if (scope.aliases.has('time')) return null;
    return tables.length === 1 ? tables[0] : null;
  }
  if (
    node.type === 'member_expr' &&
    (node.property as Node).type === 'identifier' &&
    (node.property as Node & { name: string }).name === 'time'
  ) {
    const qualifier = (node.object as Node).type === 'identifier' ? (node.object as Node & { name: string }).name : null;
    return scope.sources.find((s) => s.name === qualifier)?.table ?? null;
  }
  return null;
}

/** Each lower bound `time >= x`, `time > x`, `x <= time`, `time BETWEEN x AND …` among the ANDed conditions. */
function lowerBounds(node: Node, scope: Scope, tables: PublicTable[]): Array<{ table: PublicTable; bound: Node }> {
  if (node.type === 'paren_expr') return lowerBounds(node.expr as Node, scope, tables);
  if (node.type === 'between_expr') {
    const table = timeColumnOf(node.left as Node, scope, tables);
    return table ? [{ table, bound: node.begin as Node }] : [];
  }
  if (node.type !== 'binary_expr') return [];
  const op = operatorText(node.operator).toUpperCase();
  if (op === 'AND') return [...lowerBounds(node.left as Node, scope, tables), ...lowerBounds(node.right as Node, scope, tables)];
  const left = timeColumnOf(node.left as Node, scope, tables);
  if (left && (op === '>=' || op === '>' || op === '=')) return [{ table: left, bound: node.right as Node }];
  const right = timeColumnOf(node.right as Node, scope, tables);
  if (right && (op === '<=' || op === '<' || op === '=')) return [{ table: right, bound: node.left as Node }];
  return [];
}

/**
 * Refuses a WHERE whose time range starts before a table's retention (with RETENTION_GRACE_MS): a lower bound
 * on a public table's `time` that is a constant expression earlier than now minus the table's retention.
 * Bounds it cannot evaluate are left to the data (the table holds nothing older anyway).
 */
export function checkRetention(where: Node, scope: Scope, tables: PublicTable[], nowMs: number): void {
  for (const { table, bound } of lowerBounds(where, scope, tables)) {
    const value = evalConst(bound, nowMs);
    if (!value || !('time' in value)) continue;
    const earliest = nowMs - table.retentionDays * DAY - RETENTION_GRACE_MS;
    if (value.time < earliest) {
      throw new AppError(
        'analytics/range-exceeds-retention',
        `The query's time range starts at ${new Date(value.time).toISOString()}, before what ${table.name} keeps (${table.retentionDays} days).`,
      );
    }
  }
}
