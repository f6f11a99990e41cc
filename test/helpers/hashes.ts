import { createHash } from 'node:crypto';

/** SPEC §4 sha256_base64 of a key, computed independently of the code under test. */
export const sha256b64 = (s: string): string => createHash('sha256').update(s).digest('base64');
