import type { ValueType } from './catalog.ts';
import type { SqlDialect } from './compiled.ts';

const PG_TYPES: Record<ValueType, string> = {
  int: 'bigint',
  float: 'float8',
  string: 'text',
  bool: 'int',
  datetime: 'bigint',
  date: 'bigint',
  array: 'text[]',
  interval: 'bigint',
  null: 'text',
  any: 'text',
};

/** A ms time as a timestamp without time zone, in UTC. */
const utc = (ms: string): string => `(to_timestamp((${ms}) / 1000.0) AT TIME ZONE 'UTC')`;
const epochMs = (timestamp: string): string => `(extract(epoch from ${timestamp}) * 1000)::bigint`;

const TO_CHAR: Record<string, string> = {
  Y: 'YYYY',
  y: 'YY',
  m: 'MM',
  d: 'DD',
  H: 'HH24',
  M: 'MI',
  S: 'SS',
  j: 'DDD',
  B: 'FMMonth',
};

const timePart = (spec: string, ms: string): string =>
  spec === 'e' ? `lpad(to_char(${utc(ms)}, 'FMDD'), 2, ' ')` : `to_char(${utc(ms)}, '${TO_CHAR[spec]}')`;

/**
 * PostgreSQL: parameters carry their type; comparisons are booleans, turned into 0/1 where ClickHouse has a
 * number; arrays are text[]; DateTime values are bigint ms.
 */
export const POSTGRES_QUERY_DIALECT: SqlDialect = {
  name: 'postgres',
  param: (index, type) => `$${index}::${PG_TYPES[type]}`,
  cond: (e) => (e.cond ? e.sql : `(${e.sql} <> 0)`),
  value: (e) => (e.cond ? `(${e.sql})::int` : e.sql),
  div: (a, b) => `((${a})::float8 / NULLIF(${b}, 0))`,
  castInt: (sql) => `CAST(trunc(CAST(${sql} AS numeric)) AS bigint)`,
  castFloat: (sql) => `(${sql})::float8`,
  castText: (sql) => `(${sql})::text`,
  id: (name) => `"${name.replaceAll('"', '""')}"`,
  rowCheck: null,
  startOf: (unit, ms) => epochMs(`date_trunc('${unit}', ${utc(ms)})`),
  addMonths: (ms, months) => epochMs(`(${utc(ms)} + make_interval(months => (${months})::int))`),
  parseTime: (text) => epochMs(`(${text})::timestamp`),
  timePart,
  byteLength: (text) => `octet_length(${text})`,
  substring: (text, from, length) =>
    length === null ? `substr(${text}, (${from})::int)` : `substr(${text}, (${from})::int, (${length})::int)`,
  concat: (parts) => `(${parts.join(' || ')})`,
  arrayOf: (items) => `ARRAY[${items.join(', ')}]::text[]`,
  has: (array, value) => `(${value} = ANY(${array}))`,
  hasAny: (a, b) => `(${a} && ${b})`,
  hasAll: (a, b) => `(${a} @> ${b})`,
  arrayLength: (array) => `cardinality(${array})`,
  groupArray: (value, distinct) => `array_agg(${distinct ? 'DISTINCT ' : ''}${value})`,
  arrayFilter: (array, alias, cond) =>
    `ARRAY(SELECT ${alias}.v FROM unnest(${array}) WITH ORDINALITY AS ${alias}(v, i) WHERE ${cond(`${alias}.v`)} ORDER BY ${alias}.i)`,
  arrayJoin: (array, alias) => ({ from: ` CROSS JOIN LATERAL unnest(${array}) AS ${alias}(value)`, element: `${alias}.value` }),
  quantile: (level, value) => `percentile_cont(${level}) WITHIN GROUP (ORDER BY ${value})`,
  round: (value, digits) => `(round((${value})::float8 * power(10, ${digits})) / power(10, ${digits}))`,
  anyValue: (value) => `MIN(${value})`,
};
