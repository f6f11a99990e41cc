// Throughput of `keyhold keys scan` (not run by `npm run bench`); the requirement: 100 MB of files in ≤ 10 s.
//
//   node --disable-warning=ExperimentalWarning bench/scan.ts [--mb 100] [--files 400]
//
// It writes `--mb` MB of text into `--files` files under a scratch directory (nested 20 to a folder): source-like
// lines, hex digests, and many look-alikes that cost the scanner the most (`tok_` + 30..60 base58 characters:
// each one's checksum is computed and fails), with one real checksummed key planted in every 10th file. Then it
// runs `keyhold keys scan DIR --json` as its own process (start-up included, no database: no --check), checks
// that exactly the planted keys were found, and prints the bytes read, the wall time and MB/s. Exit 1 when the
// findings are wrong or the time is over 10 s.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { generateKey } from '../src/crypto/keys.ts';
import { base58 } from '../src/domain/base58.ts';
import { ROOT } from './server.ts';

const { values: args } = parseArgs({ options: { mb: { type: 'string', default: '100' }, files: { type: 'string', default: '400' } } });
const TOTAL = Number(args.mb) * 1024 * 1024;
const FILES = Number(args.files);

/** A pool of lines to sample from: generating 100 MB character by character would take longer than scanning it. */
function linePool(): string[] {
  const pool: string[] = [];
  for (let i = 0; i < 5_000; i++) {
    const r = i % 10;
    if (r < 5) pool.push(`  const value_${i} = compute(input.field_${i % 97}, options); // a comment about it`);
    else if (r < 7) pool.push(`sha256: ${randomBytes(32).toString('hex')}`);
    else pool.push(`token = "tok_${base58(randomBytes(16 + (i % 20)))}"`);
  }
  return pool;
}

function writeTree(dir: string): number {
  const pool = linePool();
  const perFile = Math.ceil(TOTAL / FILES);
  let planted = 0;
  for (let f = 0; f < FILES; f++) {
    const folder = join(dir, `d${Math.floor(f / 20)}`);
    mkdirSync(folder, { recursive: true });
    const lines: string[] = [];
    let size = 0;
    while (size < perFile) {
      const line = pool[(Math.random() * pool.length) | 0];
      lines.push(line);
      size += line.length + 1;
    }
    if (f % 10 === 0) {
      lines.splice(lines.length >> 1, 0, `API_KEY=${generateKey('sk_live', 16).key}`);
      planted++;
    }
    writeFileSync(join(folder, `f${f}.txt`), `${lines.join('\n')}\n`);
  }
  return planted;
}

const dir = mkdtempSync(join(tmpdir(), 'keyhold-scan-bench-'));
try {
  const planted = writeTree(dir);
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', join(ROOT, 'bin', 'keyhold.js'), 'keys', 'scan', dir, '--json'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (c) => {
    out += c;
  });
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  const seconds = (performance.now() - started) / 1000;
  const result = JSON.parse(out) as { findings: unknown[]; files: number; bytes: number };
  const mb = result.bytes / 1024 / 1024;
  console.log(`keys scan: ${result.files} files, ${mb.toFixed(1)} MiB in ${seconds.toFixed(2)} s = ${(mb / seconds).toFixed(0)} MiB/s`);
  console.log(
    `findings: ${result.findings.length} (planted ${planted}), exit ${code}; ${cpus().length} CPUs, load ${loadavg()[0].toFixed(2)}`,
  );
  if (result.findings.length !== planted || code !== 1) process.exitCode = 1;
  if (seconds > 10) {
    console.log('over the 10 s requirement');
    process.exitCode = 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
