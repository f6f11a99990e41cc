import { AppError } from '../../domain/errors.ts';
import { can, type Caller } from '../../services/caller.ts';

/**
 * Where Unkey v2 answers a missing permission as if the resource did not exist (keys.createKey and
 * apis.listKeys: the API; keys.whoami: the key), so that a root key without the right cannot tell which
 * resources exist. Runs the service call and turns its 403 into `hidden()` when the caller lacks one of
 * `permissions` (`'any'`: whatever permission was missing); other 403s (create rights, decrypt_key) stay.
 */
export async function hideDenial<T>(work: Promise<T>, caller: Caller, permissions: string[] | 'any', hidden: () => AppError): Promise<T> {
  try {
    return await work;
  } catch (err) {
    const denied = err instanceof AppError && err.kind === 'auth/insufficient-permissions';
    if (denied && (permissions === 'any' || permissions.some((p) => !can(caller, p)))) throw hidden();
    throw err;
  }
}
