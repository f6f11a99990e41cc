import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, reapOnExit } from '../helpers/processes.ts';
import { sleep } from '../helpers/timing.ts';
import { exposedNames, keyholdUnderTraffic, prometheusTool, type KeyholdUnderTraffic } from './keyhold-under-traffic.ts';

const DIR = resolve(import.meta.dirname, '../../deploy/prometheus');
const RULES = join(DIR, 'alerts.yml');

/** The server metrics a PromQL text names (recording rules' `keyhold:…` names are the rules' own). */
export const metricNamesIn = (promql: string): Set<string> => new Set(promql.match(/\bkeyhold_[a-z0-9_]+/g) ?? []);

describe('Prometheus rules (deploy/prometheus)', () => {
  let keyhold: KeyholdUnderTraffic;
  before(async () => {
    keyhold = await keyholdUnderTraffic();
  });
  after(() => keyhold?.close());

  it('promtool accepts the rules and their unit tests pass', () => {
    const check = prometheusTool('promtool', ['check', 'rules', RULES]);
    assert.equal(check.status, 0, check.out);
    const unit = prometheusTool('promtool', ['test', 'rules', 'alerts.test.yml'], DIR);
    assert.equal(unit.status, 0, unit.out);
    assert.match(unit.out, /SUCCESS/);
  });

  it('every metric the rules name is exposed by a running server', async () => {
    const named = metricNamesIn(readFileSync(RULES, 'utf8'));
    assert.ok(named.size >= 10, [...named].join(' '));
    const exposed = exposedNames(await keyhold.metrics());
    assert.deepEqual(
      [...named].filter((n) => !exposed.has(n)),
      [],
    );
  });

  it('a real Prometheus scraping the server with the rules loaded evaluates every rule without error', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'keyhold-prometheus-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: [${JSON.stringify(RULES)}]`,
        'scrape_configs:',
        `  - { job_name: keyhold, static_configs: [{ targets: ["127.0.0.1:${keyhold.server.port}"] }] }`,
      ].join('\n'),
    );
    prometheusTool('prometheus', ['--version']);
    const args = [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`];
    const prometheus = reapOnExit(spawn('prometheus', [...args, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn']));
    let output = '';
    prometheus.stderr?.on('data', (c: Buffer) => (output += String(c)));
    t.after(async () => {
      prometheus.kill('SIGTERM');
      if (prometheus.exitCode === null) await new Promise((r) => prometheus.once('exit', r));
    });
    const api = async <T>(path: string): Promise<T | undefined> => {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/api/v1/${path}`);
        return r.ok ? ((await r.json()) as { data: T }).data : undefined;
      } catch {
        return undefined; // not listening yet
      }
    };
    type Rule = { name: string; health: string; lastError?: string; lastEvaluation: string };
    const evaluated = (rules: Rule[]) => rules.length > 0 && rules.every((r) => !r.lastEvaluation.startsWith('0001-'));
    // Until every rule was evaluated after a scrape, and the recording rules have data (a rate needs two scrapes).
    let rules: Rule[] = [];
    const deadline = Date.now() + 90_000;
    for (;;) {
      assert.equal(prometheus.exitCode, null, `prometheus exited:\n${output}`);
      const groups = await api<{ groups: Array<{ rules: Rule[] }> }>('rules');
      rules = groups?.groups.flatMap((g) => g.rules) ?? [];
      const rates = await api<{ result: unknown[] }>('query?query=keyhold%3Averifications%3Arate5m');
      if (evaluated(rules) && (rates?.result.length ?? 0) > 0) break;
      assert.ok(Date.now() < deadline, `rules not all evaluated with data within 90 s: ${JSON.stringify(rules)}\n${output}`);
      await sleep(500);
    }
    const targets = await api<{ activeTargets: Array<{ health: string }> }>('targets');
    assert.deepEqual(
      targets?.activeTargets.map((a) => a.health),
      ['up'],
    );
    const rulesInFile = readFileSync(RULES, 'utf8').match(/^\s+- (record|alert): /gm) ?? [];
    assert.equal(rules.length, rulesInFile.length);
    assert.deepEqual(
      rules.filter((r) => r.health !== 'ok' || r.lastError).map((r) => `${r.name}: ${r.health} ${r.lastError}`),
      [],
    );
  });
});
