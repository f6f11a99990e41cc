import type { ValueType } from './catalog.ts';

/** A compiled expression: its SQL text in the store's dialect and its type as the compiler tracks it. */
export interface Ex {
  sql: string;
  type: ValueType;
  /** PostgreSQL: the SQL is a boolean (a comparison), not a 0/1 value; SQLite has no difference. */
  cond?: boolean;
  /** Arrays: the type of their elements. */
  elem?: ValueType;
  /** Intervals: `sql` counts units of this many milliseconds, or of this many months. */
  unit?: { ms: number } | { months: number };
  /** Whether `sql` is a bound literal or an expression of literals only (no column). */
  constant?: boolean;
  /** A bound literal's value. */
  literal?: unknown;
}

/** An output column of a compiled SELECT. */
export interface OutputColumn {
  name: string;
  type: ValueType;
  elem?: ValueType;
}

/** The store's own SQL for a query, with every user value bound as a parameter. */
export interface CompiledQuery {
  sql: string;
  params: unknown[];
  columns: OutputColumn[];
}

/**
 * What differs between SQLite and PostgreSQL when compiling (compile-sqlite.ts, compile-postgres.ts): placeholders,
 * booleans, casts, calendar arithmetic and arrays (SQLite: JSON text; PostgreSQL: text[]).
 */
export interface SqlDialect {
  name: 'sqlite' | 'postgres';
  /** The placeholder of parameter `index` (1-based), typed where the store needs it. */
  param(index: number, type: ValueType): string;
  /** The expression as a condition (WHERE, AND, CASE WHEN). */
  cond(e: Ex): string;
  /** The expression as a value (a column, an argument). */
  value(e: Ex): string;
  /** Division as ClickHouse does it: always a float; by zero NULL. */
  div(a: string, b: string): string;
  castInt(sql: string): string;
  castFloat(sql: string): string;
  castText(sql: string): string;
  /** Quotes an identifier. */
  id(name: string): string;
  /** A condition every row a table scan reads evaluates (SQLite: the deadline check), or null. */
  rowCheck: string | null;
  /** The first ms of the month / quarter / year of a ms timestamp. */
  startOf(unit: 'month' | 'quarter' | 'year', ms: string): string;
  /** A ms timestamp moved by `months` calendar months. */
  addMonths(ms: string, months: string): string;
  /** ms since the epoch of a date-time text (`YYYY-MM-DD[ HH:MM:SS[.fff]]`, UTC), NULL when it is not one. */
  parseTime(text: string): string;
  /** One field of a ms timestamp as text: `%Y %m %d %H %M %S %j %y %e %B` (strftime's names, zero padded). */
  timePart(spec: string, ms: string): string;
  byteLength(text: string): string;
  substring(text: string, from: string, length: string | null): string;
  concat(parts: string[]): string;
  /** Arrays of text: literals, membership, length, aggregation, filtering and expansion. */
  arrayOf(items: string[]): string;
  has(array: string, value: string): string;
  hasAny(array: string, other: string): string;
  hasAll(array: string, other: string): string;
  arrayLength(array: string): string;
  groupArray(value: string, distinct: boolean): string;
  /** The array's elements for which `cond(element)` holds, in order. */
  arrayFilter(array: string, alias: string, cond: (element: string) => string): string;
  /** A FROM item expanding `array` into rows named `alias`, and the SQL of one element. */
  arrayJoin(array: string, alias: string): { from: string; element: string };
  quantile(level: string, value: string): string;
  /** Banker's rounding to `digits` decimals, as ClickHouse rounds floats. */
  round(value: string, digits: string): string;
  anyValue(value: string): string;
}

export const RESULT_ROWS_MAX = 10_000;
