import fc from 'fast-check';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Model } from './key-model.ts';
import type { ModelWorld } from './model-world.ts';

/**
 * Runs the model's command sequences (fast-check's `fc.commands` with `fc.asyncModelRun`) against a model
 * world, and keeps what fails: a failure is shrunk by fast-check and can be saved as a regression (its seed,
 * path and replayPath in test/model/regressions/), which the CI tests replay.
 */

export const REGRESSIONS_DIR = new URL('./regressions/', import.meta.url).pathname;

/** What a variant supplies: its commands and a fresh model for each sequence. */
export interface Variant<M extends object = Model> {
  name: 'keys' | 'cluster';
  commands: () => fc.Arbitrary<fc.AsyncCommand<M, ModelWorld>>[];
  model: () => M;
  /** Checks run after each sequence (e.g. a revoked key is refused everywhere after 1 s). */
  after?: (m: M, r: ModelWorld) => Promise<void>;
  maxCommands: number;
}

export interface SequenceRun {
  sequences: number;
  /** Requests sent (each command sends one or more). */
  requests: number;
  ms: number;
  failure?: Regression;
}

/** A failure, as saved and replayed: fast-check's seed and path, the commands' replayPath, and what was seen. */
export interface Regression {
  variant: 'keys' | 'cluster';
  dialect: string;
  seed: number;
  path: string;
  replayPath?: string;
  counterexample: string;
  error: string;
}

/** Runs `numRuns` sequences from `seed` (or replays `replay`). */
export async function runSequences<M extends object>(
  mw: ModelWorld,
  v: Variant<M>,
  opts: { numRuns: number; seed: number; replay?: Regression },
): Promise<SequenceRun> {
  const t0 = Date.now();
  const requestsBefore = mw.requests;
  const replayPath = opts.replay?.replayPath;
  let sequences = 0;
  const property = fc.asyncProperty(fc.commands(v.commands(), { maxCommands: v.maxCommands, size: 'max', replayPath }), async (cmds) => {
    sequences++;
    const model = v.model();
    await fc.asyncModelRun(() => ({ model, real: mw }), cmds);
    await v.after?.(model, mw);
  });
  const params = opts.replay ? { seed: opts.replay.seed, path: opts.replay.path, numRuns: 1 } : { seed: opts.seed, numRuns: opts.numRuns };
  const details = await fc.check(property, { ...params, endOnFailure: false });
  const run: SequenceRun = { sequences, requests: mw.requests - requestsBefore, ms: Date.now() - t0 };
  if (details.failed) {
    const counterexample = String(details.counterexample?.[0] ?? '');
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    run.failure = {
      variant: v.name,
      dialect: mw.dialect,
      seed: details.seed,
      path: details.counterexamplePath ?? '',
      replayPath: /replayPath="([^"]*)"/.exec(counterexample)?.[1],
      counterexample,
      error: error.slice(0, 4000),
    };
  }
  return run;
}

/** Saves a failure as a regression file; returns its path. */
export function saveRegression(f: Regression): string {
  mkdirSync(REGRESSIONS_DIR, { recursive: true });
  const file = join(REGRESSIONS_DIR, `${f.variant}-${f.dialect}-${f.seed}-${f.path.replaceAll(':', '.')}.json`.slice(0, 200));
  writeFileSync(file, `${JSON.stringify({ ...f, found: new Date().toISOString() }, null, 2)}\n`);
  return file;
}

/** The saved regressions of a variant. */
export function savedRegressions(variant: Regression['variant']): Array<{ file: string; regression: Regression }> {
  let files: string[];
  try {
    files = readdirSync(REGRESSIONS_DIR).filter((f) => f.startsWith(`${variant}-`) && f.endsWith('.json'));
  } catch {
    return [];
  }
  return files.sort().map((file) => ({ file, regression: JSON.parse(readFileSync(join(REGRESSIONS_DIR, file), 'utf8')) as Regression }));
}

/** A failure as a test failure message: what was seen, the shrunk sequence, and how to replay it. */
export function describeFailure(f: Regression): string {
  return (
    `${f.error}\n  shrunk sequence: ${f.counterexample}\n  seed ${f.seed}, path ${f.path}` +
    `\n  replay: KEYHOLD_MODEL_SEED=${f.seed} KEYHOLD_MODEL_PATH=${f.path} KEYHOLD_MODEL_DIALECTS=${f.dialect} npm run fuzz:model`
  );
}
