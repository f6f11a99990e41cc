import type { Db } from '../../store/store.ts';

/** The `settings` row naming where the most recently started server is reached. */
const SERVER_ADDRESS = 'server.address';

/**
 * The base URL a server is reached at, recorded at start: its KEYHOLD_PUBLIC_URL when set, else its listen address
 * (a wildcard host as the loopback address of its family). Kept in the store, not a file, so that it is shared
 * by SQLite and PostgreSQL alike and by every node: the most recently started node's address wins.
 */
export async function recordServerAddress(db: Db, baseUrl: string, now = Date.now()): Promise<void> {
  await db
    .insertInto('settings')
    .values({ name: SERVER_ADDRESS, value: baseUrl, updated_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value: baseUrl, updated_at: now }))
    .execute();
}

/** The base URL the most recently started server recorded, if any did. */
export async function recordedServerAddress(db: Db): Promise<string | undefined> {
  const row = await db.selectFrom('settings').select('value').where('name', '=', SERVER_ADDRESS).executeTakeFirst();
  return row?.value || undefined;
}

/** `http://HOST:PORT` for a listening socket: 0.0.0.0 and :: as 127.0.0.1 and [::1], IPv6 in brackets. */
export function listenBaseUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
