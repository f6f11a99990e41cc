import * as client from 'openid-client';
import { OIDC_CALLBACK_PATH, type OidcConfig } from '../../config/oidc.ts';
import type { ReadinessReport } from '../readiness.ts';

/** How long discovery and each request to the provider may take before the sign-in is refused as unavailable. */
export const OIDC_TIMEOUT_MS = 5_000;
/** A failed discovery is tried again on the next sign-in or readiness check, but not sooner than this. */
export const DISCOVERY_RETRY_MS = 5_000;

/** What the browser keeps between the redirect to the provider and the callback (a short-lived cookie). */
export interface PendingSignIn {
  state: string;
  nonce: string;
  verifier: string;
}

/** The claims of a checked ID token that sign-in decides on. */
export interface SignedInIdentity {
  issuer: string;
  subject: string;
  email?: string;
  emailVerified: boolean;
  groups: string[];
}

/** The provider did not answer (discovery, token or keys): the sign-in is refused as unavailable (503). */
export class ProviderUnavailableError extends Error {}
/** The callback failed a check (state, code, ID token): the sign-in is refused (400). */
export class SignInRefusedError extends Error {}

/**
 * The dashboard as the provider's client: authorization code flow with PKCE (S256), `state` and `nonce`; the ID
 * token's signature (the provider's JWKS), issuer, audience, expiry and nonce are checked by openid-client.
 * Discovery is lazy: the server starts whether or not the provider answers, and a failed discovery is retried.
 */
export class OidcClient {
  readonly redirectUri: string;
  readonly config: OidcConfig;
  private discovered?: Promise<client.Configuration>;
  private failedAt = 0;
  private lastError?: string;

  constructor(config: OidcConfig, publicUrl: string) {
    this.config = config;
    this.redirectUri = `${publicUrl}${OIDC_CALLBACK_PATH}`;
  }

  private configuration(): Promise<client.Configuration> {
    if (this.discovered) return this.discovered;
    if (Date.now() - this.failedAt < DISCOVERY_RETRY_MS)
      return Promise.reject(new ProviderUnavailableError(`the sign-in provider did not answer: ${this.lastError}`));
    const url = new URL(this.config.issuer);
    const insecure = url.protocol === 'http:' ? [client.allowInsecureRequests] : [];
    this.discovered = client
      .discovery(url, this.config.clientId, undefined, client.ClientSecretBasic(this.config.clientSecret), {
        execute: insecure,
        timeout: OIDC_TIMEOUT_MS / 1000,
      })
      .catch((err: unknown) => {
        this.discovered = undefined;
        this.failedAt = Date.now();
        this.lastError = (err as Error).message;
        throw new ProviderUnavailableError(`the sign-in provider did not answer: ${this.lastError}`);
      });
    return this.discovered;
  }

  /** Whether the provider's discovery document has been read (readiness): tries it now when it has not. */
  async reachable(): Promise<boolean> {
    try {
      await this.configuration();
      return true;
    } catch {
      return false;
    }
  }

  /** The provider's authorization URL for a new sign-in, and what the browser keeps until the callback. */
  async start(): Promise<{ url: string; pending: PendingSignIn }> {
    const config = await this.configuration();
    const pending = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier() };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      scope: this.config.scopes,
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url: url.href, pending };
  }

  /** Redeems the callback's code and checks the ID token; refuses (SignInRefusedError) or is unavailable. */
  async finish(callbackUrl: URL, pending: PendingSignIn): Promise<SignedInIdentity> {
    const config = await this.configuration();
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      if (isNetworkFailure(err)) throw new ProviderUnavailableError(`the sign-in provider did not answer: ${(err as Error).message}`);
      throw new SignInRefusedError(describe(err));
    }
    const claims = tokens.claims();
    if (!claims) throw new SignInRefusedError('the provider sent no ID token');
    const merged = needsUserInfo(claims, this.config.groupsClaim) ? await this.withUserInfo(config, claims, tokens.access_token) : claims;
    const groups = merged[this.config.groupsClaim];
    return {
      issuer: claims.iss,
      subject: claims.sub,
      email: typeof merged.email === 'string' ? merged.email.trim().toLowerCase() : undefined,
      emailVerified: merged.email_verified === true,
      groups: Array.isArray(groups) ? groups.filter((g): g is string => typeof g === 'string') : [],
    };
  }

  /**
   * The ID token's claims completed from the UserInfo endpoint (OpenID Connect Core §5.4: a provider may return
   * the scopes' claims there only): a claim the ID token has wins, and the UserInfo answer's `sub` must be the ID
   * token's (openid-client checks it; a mismatch refuses the sign-in). A provider without the endpoint: as is.
   */
  private async withUserInfo(config: client.Configuration, claims: client.IDToken, accessToken: string): Promise<Record<string, unknown>> {
    if (!config.serverMetadata().userinfo_endpoint) return claims;
    try {
      const info = await client.fetchUserInfo(config, accessToken, claims.sub);
      return { ...info, ...claims };
    } catch (err) {
      if (isNetworkFailure(err)) throw new ProviderUnavailableError(`the sign-in provider did not answer: ${(err as Error).message}`);
      throw new SignInRefusedError(`the provider's UserInfo answer was refused: ${describe(err)}`);
    }
  }
}

/** Whether the ID token lacks a claim sign-in decides on (`email`, `email_verified`, the groups claim). */
const needsUserInfo = (claims: client.IDToken, groupsClaim: string): boolean =>
  claims.email === undefined || claims.email_verified === undefined || claims[groupsClaim] === undefined;

function isNetworkFailure(err: unknown): boolean {
  const e = err as { name?: string; cause?: { code?: string; name?: string } };
  return e?.name === 'TypeError' || e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.code === 'ECONNREFUSED';
}

/** A refusal's reason for the page, from openid-client's error (it names the failed check, never a token). */
function describe(err: unknown): string {
  const e = err as { message?: string; error?: string; error_description?: string; cause?: { message?: string } };
  if (e.error) return `the provider refused the code (${e.error}${e.error_description ? `: ${e.error_description}` : ''})`;
  // openid-client wraps the failed check (oauth4webapi's error, naming the claim or parameter) in a generic one.
  return e.cause?.message ?? e.message ?? 'the sign-in could not be checked';
}

/**
 * Readiness with the sign-in provider: `checks.oidc` up or down, and `degraded` when down (keys are verified and
 * the API served without it; only single sign-on waits). Without single sign-on, readiness as it is.
 */
export function withOidcReadiness(readiness: () => Promise<ReadinessReport>, oidc: OidcClient | undefined) {
  if (!oidc) return readiness;
  return async (): Promise<ReadinessReport> => {
    const [report, up] = await Promise.all([readiness(), oidc.reachable()]);
    return { status: up ? report.status : 'degraded', checks: { ...report.checks, oidc: up ? 'up' : 'down' } };
  };
}
