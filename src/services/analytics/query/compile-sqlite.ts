import type { SqlDialect } from './compiled.ts';

const INTEGER_TYPES = new Set(['int', 'bool', 'datetime', 'date']);

const MONTH_NAMES = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** strftime of a ms time (UTC). */
const strftime = (spec: string, ms: string): string => `strftime('%${spec}', (${ms}) / 1000.0, 'unixepoch')`;

/** Seconds of a strftime result as ms. */
const toMs = (seconds: string): string => `(CAST(${seconds} AS INTEGER) * 1000)`;

function timePart(spec: string, ms: string): string {
  if (spec === 'y') return `substr(${strftime('Y', ms)}, 3)`;
  if (spec === 'e') return `printf('%2d', CAST(${strftime('d', ms)} AS INTEGER))`;
  if (spec === 'B') {
    const whens = MONTH_NAMES.map((name, i) => `WHEN ${i + 1} THEN '${name}'`).join(' ');
    return `(CASE CAST(${strftime('m', ms)} AS INTEGER) ${whens} END)`;
  }
  return strftime(spec, ms);
}

function startOf(unit: 'month' | 'quarter' | 'year', ms: string): string {
  const base = `(${ms}) / 1000, 'unixepoch'`;
  if (unit === 'year') return toMs(`strftime('%s', ${base}, 'start of year')`);
  if (unit === 'month') return toMs(`strftime('%s', ${base}, 'start of month')`);
  const back = `'-' || ((CAST(strftime('%m', ${base}) AS INTEGER) - 1) % 3) || ' months'`;
  return toMs(`strftime('%s', ${base}, 'start of month', ${back})`);
}

/**
 * SQLite: arrays (tags) are JSON text, read with json_each; DateTime values are integer ms; the functions SQL
 * lacks (quantile, banker's rounding) and the deadline check are registered on the query worker's connection
 * (src/store/dialects/sqlite-analytics-worker.ts).
 */
export const SQLITE_QUERY_DIALECT: SqlDialect = {
  name: 'sqlite',
  // node:sqlite binds every JS number as a REAL: whole-number types are cast back.
  param: (index, type) => (INTEGER_TYPES.has(type) ? `CAST(?${index} AS INTEGER)` : `?${index}`),
  cond: (e) => e.sql,
  value: (e) => e.sql,
  div: (a, b) => `(CAST(${a} AS REAL) / NULLIF(${b}, 0))`,
  castInt: (sql) => `CAST(${sql} AS INTEGER)`,
  castFloat: (sql) => `CAST(${sql} AS REAL)`,
  castText: (sql) => `CAST(${sql} AS TEXT)`,
  id: (name) => `"${name.replaceAll('"', '""')}"`,
  // keyhold_live() is a call into JavaScript: on every row, it was most of a long scan's time. It runs on one row
  // read in 1,024 at random (SQLite's own random(), a few ns): every millisecond or so of a scan, and as often when
  // a join reads the same rows again and again (each read draws again). It is given the row's `time` so that SQLite
  // evaluates it on every read of a row: without a column it ran once per row of each table, and a cross join of
  // a few rows ran on, unchecked, long after its deadline.
  rowCheck: '(random() % 1024 <> 0 OR keyhold_live(time))',
  startOf,
  addMonths: (ms, months) =>
    `(CAST(strftime('%s', (${ms}) / 1000, 'unixepoch', (${months}) || ' months', 'floor') AS INTEGER) * 1000 + (${ms}) % 1000)`,
  parseTime: (text) => `CAST(ROUND((julianday(${text}) - 2440587.5) * 86400000) AS INTEGER)`,
  timePart,
  byteLength: (text) => `length(CAST(${text} AS BLOB))`,
  substring: (text, from, length) => (length === null ? `substr(${text}, ${from})` : `substr(${text}, ${from}, ${length})`),
  concat: (parts) => `(${parts.join(' || ')})`,
  arrayOf: (items) => `json_array(${items.join(', ')})`,
  has: (array, value) => `EXISTS (SELECT 1 FROM json_each(${array}) WHERE value = ${value})`,
  hasAny: (a, b) => `EXISTS (SELECT 1 FROM json_each(${a}) AS x JOIN json_each(${b}) AS y ON x.value = y.value)`,
  hasAll: (a, b) => `NOT EXISTS (SELECT 1 FROM json_each(${b}) AS y WHERE y.value NOT IN (SELECT value FROM json_each(${a})))`,
  arrayLength: (array) => `json_array_length(${array})`,
  groupArray: (value, distinct) => `json_group_array(${distinct ? 'DISTINCT ' : ''}${value})`,
  arrayFilter: (array, alias, cond) =>
    `(SELECT json_group_array(${alias}.value) FROM (SELECT value FROM json_each(${array}) ORDER BY key) AS ${alias} WHERE ${cond(`${alias}.value`)})`,
  arrayJoin: (array, alias) => ({ from: ` CROSS JOIN json_each(${array}) AS ${alias}`, element: `${alias}.value` }),
  quantile: (level, value) => `keyhold_quantile(${value}, ${level})`,
  round: (value, digits) => `keyhold_round(${value}, ${digits})`,
  anyValue: (value) => `MIN(${value})`,
};
