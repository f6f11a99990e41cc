import type { Registry } from 'prom-client';

// The two metrics every request updates, kept as plain numbers and turned into Prometheus' form at scrape time.
// prom-client's counters and histograms hash their labels on every increment, even through a child taken once
// by `labels()`: a cost every verification paid. Here an observation is two Map lookups and a few additions.

/** The upper bounds of keyhold_http_request_duration_seconds' buckets. */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as const;

interface RouteCounts {
  /** Answered requests by status. */
  statuses: Map<number, number>;
  /** Requests per bucket (not cumulative); the last one counts those over every bound. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** A value of a metric as prom-client's registry prints it. */
interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** Requests by route and status, and their time to respond by route; routes and statuses are few and fixed. */
export class RequestMetrics {
  readonly #routes = new Map<string, RouteCounts>();

  /** Counts one answered request and its time to respond. */
  observe(route: string, status: number, seconds: number): void {
    let counts = this.#routes.get(route);
    if (counts === undefined) {
      counts = { statuses: new Map(), buckets: new Float64Array(DURATION_BUCKETS.length + 1), sum: 0, count: 0 };
      this.#routes.set(route, counts);
    }
    counts.statuses.set(status, (counts.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]) i++;
    counts.buckets[i]++;
    counts.sum += seconds;
    counts.count++;
  }

  /** Registers keyhold_http_requests_total and keyhold_http_request_duration_seconds, read from these counts. */
  register(registry: Registry): void {
    const routes = this.#routes;
    const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue[]) => {
      const get = async () => ({ name, help, type, values: values(), aggregator: 'sum' as const });
      // The registry calls get() (JSON and text alike); a metric it holds is anything with a name and get().
      registry.registerMetric({ name, help, type, get, reset() {} } as unknown as Parameters<Registry['registerMetric']>[0]);
    };
    metric('keyhold_http_requests_total', 'HTTP requests by route and status', 'counter', () =>
      [...routes].flatMap(([route, c]) => [...c.statuses].map(([status, value]) => ({ labels: { route, status: String(status) }, value }))),
    );
    const name = 'keyhold_http_request_duration_seconds';
    metric(name, 'Time to respond, by route', 'histogram', () =>
      [...routes].flatMap(([route, c]): MetricValue[] => {
        let below = 0;
        const buckets = DURATION_BUCKETS.map((le, i) => {
          below += c.buckets[i];
          return { labels: { le, route }, value: below, metricName: `${name}_bucket` };
        });
        return [
          ...buckets,
          { labels: { le: '+Inf', route }, value: c.count, metricName: `${name}_bucket` },
          { labels: { route }, value: c.sum, metricName: `${name}_sum` },
          { labels: { route }, value: c.count, metricName: `${name}_count` },
        ];
      }),
    );
  }
}
