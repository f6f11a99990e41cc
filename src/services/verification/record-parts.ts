import type { ConfiguredLimit } from './key-record.ts';
import type { ConfiguredLimitRow } from './configured-limits.ts';

/**
 * Parts many cached key records have in common, shared instead of copied per record: a workspace's keys
 * name the same few workspace and API ids, and usually hold one of a few role and permission sets. With
 * 100,000 cached keys that is the difference between one string or set per distinct value and one per key.
 *
 * Each pool holds at most MAX_POOLED values and starts over when full: records keep what they hold (a
 * part is never changed once shared), only de-duplication of later loads starts afresh. So memory stays
 * bounded whatever the keys look like.
 */
const MAX_POOLED = 10_000;

const EMPTY_LIST: readonly string[] = Object.freeze([]);
const EMPTY_SET: ReadonlySet<string> = new Set();
const EMPTY_LIMITS: ReadonlyMap<string, ConfiguredLimit> = new Map();
const EMPTY_ROWS: readonly ConfiguredLimitRow[] = Object.freeze([]);

class Pool<T> {
  readonly #values = new Map<string, T>();
  get(key: string, make: () => T): T {
    let value = this.#values.get(key);
    if (value === undefined) {
      if (this.#values.size >= MAX_POOLED) this.#values.clear();
      value = make();
      this.#values.set(key, value);
    }
    return value;
  }
}

export class RecordParts {
  readonly #ids = new Pool<string>();
  readonly #roles = new Pool<readonly string[]>();
  readonly #permissions = new Pool<{ list: readonly string[]; set: ReadonlySet<string> }>();
  readonly #limits = new Pool<ReadonlyMap<string, ConfiguredLimit>>();
  readonly #limitRows = new Pool<readonly ConfiguredLimitRow[]>();

  /** One shared string per distinct id (workspace, API, environment). */
  id(value: string): string {
    return this.#ids.get(value, () => value);
  }

  /** Role names, sorted and de-duplicated, shared between records with the same roles. */
  roles(names: string[]): readonly string[] {
    if (names.length === 0) return EMPTY_LIST;
    const sorted = uniqueSorted(names);
    return this.#roles.get(JSON.stringify(sorted), () => Object.freeze(sorted));
  }

  /** Permission slugs, sorted and de-duplicated, with their set, shared between records with the same permissions. */
  permissions(slugs: string[]): { list: readonly string[]; set: ReadonlySet<string> } {
    if (slugs.length === 0) return { list: EMPTY_LIST, set: EMPTY_SET };
    const sorted = uniqueSorted(slugs);
    return this.#permissions.get(JSON.stringify(sorted), () => ({ list: Object.freeze(sorted), set: new Set(sorted) }));
  }

  /** Limits by name, shared between records with the same limits (the keys of one identity, or none). */
  limits(limits: ConfiguredLimit[]): ReadonlyMap<string, ConfiguredLimit> {
    if (limits.length === 0) return EMPTY_LIMITS;
    const key = JSON.stringify(limits);
    return this.#limits.get(key, () => new Map(limits.map((l) => [l.name, Object.freeze(l)])));
  }

  /** Stored limits with their ids, shared between records with the same ones (the keys of one identity without own limits, or none). */
  limitRows(rows: ConfiguredLimitRow[]): readonly ConfiguredLimitRow[] {
    if (rows.length === 0) return EMPTY_ROWS;
    return this.#limitRows.get(JSON.stringify(rows), () => Object.freeze(rows.map((r) => Object.freeze(r))));
  }
}

function uniqueSorted(values: string[]): string[] {
  return [...new Set(values)].sort();
}
