import type { FieldProblem } from '../../domain/errors.ts';

// `<input type="datetime-local">` sends `YYYY-MM-DDTHH:MM` (seconds optional); the dashboard reads it as UTC.
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

/** Epoch milliseconds of a datetime-local value read as UTC; undefined when empty. */
export function epochFromDatetime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  return Date.parse(`${value}Z`);
}

/** Why a datetime-local value is not a time (at the operation's `path`), or undefined when it is one or is empty. */
export function datetimeProblem(value: string | undefined, path: string): FieldProblem | undefined {
  if (value === undefined) return undefined;
  if (!DATETIME.test(value) || !Number.isFinite(Date.parse(`${value}Z`)))
    return { path, message: 'must be a date and time, YYYY-MM-DDTHH:MM (UTC)' };
  return undefined;
}

/** A form sent back to its page: what was entered, and what the operation refused (absent: the form is just open). */
export interface FailedForm {
  values?: Record<string, string | string[]>;
  error?: { detail: string; errors?: FieldProblem[] };
}
