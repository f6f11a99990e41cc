import { AppError } from '../domain/errors.ts';
import { grants } from '../domain/permissions.ts';

/** Who performs a change: a root key over HTTP, or the operator through the CLI. */
export interface Actor {
  type: 'root_key' | 'operator';
  id: string;
}

/** An authenticated HTTP caller: the root key's workspace and permissions, and the request it is making. */
export interface Caller {
  workspaceId: string;
  rootKeyId: string;
  permissions: ReadonlySet<string>;
  requestId: string;
}

export const actorOf = (caller: Caller): Actor => ({ type: 'root_key', id: caller.rootKeyId });

/** Throws 403 naming every permission of `required` that the caller's root key does not grant. */
export function requirePermissions(caller: Caller, ...required: string[]): void {
  const missing = required.filter((p) => !grants(caller.permissions, p));
  if (missing.length > 0) {
    throw new AppError('auth/insufficient-permissions', `Missing permission${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`);
  }
}

export const can = (caller: Caller, permission: string): boolean => grants(caller.permissions, permission);
