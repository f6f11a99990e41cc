import type { Caller } from '../../services/caller.ts';
import type { FieldProblem } from '../../domain/errors.ts';
import type { App } from '../types.ts';
import { TICKET_HEADER, type InternalCallers } from '../internal-callers.ts';

/** What an operation answered: its data, or its error envelope's `error` (detail, and the problems of each field). */
export type Outcome<T> = { ok: true; data: T } | { ok: false; status: number; error: { detail: string; errors?: FieldProblem[] } };

/**
 * Performs a `/v1/` operation in-process as `caller`: the request a client would send, through the same
 * route (schema, body rules, service, serializer, error envelope). The caller travels as a one-time ticket.
 */
export async function performOperation<T>(
  app: App,
  internal: InternalCallers,
  caller: Caller,
  method: 'GET' | 'POST',
  operation: string,
  input: object,
): Promise<Outcome<T>> {
  const ticket = internal.issue(caller);
  try {
    const query = method === 'GET' ? new URLSearchParams(queryValues(input)).toString() : '';
    const res = await app.inject({
      method,
      url: `/v1/${operation}${query ? `?${query}` : ''}`,
      headers: { [TICKET_HEADER]: ticket, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { payload: JSON.stringify(input) } : {}),
    });
    const body = res.json() as Record<string, unknown>;
    if (res.statusCode < 300) return { ok: true, data: body as T };
    return { ok: false, status: res.statusCode, error: body.error as { detail: string; errors?: FieldProblem[] } };
  } finally {
    internal.revoke(ticket);
  }
}

function queryValues(input: object): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, String(v)]);
  }
  return out;
}
