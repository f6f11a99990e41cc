/** Parses a stored JSON document column; null stays null. */
export const parseJson = <T = Record<string, unknown>>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/** Byte size of a value as JSON (meta is at most 64 KiB). */
export const jsonSize = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

export const MAX_META_BYTES = 64 * 1024;

/** A JSON object (not an array, not null): what a rule on members of a possibly invalid body may read. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
