// The Node flags and the environment `npm start` gives the server, read from package.json's start script (V8's young
// generation, glibc's malloc arenas: docs/production.md, "Memory"), so that every benchmark runs the server as
// production does.

import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };

/** `--…` arguments of `npm start`, in order (e.g. --max-semi-space-size=8 --heap-growing-percent=20 …). */
export const SERVER_NODE_FLAGS: readonly string[] = pkg.scripts.start.split(/\s+/).filter((arg) => arg.startsWith('--'));

/**
 * The variables `npm start` sets for the server (`env NAME=${NAME:-default} node …`): the default, unless this
 * process has its own value (as an operator's would win).
 */
export const SERVER_ENV: Readonly<Record<string, string>> = Object.fromEntries(
  [...pkg.scripts.start.matchAll(/\b([A-Z_]+)=\$\{\1:-([^}]*)\}/g)].map(([, name, value]) => [name, process.env[name] ?? value]),
);
