/** OpenTelemetry traces (src/tracing.ts): on when an OTLP endpoint is set; the SDK itself reads the other OTEL_* settings. */
export interface TracingConfig {
  enabled: boolean;
  /** `keyhold` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names the service (then the SDK's). */
  serviceName: string | undefined;
}

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turns traces on (OTEL_SDK_DISABLED=true off);
 * the service is `keyhold` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names it.
 */
export function tracingFrom(env: NodeJS.ProcessEnv): TracingConfig {
  const endpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT || '').trim();
  const named = Boolean(env.OTEL_SERVICE_NAME?.trim()) || /(^|,)\s*service\.name=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  return { enabled: endpoint !== '' && env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true', serviceName: named ? undefined : 'keyhold' };
}
