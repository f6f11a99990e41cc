import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scratchDatabase } from '../helpers/harness.ts';
import { sleep } from '../helpers/timing.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';

interface OtlpSpan {
  traceId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}
type OtlpBody = {
  resourceSpans: Array<{ resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
};

const attribute = (attrs: OtlpSpan['attributes'], key: string) => {
  const v = attrs.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue === undefined ? undefined : Number(v.intValue));
};

/**
 * A server with OTEL_EXPORTER_OTLP_ENDPOINT set exports its request spans to a tiny OTLP/HTTP receiver (the
 * http/json protocol): one SERVER span per request, the lane's verifications too, an incoming traceparent
 * continued; and nothing exported carries the root key, a key or a request body.
 */
test('traces: request spans reach an OTLP receiver, continue traceparent, and carry no secret', async (t) => {
  const bodies: string[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => receiver.close(r)));
  const db = scratchDatabase('sqlite');
  t.after(() => db.cleanup());
  const root = newRootKey();
  const server = await ServerProcess.start(db.url, root, {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  t.after(() => server.stop());

  const bodySecret = 'a-body-value-never-exported';
  const api = await server.post<{ apiId: string }>('/v1/apis.createApi', { name: bodySecret }, root);
  assert.equal(api.status, 200);
  const made = await server.post<{ key: string; keyId: string }>('/v1/keys.createKey', { apiId: api.json.apiId, name: bodySecret }, root);
  assert.equal(made.status, 200);
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const parentId = '00f067aa0ba902b7';
  const verified = await fetch(`http://127.0.0.1:${server.port}/v1/keys.verifyKey`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${parentId}-01` },
    body: JSON.stringify({ key: made.json.key }),
  });
  assert.equal(verified.status, 200);

  const spans = (): Array<OtlpSpan & { service?: unknown }> =>
    bodies.flatMap((b) =>
      (JSON.parse(b) as OtlpBody).resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, service: attribute(rs.resource.attributes, 'service.name') }))),
      ),
    );
  const deadline = Date.now() + 30_000;
  while (!spans().some((s) => s.name === 'POST /v1/keys.verifyKey') && Date.now() < deadline) await sleep(100);

  const verify = spans().find((s) => s.name === 'POST /v1/keys.verifyKey');
  assert.ok(verify, JSON.stringify(spans().map((s) => s.name)));
  assert.deepEqual([verify.traceId, verify.parentSpanId, verify.kind, verify.service], [traceId, parentId, 2, 'keyhold']);
  assert.equal(attribute(verify.attributes, 'http.route'), '/v1/keys.verifyKey');
  assert.equal(attribute(verify.attributes, 'http.response.status_code'), 200);
  const create = spans().find((s) => s.name === 'POST /v1/apis.createApi');
  assert.ok(create);
  assert.equal(create.kind, 2);
  assert.match(String(attribute(create.attributes, 'keyhold.workspace.id')), /^ws_/);
  assert.notEqual(create.traceId, traceId);

  const exported = bodies.join('\n');
  for (const secret of [root, made.json.key, bodySecret]) assert.ok(!exported.includes(secret), `exported: ${secret}`);
});
