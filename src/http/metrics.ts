import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one app instance (its own registry, so several apps can live in one process). */
export function createMetrics(withProcessMetrics: boolean) {
  const registry = new Registry();
  if (withProcessMetrics) collectDefaultMetrics({ register: registry, prefix: 'keyhold_' });
  const requests = new Counter({
    name: 'keyhold_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'keyhold_http_request_duration_seconds',
    help: 'Time to respond, by route',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  /** Counts one answered request and its time to respond. */
  const observe = (route: string, status: number, seconds: number): void => {
    requests.inc({ route, status: String(status) });
    duration.observe({ route }, seconds);
  };
  return { registry, observe };
}
export type Metrics = ReturnType<typeof createMetrics>;
