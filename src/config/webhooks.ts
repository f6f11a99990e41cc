import { wholeNumberFrom } from './shapes.ts';
import { DEFAULT_WEBHOOK_SETTINGS, parseRetrySchedule, type WebhookSettings } from '../services/webhooks/delivery-rules.ts';

/** The KEYHOLD_WEBHOOK_* settings (part of loadConfig); each invalid one adds a line to `problems`. */
export function webhooksFrom(env: NodeJS.ProcessEnv, problems: string[]): WebhookSettings {
  const settings = { ...DEFAULT_WEBHOOK_SETTINGS };
  const allow = env.KEYHOLD_WEBHOOK_ALLOW_PRIVATE;
  if (allow !== undefined && allow !== '') {
    if (allow === 'true' || allow === 'false') settings.allowPrivate = allow === 'true';
    else problems.push(`KEYHOLD_WEBHOOK_ALLOW_PRIVATE must be true or false, got "${allow}"`);
  }
  const timeoutRange = { min: 100, max: 300_000 };
  settings.timeoutMs = wholeNumberFrom(
    env,
    'KEYHOLD_WEBHOOK_TIMEOUT_MS',
    settings.timeoutMs,
    timeoutRange,
    'a whole number of milliseconds',
    problems,
  );
  const schedule = env.KEYHOLD_WEBHOOK_RETRY_SCHEDULE;
  if (schedule !== undefined && schedule !== '') {
    const parsed = parseRetrySchedule(schedule);
    if (typeof parsed === 'string') problems.push(`KEYHOLD_WEBHOOK_RETRY_SCHEDULE must be comma-separated durations (0s,5s,5m): ${parsed}`);
    else settings.retrySchedule = parsed;
  }
  return settings;
}
