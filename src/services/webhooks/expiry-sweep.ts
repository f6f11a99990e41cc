import type { EventType } from '../../domain/webhook-events.ts';
import { announceJobs } from '../../jobs/queue.ts';
import type { Db } from '../../store/store.ts';
import { emitEvent } from './emit.ts';

const DAY_MS = 86_400_000;
/** How often each server sweeps the last moment's crossings, so an event follows its cause within about 2 s. */
export const EXPIRY_SWEEP_INTERVAL_MS = 1_000;
/** Every this many sweeps one is full: keys made or changed inside a window already, and anything a narrow sweep missed. */
const FULL_SWEEP_EVERY = 60;
/** How far back a full sweep looks for keys that expired. */
const EXPIRED_LOOKBACK_MS = 10 * 60_000;
/** Keys one sweep looks at, at most, soonest expiring first (the next sweep goes on). */
const MAX_KEYS_PER_SWEEP = 10_000;

interface Subscriber {
  id: string;
  workspace_id: string;
  events: string;
  expiring_within_days: number;
}

/**
 * key.expiring (once per key and endpoint, when the key is within the endpoint's `expiringWithinDays` of its
 * `expires`) and key.expired (once per key). A narrow sweep (`since` given) looks only at the keys whose moment came
 * in `(since, now]`: those that expired then, and per distinct `expiringWithinDays` d those whose `expires - d` fell
 * then — index range reads of a second's keys. A full sweep (no `since`) looks at every key expiring within the
 * longest window and those that expired in the last 10 minutes. The event's unique key (`dedupe_key`) makes each one
 * written once whichever server sees it first, and `reported` spares this server the attempts it made already.
 * Returns the events written.
 */
export async function sweepExpiries(db: Db, reported: Set<string>, now = Date.now(), since?: number): Promise<number> {
  const endpoints = (
    await db
      .selectFrom('webhook_endpoints')
      .select(['id', 'workspace_id', 'events', 'expiring_within_days'])
      .where('enabled', '=', 1)
      .execute()
  ).filter((e) => e.events.includes('"key.expiring"') || e.events.includes('"key.expired"'));
  if (endpoints.length === 0) return 0;
  const longest = Math.max(...endpoints.map((e) => Number(e.expiring_within_days)));
  const days = [...new Set(endpoints.map((e) => Number(e.expiring_within_days)))];
  const windows: Array<[number, number]> =
    since === undefined
      ? [[now - EXPIRED_LOOKBACK_MS, now + longest * DAY_MS]]
      : [[since, now], ...days.map((d): [number, number] => [since + d * DAY_MS, now + d * DAY_MS])];
  const keys = await db
    .selectFrom('keys')
    .select(['id', 'workspace_id', 'api_id', 'expires_at'])
    .where('expires_at', 'is not', null)
    .where((eb) => eb.or(windows.map(([after, until]) => eb.and([eb('expires_at', '>', after), eb('expires_at', '<=', until)]))))
    .where('deleted_at', 'is', null)
    .orderBy('expires_at')
    .limit(MAX_KEYS_PER_SWEEP)
    .execute();
  const byWorkspace = new Map<string, Subscriber[]>();
  for (const e of endpoints) byWorkspace.set(e.workspace_id, [...(byWorkspace.get(e.workspace_id) ?? []), e]);
  let written = 0;
  for (const key of keys) {
    const expires = Number(key.expires_at);
    const subscribers = byWorkspace.get(key.workspace_id) ?? [];
    const data = { keyId: key.id, apiId: key.api_id, expires };
    if (expires <= now) {
      const to = subscribers.filter((e) => e.events.includes('"key.expired"')).map((e) => e.id);
      written += await once(db, reported, key.workspace_id, 'key.expired', data, to, `key.expired:${key.id}:${expires}`, now);
      continue;
    }
    for (const e of subscribers) {
      if (!e.events.includes('"key.expiring"') || expires > now + Number(e.expiring_within_days) * DAY_MS) continue;
      written += await once(db, reported, key.workspace_id, 'key.expiring', data, [e.id], `key.expiring:${key.id}:${expires}:${e.id}`, now);
    }
  }
  if (written) announceJobs();
  return written;
}

/** Writes the event unless this server tried already or another server wrote it (its unique key); 1 when written. */
async function once(
  db: Db,
  reported: Set<string>,
  workspaceId: string,
  type: EventType,
  data: Record<string, unknown>,
  endpointIds: string[],
  dedupeKey: string,
  now: number,
): Promise<number> {
  if (endpointIds.length === 0 || reported.has(dedupeKey)) return 0;
  if (reported.size >= 100_000) reported.clear();
  const id = await db.transaction().execute((tx) => emitEvent(tx, workspaceId, type, data, { endpointIds, dedupeKey, now }));
  reported.add(dedupeKey);
  return id ? 1 : 0;
}

/**
 * The sweeps of one server, every second: narrow ones over the time since the last that succeeded, and a full one
 * every minute (the first at once). Stopped by the returned function.
 */
export function startExpirySweeps(db: Db, onError: (err: unknown) => void): () => void {
  const reported = new Set<string>();
  let last = Date.now();
  let sweeps = 0;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    const now = Date.now();
    const since = sweeps++ % FULL_SWEEP_EVERY === 0 ? undefined : last;
    void sweepExpiries(db, reported, now, since)
      .then(() => {
        last = now;
      }, onError)
      .finally(() => {
        running = false;
      });
  }, EXPIRY_SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
