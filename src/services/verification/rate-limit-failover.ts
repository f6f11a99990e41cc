import type { Redis } from 'ioredis';
import type { AvailabilityListener } from '../../store/availability.ts';
import type { Counters } from './rate-limit-counters.ts';

/** How long consistent decisions stay on the store after a Redis command failed, before Redis is tried again. */
export const REDIS_RETRY_AFTER_MS = 1_000;

/**
 * Consistent decisions (`addIfFits`) on Redis while it answers, and on the store's counters while it does not:
 * a verification never waits for a Redis that is down, and never fails because of it.
 *
 * Redis is skipped from the moment its connection closes until it is ready again (ioredis reconnects by
 * itself), and for REDIS_RETRY_AFTER_MS after a command failed or timed out (REDIS_COMMAND_TIMEOUT_MS: a
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
        const decision = await onRedis.addIfFits(bucket, cost, limit, reset);
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
