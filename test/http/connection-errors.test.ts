import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { request as httpRequest } from 'node:http';
import { world, type World } from '../helpers/harness.ts';
import { REQUEST_ID } from '../helpers/formats.ts';
import { assertV1ErrorMembers, type EnvelopeBody } from '../helpers/errors.ts';
import { createLaneServer, type Lane } from '../../src/http/lane.ts';

// What the server answers outside Fastify's request cycle is in the envelope too, with a request id.

/** Sends raw bytes on a new connection and returns everything the server wrote before closing it. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

function parseRaw(text: string): { status: number; headers: Record<string, string>; json: Record<string, Record<string, unknown>> } {
  const [head, body] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, json: JSON.parse(body) };
}

function assertEnvelope(res: ReturnType<typeof parseRaw>, status: number, kind: string) {
  assert.equal(res.status, status);
  assert.equal(res.json.error.type, `https://keyhold.dev/errors/${kind}`);
  assert.equal(res.json.error.status, status);
  assert.match(res.headers['x-request-id'], REQUEST_ID);
  assert.equal(res.json.meta.requestId, res.headers['x-request-id']);
  assertV1ErrorMembers(res.json as EnvelopeBody);
}

describe('answers outside the request cycle', () => {
  let w: World;
  let port: number;
  before(async () => {
    w = await world('sqlite');
    port = new URL(await w.app.listen({ host: '127.0.0.1', port: 0 })).port as unknown as number;
  });
  after(() => w.close());

  test('a 100 KiB query string → 431 in the envelope', async () => {
    const res = parseRaw(await rawExchange(port, `GET /v1/apis.getApi?apiId=${'x'.repeat(100 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    assertEnvelope(res, 431, 'request/headers-too-large');
  });

  test('bytes that are not HTTP → 400 in the envelope', async () => {
    const res = parseRaw(await rawExchange(port, 'HELLO THERE\r\n\r\n'));
    assertEnvelope(res, 400, 'request/malformed');
  });

  test('a body over 5 MiB sent without Expect: 100-continue gets its 413, never a connection reset', async () => {
    const body = Buffer.alloc(6 * 1024 * 1024, 'a');
    for (let i = 0; i < 3; i++) {
      const answer = await new Promise<{ status: number; json: Record<string, Record<string, unknown>> }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/apis.createApi',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${w.root}` },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              text += c;
            });
            res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      assert.equal(answer.status, 413);
      assert.equal(answer.json.error.type, 'https://keyhold.dev/errors/request/body-too-large');
      assertV1ErrorMembers(answer.json as EnvelopeBody);
    }
  });
});

test('while the server closes, every request is a 503 in the envelope and the connection is closed', async () => {
  const closing: Lane = { closing: true, take: () => false, close: () => {} };
  const server = createLaneServer(
    () => assert.fail('a closing server hands nothing to Fastify'),
    () => closing,
    {},
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  try {
    const res = parseRaw(await rawExchange(address.port, 'GET /v1/liveness HTTP/1.1\r\nHost: x\r\n\r\n'));
    assertEnvelope(res, 503, 'server/shutting-down');
    assert.equal(res.headers.connection, 'close');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
