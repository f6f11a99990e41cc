// What `npm run bench:scale` (bench/scale.ts) reports: each figure of a run with its target, as a markdown table
// (printed, and written to bench/out/scale-latest.md) and as JSON (bench/out/scale-<UTC timestamp>.json); and, from
// several such JSON files (runs at 100k, 1M and 10M keys), the table of how each figure grows.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fmt } from './report.ts';
import { OUT_DIR } from './server.ts';

export interface Figure {
  /** Stable across runs: the growth table matches figures by it. */
  id: string;
  label: string;
  value: number;
  unit: string;
  digits?: number;
  /** More about it, shown after the value (e.g. p50 and max beside a p95). */
  note?: string;
  target?: { op: '≤' | '≥'; value: number; unit?: string };
  /** Set where the target is not about `value` itself (e.g. every node within 1 s). */
  met?: boolean;
}

export interface ScaleRun {
  date: string;
  machine: string;
  command: string;
  wallSeconds: number;
  /** Keys of the big API. */
  keys: number;
  settings: Record<string, unknown>;
  figures: Figure[];
  /** Gaps and notes found by the run (e.g. a read with no route yet). */
  notes: string[];
  detail: Record<string, unknown>;
}

export const figure = (id: string, label: string, value: number, unit: string, more: Partial<Figure> = {}): Figure => ({
  id,
  label,
  value,
  unit,
  ...more,
});

export function metOf(f: Figure): boolean | undefined {
  if (f.met !== undefined) return f.met;
  if (!f.target || !Number.isFinite(f.value)) return undefined;
  return f.target.op === '≤' ? f.value <= f.target.value : f.value >= f.target.value;
}

const valueText = (f: Figure): string =>
  Number.isFinite(f.value) ? `${fmt(f.value, f.digits ?? (Math.abs(f.value) < 10 ? 2 : 0))}${f.unit ? ` ${f.unit}` : ''}` : '-';
const targetText = (f: Figure): string =>
  f.target ? `${f.target.op} ${fmt(f.target.value, 2).replace(/\.?0+$/, '')} ${f.target.unit ?? f.unit}`.trim() : '-';

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cs: string[]) => `| ${cs.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

export function markdown(run: ScaleRun): string {
  const rows = run.figures.map((f) => {
    const met = metOf(f);
    return [f.label, `${valueText(f)}${f.note ? ` (${f.note})` : ''}`, targetText(f), met === undefined ? '-' : met ? 'yes' : '**no**'];
  });
  const withTarget = run.figures.filter((f) => metOf(f) !== undefined);
  const missed = withTarget.filter((f) => metOf(f) === false);
  return [
    `Machine: ${run.machine}. Command: \`${run.command}\` (wall time ${Math.floor(run.wallSeconds / 60)} min ${Math.round(run.wallSeconds % 60)} s).`,
    '',
    table(['figure', 'value', 'target', 'met?'], rows),
    '',
    `Targets met: ${withTarget.length - missed.length} of ${withTarget.length}${missed.length ? ` (missed: ${missed.map((f) => f.label).join('; ')})` : ''}`,
    ...run.notes.map((n) => `- ${n}`),
  ].join('\n');
}

/** Prints the run's table and writes bench/out/scale-<timestamp>.json and bench/out/scale-latest.md; returns the JSON's path. */
export async function writeRun(run: ScaleRun): Promise<string> {
  const text = markdown(run);
  console.log(`\nResults\n\n${text}\n`);
  await mkdir(OUT_DIR, { recursive: true });
  const stamp = run.date.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const file = join(OUT_DIR, `scale-${stamp}.json`);
  await writeFile(file, `${JSON.stringify(run, null, 2)}\n`);
  await writeFile(join(OUT_DIR, 'scale-latest.md'), `${text}\n`);
  console.log(`Written: ${file} (and scale-latest.md in ${OUT_DIR})`);
  return file;
}

/** The growth table: one row per figure, one column per run (ordered by keys), from runs' JSON files. */
export async function growthTable(files: string[]): Promise<string> {
  const runs = (await Promise.all(files.map(async (f) => JSON.parse(await readFile(f, 'utf8')) as ScaleRun))).sort(
    (a, b) => a.keys - b.keys,
  );
  const ids: string[] = [];
  for (const run of runs) for (const f of run.figures) if (!ids.includes(f.id)) ids.push(f.id);
  const rows = ids.map((id) => {
    const first = runs.flatMap((r) => r.figures).find((f) => f.id === id)!;
    const cells = runs.map((r) => {
      const f = r.figures.find((x) => x.id === id);
      if (!f) return '-';
      const met = metOf(f);
      return `${valueText(f)}${met === false ? ' **(missed)**' : ''}`;
    });
    return [first.label, ...cells, targetText(first)];
  });
  const header = ['figure', ...runs.map((r) => `${fmt(r.keys, 0)} keys`), 'target'];
  const machines = [...new Set(runs.map((r) => r.machine))];
  return [
    `Runs: ${runs.map((r) => `${r.date.slice(0, 16)} (${fmt(r.keys, 0)} keys)`).join(', ')}; machine: ${machines.join('; ')}.`,
    '',
    table(header, rows),
  ].join('\n');
}
