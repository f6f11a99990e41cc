// The V8 CPU profiles a server started with `--cpu-prof` writes (one per thread as it ends), as the profiling
// benches read them (bench/profile-pair.ts, bench/recording-profile.ts).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/** A `.cpuprofile`, as far as the benches read it: the call tree's nodes, and each sample's node and time. */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame }>;
  /** µs, on the monotonic clock (process.hrtime's). */
  startTime: number;
  samples: number[];
  /** µs between one sample and the one before. */
  timeDeltas: number[];
}

/**
 * Every thread's profile in `dir`, the main thread (0) first. Node names them
 * `CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile`.
 */
export function threadProfiles(dir: string): Array<{ thread: number; profile: CpuProfile }> {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => ({ thread: Number(f.split('.')[4]), profile: JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile }))
    .sort((a, b) => a.thread - b.thread);
}

/** A function as the benches print it: its name, then its file (from src/, node_modules/ or bench/) and line. */
export const frameName = (f: CallFrame): string =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|node_modules|bench)\//, '$1/')}:${f.lineNumber + 1}`;

/** The time sample `i` stands for, µs: until the next sample (the last one: as long as the one before it). */
export const sampleUs = (profile: CpuProfile, i: number): number => profile.timeDeltas[i + 1] ?? profile.timeDeltas[i];
