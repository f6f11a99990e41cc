import type { ValueType } from './catalog.ts';
import type { OutputColumn } from './compiled.ts';

/** A ms time as RFC 3339 in UTC, as Unkey's API writes ClickHouse's DateTime and Date values (`2026-11-28T21:00:00Z`). */
export function timeText(ms: number): string | null {
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return null;
  const iso = new Date(ms).toISOString();
  return ms % 1000 === 0 ? `${iso.slice(0, 19)}Z` : iso;
}

const finite = (n: number): number | null => (Number.isFinite(n) ? n : null);

/** One value as JSON: counts and sums are numbers, Bool a boolean, DateTime and Date RFC 3339 texts, arrays arrays. */
export function renderValue(value: unknown, type: ValueType, elem?: ValueType): unknown {
  if (value === null || value === undefined) return type === 'array' ? [] : null;
  switch (type) {
    case 'int':
    case 'float':
      return finite(Number(value));
    case 'bool':
      return value === true || Number(value) !== 0;
    case 'datetime':
    case 'date':
      return timeText(Number(value));
    case 'string':
      return String(value);
    case 'array': {
      const items: unknown[] = typeof value === 'string' ? JSON.parse(value) : Array.isArray(value) ? value : [];
      return items.map((v) => renderValue(v, elem ?? 'any'));
    }
    default:
      return typeof value === 'bigint' ? Number(value) : value;
  }
}

/** A result row (columns named c0, c1… by the compiler) as the object the API answers, keyed by the columns' names. */
export function renderRow(row: Record<string, unknown>, columns: readonly OutputColumn[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  columns.forEach((c, i) => {
    out[c.name] = renderValue(row[`c${i}`], c.type, c.elem);
  });
  return out;
}
