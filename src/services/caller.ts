import { AppError } from '../domain/errors.ts';
import { grants } from '../domain/permissions.ts';

/** Who performs a change: a root key over HTTP, the operator through the CLI, a dashboard session, or a secret scanning partner (GitHub) reporting a leak. */
export interface Actor {
  /** A dashboard_user is a person signed in with single sign-on; their id is their email. */
  type: 'root_key' | 'operator' | 'dashboard_session' | 'dashboard_operator' | 'dashboard_user' | 'secret_scanning';
  id: string;
}

/**
 * Who calls a service: an authenticated HTTP caller (the root key's workspace and permissions, and the
 * request it is making), or the operator acting in a workspace (`operatorCaller`).
 */
export interface Caller {
  workspaceId: string;
  rootKeyId: string;
  permissions: ReadonlySet<string>;
  requestId: string;
  /** Set for the operator and dashboard sessions; a root key otherwise. */
  operator?: Actor;
}

export const actorOf = (caller: Caller): Actor => caller.operator ?? { type: 'root_key', id: caller.rootKeyId };

/**
 * The operator (CLI, or a dashboard session) calling the same services in a workspace: every permission, and
 * audit records name the operator. Services do not look the workspace up: the command does first.
 */
export const operatorCaller = (workspaceId: string, operator: Actor, requestId: string): Caller => ({
  workspaceId,
  rootKeyId: operator.id,
  permissions: new Set(['*']),
  requestId,
  operator,
});

/** Throws 403 naming every permission of `required` that the caller's root key does not grant. */
export function requirePermissions(caller: Caller, ...required: string[]): void {
  const missing = required.filter((p) => !grants(caller.permissions, p));
  if (missing.length > 0) {
    throw new AppError('auth/insufficient-permissions', `Missing permission${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`);
  }
}

export const can = (caller: Caller, permission: string): boolean => grants(caller.permissions, permission);

/**
 * A 403 unless the caller may `action` some resource of `type`: `type.*.action`, `*`, or one resource's
 * `type.<id>.action` (a list then shows the resources it may read).
 */
export function requireSomeGrant(caller: Caller, type: string, action: string): void {
  if (can(caller, `${type}.*.${action}`)) return;
  for (const p of caller.permissions) if (p.startsWith(`${type}.`) && p.endsWith(`.${action}`) && p.split('.').length === 3) return;
  requirePermissions(caller, `${type}.*.${action}`);
}
