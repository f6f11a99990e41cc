import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CHECKSUM_LENGTH, hasValidChecksum, keyStart } from '../../crypto/keys.ts';

/** A string with a Keyhold key's shape and a valid checksum, where it was found. `key` is for lookups only: never print it. */
export interface KeySighting {
  file: string;
  /** 1-based line and column (the column counts bytes). */
  line: number;
  column: number;
  /** The key's visible start (prefix_ + 4 characters, or its first 4): all a report may show of it. */
  start: string;
  key: string;
}

/** What a scan read. */
export interface ScanStats {
  files: number;
  bytes: number;
}

/** Directories a walk does not enter unless they are named themselves. */
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);
const CHUNK_BYTES = 1024 * 1024;
/** Longest run of key characters looked at: a prefix (≤ 16), `_`, 255 random bytes in base58 (349) and the checksum. */
const MAX_TOKEN = 512;
/** The shortest key: 16 random bytes in base58 (22 characters) and the checksum. */
const MIN_TAIL = 22 + CHECKSUM_LENGTH;
// Runs of the characters a key (prefix included) is made of; a key is one such run or a run's end after `_` or `-`.
const TOKEN = new RegExp(`[A-Za-z0-9_-]{${MIN_TAIL},}`, 'g');
const BASE58_TAIL = new RegExp(`^[1-9A-HJ-NP-Za-km-z]{${MIN_TAIL},}$`);
const TOKEN_CHAR = /[A-Za-z0-9_-]/;

/**
 * Walks `paths` (files and directories; `.git` and `node_modules` are skipped inside a walk but read when named)
 * and calls `found` for every string shaped like a Keyhold key whose checksum is valid: random text passes the
 * checksum once in 58^6 (about 4·10^10) tries. Symbolic links inside a walk are not followed. Files are read in
 * 1 MiB chunks, so any file size takes the same memory.
 */
export async function scanPaths(paths: readonly string[], found: (s: KeySighting) => void): Promise<ScanStats> {
  const stats: ScanStats = { files: 0, bytes: 0 };
  for (const path of paths) {
    const info = await stat(path);
    if (info.isDirectory()) await walk(path, found, stats);
    else if (info.isFile()) await scanFile(path, found, stats);
  }
  return stats;
}

async function walk(dir: string, found: (s: KeySighting) => void, stats: ScanStats): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && !SKIPPED_DIRECTORIES.has(entry.name)) await walk(path, found, stats);
    else if (entry.isFile()) await scanFile(path, found, stats);
  }
}

/** Scans one file chunk by chunk; a run of key characters cut by a chunk's end is carried into the next chunk. */
async function scanFile(file: string, found: (s: KeySighting) => void, stats: ScanStats): Promise<void> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    const position = { line: 1, lineStart: 0 };
    let carry = '';
    let base = 0; // the file offset of the text's first character
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
      stats.bytes += bytesRead;
      // latin1: one character per byte, so offsets are byte offsets; a key is ASCII and multi-byte UTF-8 never looks like one.
      const text = carry + buffer.toString('latin1', 0, bytesRead);
      let end = text.length;
      if (bytesRead > 0) while (end > 0 && text.length - end < MAX_TOKEN && TOKEN_CHAR.test(text[end - 1])) end--;
      if (bytesRead > 0 && text.length - end >= MAX_TOKEN) end = text.length;
      scanText(text.slice(0, end), base, file, position, found);
      carry = text.slice(end);
      base += end;
      if (bytesRead === 0) break;
    }
    stats.files++;
  } finally {
    await handle.close();
  }
}

function scanText(
  text: string,
  base: number,
  file: string,
  position: { line: number; lineStart: number },
  found: (s: KeySighting) => void,
) {
  let counted = 0; // newlines are counted up to here
  for (const match of text.matchAll(TOKEN)) {
    const key = keyIn(match[0]);
    if (key === undefined) continue;
    const at = match.index + match[0].length - key.length;
    for (let nl = text.indexOf('\n', counted); nl !== -1 && nl < at; nl = text.indexOf('\n', nl + 1)) {
      position.line++;
      position.lineStart = base + nl + 1;
    }
    counted = at;
    const lastUnderscore = key.lastIndexOf('_');
    const start = lastUnderscore > 0 ? keyStart(key, key.slice(0, lastUnderscore)) : keyStart(key);
    found({ file, line: position.line, column: base + at - position.lineStart + 1, start, key });
  }
  for (let nl = text.indexOf('\n', counted); nl !== -1; nl = text.indexOf('\n', nl + 1)) {
    position.line++;
    position.lineStart = base + nl + 1;
  }
}

/**
 * The Keyhold key a run of key characters is or ends with: its part after the last `_` is base58 (random part
 * and checksum), and the key starts at the run's start or just after one of its `_` or `-` (prefixes may hold
 * both). The longest candidate with a valid checksum wins.
 */
function keyIn(run: string): string | undefined {
  if (run.length > MAX_TOKEN) return undefined;
  const last = run.lastIndexOf('_');
  if (!BASE58_TAIL.test(run.slice(last + 1))) return undefined;
  if (hasValidChecksum(run)) return run;
  for (let i = 0; i < last; i++) {
    const c = run.charCodeAt(i);
    if ((c === 95 || c === 45) && hasValidChecksum(run.slice(i + 1))) return run.slice(i + 1);
  }
  return last >= 0 && hasValidChecksum(run.slice(last + 1)) ? run.slice(last + 1) : undefined;
}
