import type { Form } from './context.ts';

/** At most this many fields per form (a root key form has one checkbox per permission: a few hundred). */
const MAX_FIELDS = 2_000;

/**
 * An `application/x-www-form-urlencoded` body as a Form: a field sent several times becomes a list. Names
 * that could reach an object's prototype are dropped; fields beyond MAX_FIELDS are ignored.
 */
export function parseForm(body: string): Form {
  const form: Form = Object.create(null);
  let count = 0;
  for (const [name, value] of new URLSearchParams(body)) {
    if (++count > MAX_FIELDS) break;
    if (name === '__proto__' || name === 'constructor' || name === 'prototype') continue;
    const had = form[name];
    form[name] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value];
  }
  return form;
}
