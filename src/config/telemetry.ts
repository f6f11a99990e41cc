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
export function tracingFrom(env: NodeJS.ProcessEnv, problems: string[]): TracingConfig {
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const) {
    const problem = endpointProblem(name, env[name]);
    if (problem) problems.push(problem);
  }
  const disabled = (env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase();
  if (!['', 'true', 'false'].includes(disabled)) problems.push(`OTEL_SDK_DISABLED must be true or false, got "${env.OTEL_SDK_DISABLED}"`);
  const attributes = resourceAttributesProblem(env.OTEL_RESOURCE_ATTRIBUTES);
  if (attributes) problems.push(attributes);
  if (/[\p{Cc}]/u.test(env.OTEL_SERVICE_NAME ?? '')) problems.push('OTEL_SERVICE_NAME must not contain control characters');
  const endpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT || '').trim();
  const named = Boolean(env.OTEL_SERVICE_NAME?.trim()) || /(^|,)\s*service\.name=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  return { enabled: endpoint !== '' && disabled !== 'true', serviceName: named ? undefined : 'keyhold' };
}

/** An OTLP/HTTP endpoint is an http(s) URL; anything else would only fail later, in the exporter, without a word at start. */
function endpointProblem(name: string, value: string | undefined): string | undefined {
  const text = (value ?? '').trim();
  if (text === '') return undefined;
  let protocol = '';
  try {
    protocol = new URL(text).protocol;
  } catch {
    // not a URL: reported below
  }
  if (protocol === 'http:' || protocol === 'https:') return undefined;
  return `${name} must be an http(s) URL such as http://collector:4318, got "${text}"`;
}

/**
 * OTEL_RESOURCE_ATTRIBUTES is `key=value` pairs separated by commas (the OpenTelemetry specification); the SDK drops
 * a malformed list silently, so a typo would go unnoticed until someone looks for the attributes.
 */
function resourceAttributesProblem(value: string | undefined): string | undefined {
  const text = (value ?? '').trim();
  if (text === '') return undefined;
  const bad = text.split(',').find((pair) => !/^\s*[^=\s,]+\s*=[^,]*$/.test(pair));
  return bad === undefined ? undefined : `OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas, got "${bad.trim()}"`;
}
