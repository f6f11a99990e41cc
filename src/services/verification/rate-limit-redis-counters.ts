import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { CLOCK_SKEW_MS, type Counters } from './rate-limit-counters.ts';

/** Prefix of every Redis key of the limiter. */
export const REDIS_KEY_PREFIX = 'keyhold:rl:';

interface Script {
  lua: string;
  sha: string;
}
const script = (lua: string): Script => ({ lua, sha: createHash('sha1').update(lua).digest('hex') });

/** KEYS[1] counter; ARGV cost, limit, expire-at (epoch ms). Returns {passed 0|1, count after}. */
const ADD_IF_FITS = script(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local cost = tonumber(ARGV[1])
if count + cost > tonumber(ARGV[2]) then return {0, count} end
if cost > 0 then
  count = redis.call('INCRBY', KEYS[1], cost)
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return {1, count}
`);

/** KEYS counters; ARGV (add, expire-at) per key. Returns the totals. */
const ADD = script(`
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('INCRBY', key, ARGV[2 * i - 1])
  redis.call('PEXPIREAT', key, ARGV[2 * i])
end
return out
`);

/** EVALSHA, falling back to EVAL (which caches the script) when Redis does not know it yet. */
async function run(redis: Redis, s: Script, keys: string[], args: Array<string | number>): Promise<unknown> {
  try {
    return await redis.evalsha(s.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!String((err as Error)?.message).startsWith('NOSCRIPT')) throw err;
    return redis.eval(s.lua, keys.length, ...keys, ...args);
  }
}

/**
 * Counters in Redis: keys `keyhold:rl:<bucket>`, expiring CLOCK_SKEW_MS after their window's end. Each
 * change is one Lua script, so atomic across any number of processes.
 */
export function redisCounters(redis: Redis): Counters {
  return {
    async addIfFits(bucket, cost, limit, reset) {
      const [passed, count] = (await run(redis, ADD_IF_FITS, [REDIS_KEY_PREFIX + bucket], [cost, limit, reset + CLOCK_SKEW_MS])) as [
        number,
        number,
      ];
      return { passed: passed === 1, count: Number(count) };
    },
    async add(items) {
      const out = (await run(
        redis,
        ADD,
        items.map((c) => REDIS_KEY_PREFIX + c.bucket),
        items.flatMap((c) => [c.add, c.reset + CLOCK_SKEW_MS]),
      )) as number[];
      return new Map(items.map((c, j) => [c.bucket, Number(out[j])]));
    },
    async read(buckets) {
      const out = await redis.mget(buckets.map((b) => REDIS_KEY_PREFIX + b));
      return new Map(buckets.map((b, j) => [b, Number(out[j] ?? 0)]));
    },
  };
}
