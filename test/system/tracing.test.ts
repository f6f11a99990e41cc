import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DIALECTS, scratchDatabase } from '../helpers/harness.ts';
import { sleep } from '../helpers/timing.ts';
import { newRootKey, ServerProcess } from '../helpers/server-process.ts';
import { until, webhookReceiver } from '../helpers/webhook-receiver.ts';

type Attributes = Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Attributes;
  service?: unknown;
}
type OtlpBody = {
  resourceSpans: Array<{ resource: { attributes: Attributes }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
};
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

const attribute = (attrs: Attributes, key: string) => {
  const v = attrs.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue === undefined ? undefined : Number(v.intValue));
};

/** A tiny OTLP/HTTP receiver (the http/json protocol): every body it was sent, and the spans in them. */
async function otlpReceiver() {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const spans = (): OtlpSpan[] =>
    bodies.flatMap((b) =>
      (JSON.parse(b) as OtlpBody).resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, service: attribute(rs.resource.attributes, 'service.name') }))),
      ),
    );
  /** The first span `match` finds, once it has been exported (30 s at most). */
  const waitFor = async (what: string, match: (s: OtlpSpan) => boolean): Promise<OtlpSpan> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const found = spans().find(match);
      if (found) return found;
      if (Date.now() > deadline) assert.fail(`no span of ${what} among ${JSON.stringify(spans().map((s) => s.name))}`);
      await sleep(100);
    }
  };
  return {
    bodies,
    spans,
    waitFor,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const MASTER = `test:${Buffer.alloc(32, 7).toString('base64')}`;
const REDIS = process.env.KEYHOLD_TEST_REDIS_URL;

/**
 * A server with OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans to a tiny OTLP/HTTP receiver: one SERVER span per
 * request (the lane's verifications too, an incoming traceparent continued), with the store statements, Redis
 * commands of the request as its children; a span per job run, whose webhook send is a CLIENT span whose
 * `traceparent` the receiving endpoint gets; and nothing exported carries a key, the root key, a secret or a body.
 */
for (const dialect of DIALECTS) {
  describe(`traces (${dialect})`, () => {
    const root = newRootKey();
    const bodySecret = 'a-body-value-never-exported';
    const db = scratchDatabase(dialect);
    let otlp: Awaited<ReturnType<typeof otlpReceiver>>;
    let hooks: Awaited<ReturnType<typeof webhookReceiver>>;
    let server: ServerProcess;
    /** Every secret the server was given or answered: none may be exported. */
    const secrets = [root, bodySecret, MASTER.slice('test:'.length)];
    let apiId: string;

    before(async () => {
      otlp = await otlpReceiver();
      hooks = await webhookReceiver();
      server = await ServerProcess.start(db.url, root, {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        KEYHOLD_WORKERS: '1',
        KEYHOLD_MASTER_KEYS: MASTER,
        KEYHOLD_WEBHOOK_ALLOW_PRIVATE: 'true',
        ...(REDIS ? { REDIS_URL: REDIS } : {}),
      });
      const api = await server.post<{ apiId: string }>('/v1/apis.createApi', { name: bodySecret }, root);
      assert.equal(api.status, 200);
      apiId = api.json.apiId;
    });
    after(async () => {
      await server?.stop();
      await hooks?.close();
      await otlp?.close();
      await db.cleanup();
    });

    test('a verification continues the incoming traceparent; its store statements are children of its SERVER span', async () => {
      const made = await server.post<{ key: string }>('/v1/keys.createKey', { apiId, name: bodySecret, meta: { note: bodySecret } }, root);
      assert.equal(made.status, 200);
      secrets.push(made.json.key);
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const parentId = '00f067aa0ba902b7';
      const verified = await fetch(`http://127.0.0.1:${server.port}/v1/keys.verifyKey`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${parentId}-01` },
        body: JSON.stringify({ key: made.json.key }),
      });
      assert.equal(verified.status, 200);

      // Answered by the lane: the key was not cached yet, so it was read from the store inside the request.
      const verify = await otlp.waitFor('the verification', (s) => s.name === 'POST /v1/keys.verifyKey');
      assert.deepEqual([verify.traceId, verify.parentSpanId, verify.kind, verify.service], [traceId, parentId, SERVER, 'keyhold']);
      assert.equal(attribute(verify.attributes, 'http.route'), '/v1/keys.verifyKey');
      assert.equal(attribute(verify.attributes, 'http.response.status_code'), 200);
      await otlp.waitFor('the key read', (s) => s.parentSpanId === verify.spanId && s.name === 'select keys');
      const children = otlp.spans().filter((s) => s.parentSpanId === verify.spanId);
      for (const child of children) {
        assert.deepEqual([child.traceId, child.kind], [traceId, CLIENT], child.name);
        assert.equal(attribute(child.attributes, 'db.system'), dialect === 'postgres' ? 'postgresql' : 'sqlite');
        assert.match(child.name, /^[a-z]+( [a-z_]+)?$/);
      }
      const read = children.find((s) => s.name === 'select keys')!;
      assert.deepEqual(
        [attribute(read.attributes, 'db.operation.name'), attribute(read.attributes, 'db.collection.name')],
        ['select', 'keys'],
      );

      // Through Fastify's routes: the creation's insert under its span (on SQLite in a transaction: begin, commit;
      // on PostgreSQL one statement, its inserts in CTEs).
      const create = await otlp.waitFor('the key creation', (s) => s.name === 'POST /v1/keys.createKey');
      assert.equal(create.kind, SERVER);
      assert.notEqual(create.traceId, traceId);
      assert.match(String(attribute(create.attributes, 'keyhold.workspace.id')), /^ws_/);
      await otlp.waitFor('the key insert', (s) => s.parentSpanId === create.spanId && s.name === 'insert keys');
      const names = otlp
        .spans()
        .filter((s) => s.parentSpanId === create.spanId && s.traceId === create.traceId)
        .map((s) => s.name);
      if (dialect === 'sqlite') for (const name of ['begin', 'commit']) assert.ok(names.includes(name), JSON.stringify(names));
    });

    test('Redis commands of a request are children of its span', {
      skip: REDIS ? false : 'KEYHOLD_TEST_REDIS_URL is not set',
    }, async () => {
      const limited = await server.post(
        '/v1/ratelimits.limit',
        { namespace: 'traced', identifier: bodySecret, limit: 5, duration: 60_000 },
        root,
      );
      assert.equal(limited.status, 200);
      const limit = await otlp.waitFor('the limit', (s) => s.name === 'POST /v1/ratelimits.limit');
      const command = await otlp.waitFor(
        'a Redis command',
        (s) => s.parentSpanId === limit.spanId && attribute(s.attributes, 'db.system') === 'redis',
      );
      assert.equal(command.kind, CLIENT);
      assert.equal(attribute(command.attributes, 'db.operation.name'), command.name);
      assert.match(command.name, /^[a-z]+$/);
    });

    test('a webhook delivery is a job span with a CLIENT span, whose traceparent the endpoint receives', async () => {
      const endpoint = await server.post<{ endpointId: string; secret: string }>('/v1/webhooks.createEndpoint', { url: hooks.url }, root);
      assert.equal(endpoint.status, 200, JSON.stringify(endpoint.json));
      secrets.push(endpoint.json.secret);
      const sent = await server.post('/v1/webhooks.sendTestEvent', { endpointId: endpoint.json.endpointId }, root);
      assert.equal(sent.status, 200, JSON.stringify(sent.json));
      await until('the delivery', () => hooks.got.length > 0, 15_000);
      const { headers, body } = hooks.got[0];
      secrets.push(body, String(headers['webhook-signature']));
      const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(headers.traceparent));
      assert.ok(m, `traceparent: ${headers.traceparent}`);
      const [, traceId, spanId] = m;

      const send = await otlp.waitFor('the send', (s) => s.spanId === spanId);
      assert.deepEqual([send.traceId, send.kind, send.name], [traceId, CLIENT, 'POST']);
      assert.equal(attribute(send.attributes, 'server.address'), '127.0.0.1');
      assert.equal(attribute(send.attributes, 'server.port'), hooks.port);
      assert.equal(attribute(send.attributes, 'http.response.status_code'), 200);
      const job = await otlp.waitFor('the job run', (s) => s.spanId === send.parentSpanId);
      assert.deepEqual(
        [job.traceId, job.kind, job.name, job.parentSpanId || undefined],
        [traceId, CONSUMER, 'job webhook.deliver', undefined],
      );
      assert.equal(attribute(job.attributes, 'keyhold.job.task'), 'webhook.deliver');
      assert.equal(attribute(job.attributes, 'keyhold.job.outcome'), 'completed');
      // The run's statements (reading the delivery, recording it) are the job's children too.
      await otlp.waitFor('the delivery update', (s) => s.parentSpanId === job.spanId && s.name === 'update webhook_deliveries');
    });

    test('nothing exported holds a key, the root key, a secret or a body', async () => {
      assert.ok(otlp.spans().length > 0);
      const exported = otlp.bodies.join('\n');
      for (const secret of secrets) assert.ok(!exported.includes(secret), `exported: ${secret.slice(0, 12)}…`);
      // Nor any value a span could have picked up from SQL: its statements are named, never quoted.
      for (const s of otlp.spans()) assert.ok(!/[?$'"]|\d{3,}/.test(s.name), s.name);
    });
  });
}

/**
 * OTEL_TRACES_SAMPLER=parentbased_traceidratio with ratio 0: requests without trace context are never recorded
 * (decided before the SDK builds a span: src/tracing/root-sampling.ts), while a sampled incoming traceparent is
 * followed, with its children, and an unsampled one is not.
 */
describe('traces sampled by ratio: new traces by the ratio, incoming ones by their parent (sqlite)', () => {
  const root = newRootKey();
  const db = scratchDatabase('sqlite');
  let otlp: Awaited<ReturnType<typeof otlpReceiver>>;
  let server: ServerProcess;
  before(async () => {
    otlp = await otlpReceiver();
    server = await ServerProcess.start(db.url, root, {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
    });
  });
  after(async () => {
    await server?.stop();
    await otlp?.close();
    await db.cleanup();
  });

  test('ratio 0: no request without context is recorded; a sampled parent is followed, an unsampled one is not', async () => {
    const api = await server.post<{ apiId: string }>('/v1/apis.createApi', { name: 'sampled' }, root);
    assert.equal(api.status, 200);
    const made = await server.post<{ key: string }>('/v1/keys.createKey', { apiId: api.json.apiId }, root);
    assert.equal(made.status, 200);
    const verify = (traceparent?: string) =>
      fetch(`http://127.0.0.1:${server.port}/v1/keys.verifyKey`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(traceparent ? { traceparent } : {}) },
        body: JSON.stringify({ key: made.json.key }),
      }).then((r) => r.status);
    for (let i = 0; i < 20; i++) assert.equal(await verify(), 200);
    assert.equal(await verify('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00'), 200);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    assert.equal(await verify(`00-${traceId}-00f067aa0ba902b7-01`), 200);

    const followed = await otlp.waitFor('the sampled verification', (s) => s.traceId === traceId && s.kind === SERVER);
    assert.equal(followed.name, 'POST /v1/keys.verifyKey');
    // Everything exported, after the BSP's 100 ms: the sampled trace alone (the creations and the other
    // verifications had no context, one had an unsampled parent).
    await sleep(500);
    const traces = new Set(otlp.spans().map((s) => s.traceId));
    assert.deepEqual([...traces], [traceId]);
  });
});
