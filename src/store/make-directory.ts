import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Creates `dir` and whichever of its parents are missing, one at a time; throws the first failure (ENOENT,
 * ENOTDIR, EACCES, EROFS…) like `mkdir -p`.
 *
 * Not `mkdirSync(dir, { recursive: true })`: Node's recursive mkdir takes ENOENT to mean "the parent is
 * missing", creates the parent (EEXIST: fine) and tries again, forever, when a directory that exists refuses
 * children with ENOENT, as /proc and /sys do. `DATABASE_URL=sqlite:/proc/nope/keyhold.db` spun the server at
 * full CPU without a word. Here each missing directory is made once, so the loop is bounded by the path.
 */
export function makeDirectory(dir: string): void {
  const missing: string[] = [];
  for (let current = resolve(dir); ; ) {
    const found = statIfExists(current);
    if (found?.isDirectory()) break;
    if (found) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), { code: 'ENOTDIR', path: current });
    const parent = dirname(current);
    missing.push(current);
    if (parent === current) break;
    current = parent;
  }
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path);
    } catch (err) {
      // Another process made it meanwhile: fine, as long as it is a directory.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(path).isDirectory()) throw err;
    }
  }
}

function statIfExists(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
