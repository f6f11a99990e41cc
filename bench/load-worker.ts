// The load generator of the autocannon cases of `npm run bench` (bench/server.ts autocannon()): a child process,
// started once and reused, that runs autocannon (programmatic, the engine of its CLI) for every request it
// gets over the IPC channel and sends back the numbers the bench uses. One process for every run spares a
// Node start per run (about a second on this loaded 2-core machine, dozens of times per store).

import { createRequire } from 'node:module';

// autocannon ships no types; this is the part of its programmatic API used here.
type Autocannon = (opts: Record<string, unknown>) => Promise<any>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

process.on('message', (opts: Record<string, unknown>) => {
  autocannon(opts).then(
    (r) =>
      process.send!({
        result: {
          requests: { average: r.requests.average, total: r.requests.total },
          latency: { p50: r.latency.p50, p99: r.latency.p99, p99_9: r.latency.p99_9, max: r.latency.max, mean: r.latency.mean },
          non2xx: r.non2xx,
          ok2xx: r['2xx'],
          durationSeconds: r.duration,
          errors: r.errors,
          timeouts: r.timeouts,
        },
      }),
    (err: Error) => process.send!({ error: err.stack ?? err.message }),
  );
});
// The bench is gone (it exited or was killed): so is this.
process.on('disconnect', () => process.exit(0));
