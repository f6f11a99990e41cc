// The queries of bench/analytics.ts's part 4 (bench/analytics-queries.ts): three typical questions as a user of
// Unkey's analytics would write them (in the style of its documented examples), optionally the same questions asked
// of the raw table, and what was loaded (Tally) to check their first answers against.

import type { VerificationEvent } from '../src/services/verification/verification-recorder.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** What was loaded, to check the answers: the workspace's events per day (and per key and day), the hottest key's per hour. */
export class Tally {
  readonly dayZero: number;
  readonly hourZero: number;
  readonly perDay: Float64Array;
  readonly perKeyDay: Int32Array;
  readonly hotPerHour: Float64Array;
  readonly days: number;

  readonly keys: number;

  constructor(start: number, end: number, keys: number) {
    this.keys = keys;
    this.dayZero = start - (start % DAY_MS);
    this.hourZero = start - (start % HOUR_MS);
    this.days = Math.ceil((end - this.dayZero) / DAY_MS) + 1;
    this.perDay = new Float64Array(this.days);
    this.perKeyDay = new Int32Array(this.days * keys);
    this.hotPerHour = new Float64Array(Math.ceil((end - this.hourZero) / HOUR_MS) + 1);
  }

  add(e: VerificationEvent, keyIndex: number): void {
    const d = Math.floor((e.time - this.dayZero) / DAY_MS);
    this.perDay[d]++;
    this.perKeyDay[d * this.keys + keyIndex]++;
    if (keyIndex === 0) this.hotPerHour[Math.floor((e.time - this.hourZero) / HOUR_MS)]++;
  }

  /** Per-day totals of the day buckets starting at or after `from`. */
  days30(from: number): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let d = 0; d < this.days; d++) {
      const t = this.dayZero + d * DAY_MS;
      if (t >= from && this.perDay[d] > 0) out.push([t, this.perDay[d]]);
    }
    return out;
  }

  /** The 10 largest per-key totals over the day buckets starting at or after `from`, descending. */
  top10(from: number): number[] {
    const totals = new Float64Array(this.keys);
    for (let d = 0; d < this.days; d++) {
      if (this.dayZero + d * DAY_MS < from) continue;
      for (let k = 0; k < this.keys; k++) totals[k] += this.perKeyDay[d * this.keys + k];
    }
    return [...totals].sort((a, b) => b - a).slice(0, 10);
  }

  /** The hottest key's per-hour totals of the hour buckets starting at or after `from`. */
  hours(from: number): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let h = 0; h < this.hotPerHour.length; h++) {
      const t = this.hourZero + h * HOUR_MS;
      if (t >= from && this.hotPerHour[h] > 0) out.push([t, this.hotPerHour[h]]);
    }
    return out;
  }
}

export type Rows = Array<Record<string, unknown>>;

export interface Query {
  id: string;
  label: string;
  sql: string;
  /** Whether the p95 target applies (the roll-up queries; the raw-table variants are shown beside them). */
  target: boolean;
  /** A problem with the first answer (checked against what was loaded), or undefined. */
  check?(rows: Rows, now: number): string | undefined;
}

const pairs = (rows: Rows, time: string, n: string): Array<[number, number]> =>
  rows.map((r) => [Date.parse(String(r[time])), Number(r[n])]);
const same = (got: unknown, want: unknown, what: string) =>
  JSON.stringify(got) === JSON.stringify(want)
    ? undefined
    : `${what}: got ${JSON.stringify(got).slice(0, 400)}, loaded ${JSON.stringify(want).slice(0, 400)}`;

/** The three typical queries, as a user of Unkey's analytics would write them (its documented examples' style). */
export function queriesFor(hotKeyId: string, tally: Tally | undefined, raw: boolean): Query[] {
  const queries: Query[] = [
    {
      id: 'per-day-30d',
      label: 'per-day totals of the workspace, 30 days',
      sql: 'SELECT time AS date, SUM(count) AS verifications FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY date ORDER BY date',
      target: true,
      check: tally && ((rows, now) => same(pairs(rows, 'date', 'verifications'), tally.days30(now - 30 * DAY_MS), 'per-day totals')),
    },
    {
      id: 'top-keys-7d',
      label: 'top 10 keys, 7 days',
      sql: 'SELECT key_id, SUM(count) AS total FROM key_verifications_per_day_v1 WHERE time >= now() - INTERVAL 7 DAY GROUP BY key_id ORDER BY total DESC LIMIT 10',
      target: true,
      check:
        tally &&
        ((rows, now) =>
          same(
            rows.map((r) => Number(r.total)),
            tally.top10(now - 7 * DAY_MS),
            'top 10 totals',
          )),
    },
    {
      id: 'key-hours-24h',
      label: "one key's per-hour series, 24 h",
      sql: `SELECT time, SUM(count) AS verifications FROM key_verifications_per_hour_v1 WHERE key_id = '${hotKeyId}' AND time >= now() - INTERVAL 24 HOUR GROUP BY time ORDER BY time`,
      target: true,
      check: tally && ((rows, now) => same(pairs(rows, 'time', 'verifications'), tally.hours(now - 24 * HOUR_MS), 'per-hour series')),
    },
  ];
  if (raw)
    queries.push(
      {
        id: 'raw-per-day-30d',
        label: 'per-day totals, 30 days, raw table',
        sql: 'SELECT toStartOfDay(fromUnixTimestamp64Milli(time)) AS date, count() AS verifications FROM key_verifications_v1 WHERE time >= now() - INTERVAL 30 DAY GROUP BY date ORDER BY date',
        target: false,
      },
      {
        id: 'raw-top-keys-7d',
        label: 'top 10 keys, 7 days, raw table',
        sql: 'SELECT key_id, count() AS total FROM key_verifications_v1 WHERE time >= now() - INTERVAL 7 DAY GROUP BY key_id ORDER BY total DESC LIMIT 10',
        target: false,
      },
      {
        id: 'raw-key-hours-24h',
        label: "one key's per-hour series, 24 h, raw table",
        sql: `SELECT toStartOfHour(fromUnixTimestamp64Milli(time)) AS hour, count() AS verifications FROM key_verifications_v1 WHERE key_id = '${hotKeyId}' AND time >= now() - INTERVAL 24 HOUR GROUP BY hour ORDER BY hour`,
        target: false,
      },
    );
  return queries;
}
