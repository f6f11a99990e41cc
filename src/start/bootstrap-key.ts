import { rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeDirectory } from '../store/make-directory.ts';

/** Where the server's standard output goes: a terminal (`isTTY`) or a pipe, a file, journald. */
export interface Terminal {
  isTTY?: boolean;
  write(text: string): unknown;
}

/**
 * Hands a generated bootstrap root key to the operator, never through the log stream (which journald and
 * container runtimes keep): on a terminal it is shown there, as the only output besides the logs;
 * otherwise it is written to `file` (mode 0600, replacing any older file there). Returns the file, or
 * undefined when the key was shown on the terminal. Throws when the file cannot be written.
 */
export function handOverBootstrapKey(rootKey: string, terminal: Terminal, file: string): string | undefined {
  if (terminal.isTTY) {
    terminal.write(`\nKeyhold bootstrap root key (shown once, keep it safe):\n\n  ${rootKey}\n\n`);
    return undefined;
  }
  makeDirectory(dirname(file));
  // A new file, so that mode 0600 applies from its first byte (an older file's mode would be kept).
  rmSync(file, { force: true });
  writeFileSync(file, `${rootKey}\n`, { mode: 0o600, flag: 'wx' });
  return file;
}
