import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver does with its `n`-th request (1-based): a status (and headers), or `hang` (no answer until closed). */
export type Respond = (n: number) => { status: number; headers?: Record<string, string> } | 'hang';

/** A real HTTP receiver on loopback: records every request (headers and raw body) and answers as `respond` says. */
export async function webhookReceiver(respond: Respond = () => ({ status: 200 })) {
  const got: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      const r = respond(got.length);
      if (r === 'hang') hanging.push(res);
      else res.writeHead(r.status, r.headers).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    got,
    port,
    url: `http://127.0.0.1:${port}/hook`,
    close: () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Every request verifies with the official standardwebhooks library under `secret` (it throws otherwise); their payloads. */
export const verifiedPayloads = (
  got: Received[],
  secret: string,
): Array<{ type: string; timestamp: string; data: Record<string, unknown> }> =>
  got.map((r) => new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as never);

/** Polls `ok` every 25 ms until it holds; fails naming `what` after `ms`. */
export async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
