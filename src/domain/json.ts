/** Parses a stored JSON document column; null stays null. */
export const parseJson = <T = Record<string, unknown>>(text: string | null): T | null => (text === null ? null : JSON.parse(text) as T);

/** Byte size of a value as JSON (SPEC §4: meta ≤ 64 KiB). */
export const jsonSize = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

export const MAX_META_BYTES = 64 * 1024;
