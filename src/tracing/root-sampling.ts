import { AlwaysOnSampler, ParentBasedSampler, type Sampler } from '@opentelemetry/sdk-trace';

/** Which new traces to record, decided before the SDK builds a span (src/tracing.ts). */
export interface RootSampling {
  /** The sampler the SDK then runs (absent: the SDK's own, from OTEL_TRACES_SAMPLER). */
  sampler?: Sampler;
  /** Whether a request or job that carries no trace context starts a recorded trace. */
  sample(): boolean;
}

/** Propagators whose context arrives in `traceparent` (W3C) alone: the SDK's default, `tracecontext,baggage`. */
const W3C_ONLY = new Set(['tracecontext', 'baggage']);

/**
 * With OTEL_TRACES_SAMPLER=parentbased_traceidratio, the usual setting in production, a request or job without trace
 * context is sampled here, before a span exists: otherwise, for each of the many it drops, the SDK extracts the
 * headers, makes a trace id, runs its ratio sampler and checks the span's attributes (docs/performance.md, "Traces").
 * A new trace is recorded with probability OTEL_TRACES_SAMPLER_ARG, as the SDK's TraceIdRatio samples a random trace
 * id (a missing or invalid ratio is 1, as the SDK takes it); the SDK then runs ParentBased(AlwaysOn): a root that
 * got this far is recorded, and a span with a parent follows its parent's decision, as before. Any other sampler,
 * or propagators beyond W3C's (a `b3` parent would not be seen by this check), leave the decision to the SDK.
 */
export function rootSampling(env: NodeJS.ProcessEnv, random: () => number = Math.random): RootSampling {
  const sampler = (env.OTEL_TRACES_SAMPLER ?? '').trim().toLowerCase();
  const propagators = (env.OTEL_PROPAGATORS ?? '').split(',').map((p) => p.trim().toLowerCase());
  if (sampler !== 'parentbased_traceidratio' || !propagators.every((p) => p === '' || W3C_ONLY.has(p))) return { sample: () => true };
  const arg = Number((env.OTEL_TRACES_SAMPLER_ARG ?? '').trim() || Number.NaN);
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  return { sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }), sample: () => random() < ratio };
}
