import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';

export const CLIENT_ID = 'keyhold-dashboard';
export const CLIENT_SECRET = 'a-client-secret-for-the-loopback-provider';

/** An account of the loopback provider: its login name is its subject. */
export interface TestAccount {
  email: string;
  emailVerified: boolean;
  groups?: string[];
}

/**
 * How the provider's answers are altered, to test what Keyhold refuses: the ID token re-signed with the provider's
 * own key (another audience, expired), or the UserInfo answer naming another subject.
 */
export type Tamper = 'none' | 'audience' | 'expired' | 'userinfo-sub';

/** Where the provider puts the scopes' claims: in the ID token, or (oidc-provider's default) only at UserInfo. */
export type ClaimsIn = 'id-token' | 'userinfo';

export interface LoopbackProvider {
  issuer: string;
  accounts: Map<string, TestAccount>;
  tamper: Tamper;
  /** While true, the provider's redirect back to the dashboard is answered with a page instead (`heldCallback` keeps its URL). */
  hold: boolean;
  heldCallback?: string;
  /** Registers the redirect URI once the dashboard's address is known. */
  start(redirectUri: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A certified OpenID provider (oidc-provider) on loopback, behind a proxy that can re-sign its ID tokens with a
 * wrong audience or a past expiry (the signature stays valid: the provider's own key signs it).
 */
export async function loopbackProvider(claimsIn: ClaimsIn = 'id-token'): Promise<LoopbackProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  let target = 0;
  const state: { tamper: Tamper; hold: boolean; heldCallback?: string } = { tamper: 'none', hold: false };
  const proxy = createServer((req, res) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: target, path: req.url, method: req.method, headers: req.headers }, (up) => {
      const location = up.headers.location ?? '';
      if (state.hold && location.includes('/dashboard/oidc/callback')) {
        state.heldCallback = location;
        up.resume();
        res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>held</title><h1>held</h1>');
        return;
      }
      const tampered =
        state.tamper === 'userinfo-sub' ? req.url?.startsWith('/me') : state.tamper !== 'none' && req.url?.startsWith('/token');
      if (!tampered) {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        return;
      }
      void retold(up, jwk, state.tamper).then((body) => {
        res.writeHead(up.statusCode ?? 502, { ...up.headers, 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
    });
    req.pipe(upstream);
  });
  const issuer = `http://127.0.0.1:${(await listen(proxy)).port}`;
  const accounts = new Map<string, TestAccount>();
  let server: Server | undefined;
  return {
    issuer,
    accounts,
    get tamper() {
      return state.tamper;
    },
    set tamper(t: Tamper) {
      state.tamper = t;
    },
    get hold() {
      return state.hold;
    },
    set hold(h: boolean) {
      state.hold = h;
    },
    get heldCallback() {
      return state.heldCallback;
    },
    async start(redirectUri: string) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: CLIENT_ID,
            client_secret: CLIENT_SECRET,
            redirect_uris: [redirectUri],
            response_types: ['code'],
            grant_types: ['authorization_code'],
          },
        ],
        jwks: { keys: [jwk] },
        cookies: { keys: ['loopback-provider-cookie-key'] },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
        // 'id-token': claims of the requested scopes in the ID token, as Keycloak, Okta and Google send them;
        // 'userinfo': the provider's default, the ID token has `sub` only and the rest comes from UserInfo.
        ...(claimsIn === 'id-token' ? { conformIdTokenClaims: false } : {}),
        pkce: { required: () => true },
        async findAccount(_ctx, sub) {
          const account = accounts.get(sub);
          if (!account) return undefined;
          return {
            accountId: sub,
            claims: async () => ({ sub, email: account.email, email_verified: account.emailVerified, groups: account.groups ?? [] }),
          };
        },
        // No consent screen: every scope is granted to the one client.
        async loadExistingGrant(ctx) {
          const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
          grant.addOIDCScope('openid email profile groups');
          await grant.save();
          return grant;
        },
      });
      server = createServer(provider.callback());
      target = (await listen(server)).port;
    },
    async close() {
      await Promise.all([proxy, server].map((s) => s && new Promise((r) => s.close(() => r(undefined)))));
    },
  };
}

function listen(server: Server): Promise<AddressInfo> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)));
}

/** The token answer with its ID token re-signed (for another audience, or expired an hour ago), or UserInfo's with another `sub`. */
async function retold(up: IncomingMessage, jwk: JWK, tamper: Tamper): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of up) chunks.push(c as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id_token?: string; sub?: string };
  if (tamper === 'userinfo-sub') return JSON.stringify({ ...body, sub: `${body.sub}-someone-else` });
  if (!body.id_token) return JSON.stringify(body);
  const claims = decodeJwt(body.id_token);
  const now = Math.floor(Date.now() / 1000);
  const changed = tamper === 'audience' ? { ...claims, aud: 'another-client' } : { ...claims, iat: now - 7200, exp: now - 3600 };
  body.id_token = await new SignJWT(changed).setProtectedHeader({ alg: 'RS256', kid: jwk.kid }).sign(await importJWK(jwk, 'RS256'));
  return JSON.stringify(body);
}

/** Signs in at the provider's login page (its development login form) as this account. */
export async function providerLogin(page: Page, login: string): Promise<void> {
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any');
  await page.locator('button[type="submit"]').click();
}

/** A free loopback port (the dashboard's address must be known before the app is built: it is the redirect URI's). */
export { freePort } from './processes.ts';

/** The single sign-on settings of an app signing in at `issuer`, with these operator emails. */
export const ssoSettings = (issuer: string, operatorEmails: string[]) => ({
  issuer,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  scopes: 'openid email profile',
  operatorEmails,
  groupsClaim: 'groups',
  operatorGroup: 'keyhold-operators',
});
