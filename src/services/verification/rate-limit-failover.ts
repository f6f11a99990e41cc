import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import type { AvailabilityListener } from '../../store/availability.ts';
import type { Counters } from './rate-limit-counters.ts';

/**
 * How long a consistent decision waits for Redis before it is taken on the store's counters: 250 ms of this
 * process being able to read the answer (see withinResponsiveTime); the client's own command timeout
 * (REDIS_COMMAND_TIMEOUT_MS, 1 s) bounds the wait whatever the process' load.
 */
export const REDIS_DECISION_TIMEOUT_MS = 250;

/** Event-loop lateness of a timer beyond which the time it measured is the process', not Redis'. */
const LAG_TOLERANCE_MS = 50;

/**
 * `promise`, or a rejection once it has not settled within `ms` of time in which this process could have read
 * its answer. A process busy with other work fires its timers late, and Node runs due timers BEFORE reading
 * sockets: a reply already waiting in the socket would be declared timed out. So when the timer fires, the
 * verdict waits one turn (setImmediate runs after the poll phase has read pending replies), and a timer that
 * fired more than LAG_TOLERANCE_MS late starts the wait again (the process, not Redis, was slow). Declaring a
 * Redis that answered "unavailable" would move this node's decisions to the store's counters while the other
 * nodes stay on Redis's, and a window would then admit up to twice its limit.
 */
export function withinResponsiveTime<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      const due = performance.now() + ms;
      timer = setTimeout(() => {
        const late = performance.now() - due;
        setImmediate(() => {
          if (settled) return;
          if (late > LAG_TOLERANCE_MS) arm();
          else reject(new Error(`Redis did not answer within ${ms} ms`));
        });
      }, ms);
    };
    promise.then(
      (value) => {
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
    arm();
  });
}

/** How long consistent decisions stay on the store after a Redis command failed, before Redis is tried again. */
export const REDIS_RETRY_AFTER_MS = 1_000;

/**
 * Consistent decisions (`addIfFits`) on Redis while it answers, and on the store's counters while it does not:
 * a verification never waits for a Redis that is down, and never fails because of it.
 *
 * Redis is skipped from the moment its connection closes until it is ready again (ioredis reconnects by
 * itself), and for REDIS_RETRY_AFTER_MS after a command failed or timed out (REDIS_DECISION_TIMEOUT_MS: a
 * Redis that is connected but stuck). The store's counters are the ones used without Redis, so decisions
 * stay exact across nodes while every node is on them (every node shares the store). Across a switch, a
 * window's count is split between the two counters, so that window may admit up to twice its limit; a
 * command that timed out may still be applied later by Redis, which only counts that request twice (it
 * admits less, never more). Every Redis outcome is reported to `report`.
 *
 * `fast` limits are not routed here: they decide in memory and their background sync keeps what Redis did
 * not take for the next sync (see FastCounters).
 */
export function withStoreFallback(
  redis: Redis,
  onRedis: Counters,
  onStore: Counters,
  report?: AvailabilityListener,
): { addIfFits: Counters['addIfFits']; close(): void } {
  // Until the first connection fails, commands wait for it (a server just started): Redis is assumed up.
  let connected = true;
  let skipUntil = 0;
  const onClose = () => {
    connected = false;
  };
  const onReady = () => {
    connected = true;
    skipUntil = 0;
  };
  redis.on('close', onClose);
  redis.on('ready', onReady);
  return {
    async addIfFits(bucket, cost, limit, reset) {
      if (!connected || Date.now() < skipUntil) return onStore.addIfFits(bucket, cost, limit, reset);
      try {
        const decision = await withinResponsiveTime(onRedis.addIfFits(bucket, cost, limit, reset), REDIS_DECISION_TIMEOUT_MS);
        report?.up();
        return decision;
      } catch (err) {
        skipUntil = Date.now() + REDIS_RETRY_AFTER_MS;
        report?.down(err);
        return onStore.addIfFits(bucket, cost, limit, reset);
      }
    },
    close() {
      redis.off('close', onClose);
      redis.off('ready', onReady);
    },
  };
}
