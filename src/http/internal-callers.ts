import { randomUUID } from 'node:crypto';
import type { Caller } from '../services/caller.ts';

/** The header an in-process request (`app.inject`) names its caller's ticket in. */
export const TICKET_HEADER = 'x-keyhold-internal-ticket';

/**
 * Callers handed to in-process requests: the dashboard performs an operation by injecting the very request a
 * client would send to its `/v1/` route (same schema, rules, service and answer), as its session's caller.
 * A ticket is a random UUID, valid for the one request it was issued for and taken by its authentication;
 * a ticket that is not in this map (guessed, replayed, or sent from outside) is never a caller: the request
 * is then authenticated like any other, by its root key.
 */
export class InternalCallers {
  readonly #pending = new Map<string, Caller>();

  /** A ticket for one request; `take` must see it, or `revoke` must drop it, once the request ends. */
  issue(caller: Caller): string {
    const ticket = randomUUID();
    this.#pending.set(ticket, caller);
    return ticket;
  }

  /** The caller of this ticket, once; undefined for anything else. */
  take(ticket: string | string[] | undefined): Caller | undefined {
    if (typeof ticket !== 'string') return undefined;
    const caller = this.#pending.get(ticket);
    this.#pending.delete(ticket);
    return caller;
  }

  revoke(ticket: string): void {
    this.#pending.delete(ticket);
  }
}
