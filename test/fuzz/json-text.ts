import { createHash, randomBytes } from 'node:crypto';
import { toStringMethod } from 'fast-check';

/**
 * The values a fuzz request is made of: plain JSON, plus three kinds of leaves that JSON.stringify cannot
 * write. They are turned into text only when the request is sent (`jsonText`), so that a generated request
 * stays small to print and replay.
 */

/** JSON text written as is: `1e400`, `"\ud800"`, 10,000 levels of nesting, a 100,000-item array. */
export class Raw {
  readonly text: string;
  readonly label: string;
  constructor(text: string, label?: string) {
    this.text = text;
    this.label = label ?? (text.length > 60 ? `${text.slice(0, 40)}… (${text.length} chars)` : text);
  }
  [toStringMethod](): string {
    return `raw(${JSON.stringify(this.label)})`;
  }
}

/** An object written member by member, so that a name may repeat or be any text (`__proto__`). */
export class Members {
  readonly entries: Array<[string, unknown]>;
  constructor(entries: Array<[string, unknown]>) {
    this.entries = entries;
  }
}

/** The resources a workspace is seeded with, so that requests name things that exist and deeper code runs. */
export interface Seeds {
  apiId: string;
  keyId: string;
  /** The plaintext of `keyId`. */
  key: string;
  roleId: string;
  roleName: string;
  permissionId: string;
  permissionSlug: string;
  identityId: string;
  externalId: string;
  migrationId: string;
  /** A rate-limit namespace (ratelimits.*) with one override, of `overrideIdentifier`. */
  namespaceId: string;
  namespaceName: string;
  overrideIdentifier: string;
  /** A webhook endpoint (to a public address no test reaches) with one delivery of a test event. */
  endpointId: string;
  deliveryId: string;
  /** A usage export (disabled, to a public address no test reaches) with one delivered report. */
  exportId: string;
}

/** The seeds that are ids of resources (the rest are names chosen by the workspace). */
export const ID_SEEDS: ReadonlyArray<keyof Seeds> = [
  'apiId',
  'keyId',
  'key',
  'roleId',
  'permissionId',
  'identityId',
  'migrationId',
  'namespaceId',
  'endpointId',
  'deliveryId',
  'exportId',
];

/** A reference to a seeded resource, resolved when the request is sent; `fresh-hash` is a new key hash each time. */
export class SeedRef {
  readonly seed: keyof Seeds | 'fresh-hash';
  /** The member it is the value of (`apiId`, `roles[]`, …). */
  readonly member: string;
  constructor(seed: keyof Seeds | 'fresh-hash', member: string) {
    this.seed = seed;
    this.member = member;
  }
  [toStringMethod](): string {
    return `seed(${this.seed})`;
  }
}

/** How a SeedRef becomes text: from one workspace's seeds, or (isolation) from a mix of two. */
export type Resolve = (ref: SeedRef) => string;

export const resolveFrom =
  (seeds: Seeds): Resolve =>
  (ref) =>
    ref.seed === 'fresh-hash' ? freshHash() : seeds[ref.seed];

/** The sha256_base64 hash of a new random key. */
export const freshHash = (): string => createHash('sha256').update(randomBytes(16)).digest('base64');

/** The JSON text of a generated value; the leaves above are written as they say. */
export function jsonText(value: unknown, resolve: Resolve): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof SeedRef) return JSON.stringify(resolve(value));
  if (value instanceof Members) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v, resolve)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map((v) => jsonText(v, resolve)).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return jsonText(new Members(Object.entries(value).filter(([, v]) => v !== undefined)), resolve);
  return JSON.stringify(value) ?? 'null';
}

/** Whether a generated value holds a SeedRef to one of `seeds` (used to know what a request names). */
export function seedsIn(value: unknown, out: Set<string> = new Set()): Set<string> {
  if (value instanceof SeedRef) out.add(value.seed);
  else if (value instanceof Members) for (const [, v] of value.entries) seedsIn(v, out);
  else if (Array.isArray(value)) for (const v of value) seedsIn(v, out);
  else if (value !== null && typeof value === 'object' && !(value instanceof Raw)) for (const v of Object.values(value)) seedsIn(v, out);
  return out;
}
