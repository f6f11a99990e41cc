import { isObject } from '../domain/json.ts';

// A query parameter that takes several values (declared as an array: schemas/common.ts, QueryList) is read in
// both forms clients send it: repeated (`groupBy=key&groupBy=hour`, which Fastify's query parser turns into an
// array) and comma-joined (`groupBy=key,hour`, what Unkey's v1 SDK sends), or a mix of the two. The values of
// such a parameter (ids, names from a fixed set) never contain a comma.

/** Puts the lists of a parsed query into one shape: every value of a list parameter an array of its comma-separated items. */
export type QueryListSplitter = (query: unknown) => void;

interface QuerySchema {
  properties?: Record<string, { type?: unknown }>;
}

/**
 * The splitter of a query schema, compiled once: it visits only the members the schema declares as arrays
 * and replaces each one present with its items, split at every comma (`a,,b` keeps its empty item, which
 * the item's schema refuses). It runs before the query is validated, so the bounds on the number of items
 * (`maxItems`) and on each item apply to what was split. Undefined when the schema declares no array.
 */
export function compileQueryLists(schema: object): QueryListSplitter | undefined {
  const properties = (schema as QuerySchema).properties ?? {};
  const lists = Object.keys(properties).filter((name) => properties[name]?.type === 'array');
  if (lists.length === 0) return undefined;
  return (query) => {
    if (!isObject(query)) return;
    for (const name of lists) {
      if (!Object.hasOwn(query, name)) continue;
      const values = [query[name]].flat();
      query[name] = values.flatMap((v) => (typeof v === 'string' ? v.split(',') : [v]));
    }
  };
}
