import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { run } from '../../src/cli/main.ts';
import type { CliAnswer } from './json.ts';

/** What an in-process CLI run printed: its exit code, its lines, and with --json the one JSON line parsed. */
export interface CliResult<T = CliAnswer> {
  code: number;
  out: string[];
  err: string[];
  json: T;
}

/**
 * Runs the CLI in-process with these environment variables set (an undefined value unsets one), restoring them
 * afterwards. With --json among `argv` it asserts that exactly one line was printed and parses it into `json`.
 */
export async function runCli<T = CliAnswer>(env: Record<string, string | undefined>, argv: string[]): Promise<CliResult<T>> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const apply = (vars: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(vars))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  };
  apply(env);
  const out: string[] = [];
  const err: string[] = [];
  // A streaming command (`keyhold export …`) writes chunks of lines: they are split into `out`'s lines.
  let streamed = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      streamed += String(chunk);
      done();
    },
  });
  try {
    const code = await run(
      argv,
      (s) => out.push(s),
      (s) => err.push(s),
      stream,
    );
    if (streamed) out.push(...streamed.replace(/\n$/, '').split('\n'));
    let json: T | undefined;
    if (argv.includes('--json')) {
      assert.equal(out.length, 1, `--json prints exactly one line, got ${JSON.stringify({ out, err })}`);
      json = JSON.parse(out[0]) as T;
    }
    return { code, out, err, json: json as T };
  } finally {
    apply(saved);
  }
}
