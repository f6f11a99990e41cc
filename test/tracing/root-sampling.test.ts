import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rootSampling } from '../../src/tracing/root-sampling.ts';

// Which new traces are recorded when Keyhold decides before the SDK (src/tracing/root-sampling.ts).

test('parentbased_traceidratio: a new trace is recorded when the draw is under the ratio; the SDK runs ParentBased(AlwaysOn)', () => {
  const draws = [0.005, 0.01, 0.5, 0.0099];
  const roots = rootSampling({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }, () => draws.shift()!);
  assert.deepEqual([roots.sample(), roots.sample(), roots.sample(), roots.sample()], [true, false, false, true]);
  assert.match(String(roots.sampler), /ParentBased\{root=AlwaysOnSampler/);
});

test('the share of new traces recorded is the ratio', () => {
  const roots = rootSampling({ OTEL_TRACES_SAMPLER: ' ParentBased_TraceIdRatio ', OTEL_TRACES_SAMPLER_ARG: '0.25' });
  let recorded = 0;
  for (let i = 0; i < 100_000; i++) if (roots.sample()) recorded++;
  assert.ok(Math.abs(recorded / 100_000 - 0.25) < 0.01, `${recorded} of 100,000`);
});

test('a missing or invalid ratio records every new trace, as the SDK takes it', () => {
  for (const arg of [undefined, '', 'half', '-0.1', '1.5']) {
    const roots = rootSampling({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: arg }, () => 0.999);
    assert.equal(roots.sample(), true, `OTEL_TRACES_SAMPLER_ARG=${arg}`);
  }
  const none = rootSampling({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, () => 0);
  assert.equal(none.sample(), false);
});

test('any other sampler, or propagators beyond W3C, leave the decision to the SDK', () => {
  for (const env of [
    {},
    { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' },
    { OTEL_TRACES_SAMPLER: 'always_on' },
    { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01', OTEL_PROPAGATORS: 'tracecontext,b3' },
  ]) {
    const roots = rootSampling(env, () => 0.999);
    assert.equal(roots.sampler, undefined, JSON.stringify(env));
    assert.equal(roots.sample(), true, JSON.stringify(env));
  }
  const w3c = rootSampling(
    { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01', OTEL_PROPAGATORS: 'tracecontext, baggage' },
    () => 0.999,
  );
  assert.equal(w3c.sample(), false);
});
