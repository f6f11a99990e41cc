import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { exposedNames, keyholdUnderTraffic, prometheusTool, type KeyholdUnderTraffic } from './keyhold-under-traffic.ts';

const DASHBOARD = resolve(import.meta.dirname, '../../deploy/grafana/keyhold.json');

interface Target {
  expr: string;
  datasource: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown }> };
}

/** Grafana's reference to the data source variable (not a template string). */
const DATASOURCE = ['$', '{datasource}'].join('');

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const graphs = dashboard.panels.filter((p) => p.type !== 'row');
const exprs = graphs.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
const metricNames = new Set(exprs.flatMap((e) => e.match(/\bkeyhold_[a-z0-9_]+/g) ?? []));

describe('Grafana dashboard (deploy/grafana/keyhold.json)', () => {
  let keyhold: KeyholdUnderTraffic;
  before(async () => {
    keyhold = await keyholdUnderTraffic();
  });
  after(() => keyhold?.close());

  it('is importable anywhere: a datasource variable that every panel and query uses, unique panel ids', () => {
    const variable = dashboard.templating.list.find((v) => v.type === 'datasource');
    assert.deepEqual([variable?.name, variable?.query], ['datasource', 'prometheus']);
    assert.ok(graphs.length >= 20, String(graphs.length));
    for (const p of graphs) {
      assert.ok((p.targets ?? []).length > 0, p.title);
      assert.equal(p.datasource?.uid, DATASOURCE, p.title);
      for (const t of p.targets ?? []) assert.equal(t.datasource.uid, DATASOURCE, p.title);
    }
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('covers traffic, outcomes, latency, caches, store and Redis, webhooks, jobs, memory and the event loop', () => {
    for (const name of [
      'keyhold_http_requests_total',
      'keyhold_verifications_total',
      'keyhold_http_request_duration_seconds_bucket',
      'keyhold_key_cache_hits_total',
      'keyhold_dependency_up',
      'keyhold_webhook_delivery_attempts_total',
      'keyhold_jobs',
      'keyhold_process_resident_memory_bytes',
      'keyhold_nodejs_eventloop_lag_p99_seconds',
    ])
      assert.ok(metricNames.has(name), name);
  });

  it('every metric its queries name is exposed by /metrics of a running server after some traffic', async () => {
    // GC durations have a series only once the server has collected garbage, which a short run may not have done
    // yet on a busy machine: more traffic (at most 20 rounds of 200 verifications) until it has.
    let missing: string[] = [];
    for (let round = 0; round < 20; round++) {
      const exposed = exposedNames(await keyhold.metrics());
      missing = [...metricNames].filter((n) => !exposed.has(n));
      if (missing.length === 0 || missing.some((n) => !n.startsWith('keyhold_nodejs_gc_'))) break;
      for (let i = 0; i < 200; i++) await keyhold.server.post('/v1/keys.verifyKey', { key: `kh_unknown_${round}_${i}` });
    }
    assert.deepEqual(missing, []);
  });

  it("every query is valid PromQL once Grafana's variables are filled in (promtool)", (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'keyhold-grafana-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const filled = exprs.map((e) =>
      e.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '3h').replaceAll('$job', '.*').replaceAll('$instance', '.*'),
    );
    const rules = filled.map((e, i) => `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(e)}`);
    writeFileSync(join(dir, 'queries.yml'), `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
    const check = prometheusTool('promtool', ['check', 'rules', join(dir, 'queries.yml')]);
    assert.equal(check.status, 0, check.out);
  });
});
