import pg from 'pg';
import { withDeadline } from '../deadline.ts';

/** The channel every Keyhold schema of a database notifies on; a payload starts with its schema's name and a space. */
export const NOTIFY_CHANNEL = 'keyhold_changes';

/** What a listener is told: a payload of its schema, and each (re)connection (after which it may have missed some). */
export interface NotificationHandlers {
  onPayload(payload: string): void;
  onConnected(): void;
}

export interface Notifications {
  /** The server process of the LISTEN connection, while it is up (tests end it to prove the reconnection). */
  readonly backendPid: number | undefined;
  stop(): Promise<void>;
}

/** How long a connection attempt and a heartbeat may take; how long to wait between attempts; how often to check. */
const CONNECT_MS = 2_000;
const RETRY_MS = 500;
const HEARTBEAT_MS = 5_000;
const END_MS = 1_000;

/**
 * A dedicated PostgreSQL connection that LISTENs for the change notifications of `schema` (sent by
 * writeChangeFeed inside the changing transaction, so they arrive only on commit). Outside the pool: a
 * LISTEN connection is never handed to a statement, and a broken one fails no request. It reconnects for
 * as long as it runs (a connection that went silent is found by a heartbeat and replaced), and tells
 * `onConnected` each time, since notifications sent while it was away are lost (the change feed has them).
 * `stop()` ends it within END_MS, whatever the state of the server.
 */
export function listenForNotifications(connectionString: string, schema: string, handlers: NotificationHandlers): Notifications {
  let stopped = false;
  let client: pg.Client | undefined;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const prefix = `${schema} `;

  const run = async () => {
    while (!stopped) {
      let c: pg.Client;
      try {
        c = await connectOnce(connectionString);
      } catch {
        await pause(RETRY_MS);
        continue;
      }
      if (stopped) return destroy(c);
      client = c;
      const ended = new Promise<void>((resolve) => c.once('end', () => resolve()));
      c.on('notification', (msg) => {
        if (msg.payload?.startsWith(prefix)) handlers.onPayload(msg.payload.slice(prefix.length));
      });
      handlers.onConnected();
      const heartbeat = setInterval(() => {
        withDeadline(c.query('select 1'), CONNECT_MS, () => new Error('heartbeat timed out')).catch(() => destroy(c));
      }, HEARTBEAT_MS).unref();
      await ended;
      clearInterval(heartbeat);
      client = undefined;
      if (!stopped) await pause(RETRY_MS);
    }
  };
  const running = run();

  return {
    get backendPid() {
      return (client as unknown as { processID?: number } | undefined)?.processID;
    },
    async stop() {
      stopped = true;
      wake?.();
      const c = client;
      if (c) await withDeadline(c.end(), END_MS, () => new Error('end timed out')).catch(() => destroy(c));
      await withDeadline(running, END_MS, () => new Error('listener did not stop')).catch(() => {});
    },
  };
}

/** A new client, connected and listening, or a rejection within about 2 × CONNECT_MS. */
async function connectOnce(connectionString: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString, application_name: 'keyhold-listen', connectionTimeoutMillis: CONNECT_MS, keepAlive: true });
  c.on('error', () => {
    /* the connection broke: 'end' follows, and the loop reconnects */
  });
  try {
    await withDeadline(c.connect(), CONNECT_MS, () => new Error('connect timed out'));
    await withDeadline(c.query(`LISTEN ${NOTIFY_CHANNEL}`), CONNECT_MS, () => new Error('LISTEN timed out'));
    return c;
  } catch (err) {
    destroy(c);
    throw err;
  }
}

/** Drops a client's socket at once (no goodbye to a server that may not answer). */
function destroy(c: pg.Client): void {
  (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}
