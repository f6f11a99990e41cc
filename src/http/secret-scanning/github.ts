import { Type } from '@sinclair/typebox';
import type { FastifyBodyParser } from 'fastify';
import type { LeakConfig } from '../../config/leaks.ts';
import { AddressLimiter } from '../../domain/address-limiter.ts';
import { MAX_LEAK_REPORT_BYTES, MAX_LEAK_REPORT_ITEMS } from '../../domain/bounds.ts';
import { AppError } from '../../domain/errors.ts';
import { GithubPublicKeys } from '../../services/leaks/github-public-keys.ts';
import { verifyGithubSignature } from '../../services/leaks/github-signature.ts';
import { reportLeakedTokens, type ReportedToken } from '../../services/leaks/report-leaks.ts';
import { parseWith } from '../input-guards.ts';
import { responses } from '../schemas/common.ts';
import type { App, Deps } from '../types.ts';

export const GITHUB_SECRET_SCANNING_PATH = '/secret-scanning/github';
/** Reports allowed per client address and minute (GitHub batches up to 1,000 tokens in one). */
export const SECRET_SCANNING_REQUESTS_PER_MINUTE = 120;

const ReportItem = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 4096 }),
  type: Type.String({ maxLength: 256 }),
  url: Type.Optional(Type.String({ maxLength: 2048 })),
  source: Type.Optional(Type.String({ maxLength: 256 })),
});
const Feedback = Type.Array(
  Type.Object({
    token_hash: Type.String(),
    token_type: Type.String(),
    label: Type.Union([Type.Literal('true_positive'), Type.Literal('false_positive')]),
  }),
);

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as sent, on the secret scanning route: its signature covers these bytes. */
    rawBody?: string;
  }
}

/**
 * GitHub's secret scanning partner endpoint (on with KEYHOLD_SECRET_SCANNING=github). GitHub, not a root key,
 * authenticates it: the signature over the raw body is checked before the body is parsed or validated, so an
 * unsigned or forged report is a 401 that reads and changes nothing. Every address is rate limited.
 */
export function registerGithubSecretScanning(app: App, deps: Deps, config: LeakConfig, parseJson: FastifyBodyParser<string>): void {
  if (!config.github) return;
  const keys = new GithubPublicKeys(config.github);
  const limiter = new AddressLimiter(SECRET_SCANNING_REQUESTS_PER_MINUTE);
  app.register(async (scope) => {
    // The body is kept as text here and parsed once its signature is verified.
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => done(null, text));
    scope.post(
      GITHUB_SECRET_SCANNING_PATH,
      {
        bodyLimit: MAX_LEAK_REPORT_BYTES,
        config: { public: true },
        schema: {
          hide: true,
          body: Type.Array(ReportItem, { maxItems: MAX_LEAK_REPORT_ITEMS }),
          response: responses(Feedback),
        },
        onRequest: async (req, reply) => {
          if (limiter.take(req.ip)) return;
          reply.header('Retry-After', String(limiter.retryAfterSeconds()));
          throw new AppError('limit/rate-limited', 'Too many secret scanning reports from this address; retry after the minute');
        },
        preValidation: async (req) => {
          const raw = typeof req.body === 'string' ? req.body : '';
          await verifyGithubSignature(keys, req.headers['github-public-key-identifier'], req.headers['github-public-key-signature'], raw);
          req.body = parseWith(parseJson, raw);
        },
      },
      async (req) => reportLeakedTokens(deps.store.db, req.body as ReportedToken[], { action: config.action, requestId: req.id }),
    );
  });
}
