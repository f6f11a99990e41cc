import type { Store } from '../store/store.ts';
import type { Actor } from '../services/caller.ts';

/** One option of a command, as `keyhold <command> --help` describes it. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  /** May be given several times (its value is then an array). */
  multiple?: boolean;
  /** Must be given; checked before the store is opened, so a usage error touches nothing. */
  required?: boolean;
  /** The value's placeholder in usage text (`N`, `MS`); string options only. */
  value?: string;
  /** One line: what the option means. */
  description: string;
}

/**
 * What a command hands back: `json` for --json, `text` otherwise; or, for a command that writes a stream of
 * records (`keyhold export …`), `lines`: pages of lines, each line written to stdout as it comes, at the pace
 * stdout takes them (the same with or without --json: each line is already JSON). A command checks its options
 * before it returns `lines`, so that a usage error is reported before anything is written.
 */
export type CommandResult = { json: object; text: string; exitCode?: number } | { lines: AsyncIterable<string[]> };

/** What a command runs with: the opened store (migrated), who acts, and the schema migrations just applied. */
export interface CommandContext {
  store: Store;
  actor: Actor;
  applied: string[];
}

export interface Command {
  /** One line: what the command does (in `keyhold --help` and atop the command's own help). */
  summary: string;
  options: Record<string, OptionSpec>;
  /** What --json prints on success, e.g. `{"workspaceId"}`. */
  prints: string;
  /** Writes a stream of JSON lines (its result is `lines`): `prints` then says what one line holds. */
  streams?: true;
  /** Takes operands after the options (their placeholder in usage text, e.g. `PATH…`), as `values._`: at least one. */
  operands?: string;
  /** True when these options need no database: the store is then not opened and `store` must not be used. */
  storeless?(values: Record<string, unknown>): boolean;
  run(context: CommandContext, values: Record<string, unknown>): Promise<CommandResult>;
}

/**
 * The commands of one group (`workspaces`, `root-keys`, …), by their full name (`workspaces create`). A group
 * is one file under src/cli/commands/, listed once in src/cli/commands.ts.
 */
export type CommandGroup = Record<string, Command>;

/** Invalid input the operator must correct: exit code 2. */
export class UsageError extends Error {}

/** The value of a string option (required ones are checked before the command runs). */
export const stringOption = (values: Record<string, unknown>, name: string): string | undefined => {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
};

/** The value of a required string option. */
export const requiredOption = (values: Record<string, unknown>, name: string): string => {
  const v = stringOption(values, name);
  if (v === undefined || v === '') throw new UsageError(`--${name} is required`);
  return v;
};

/** An integer option in min..max (written as digits only), or `fallback` when absent. */
export const integerOption = (values: Record<string, unknown>, name: string, fallback: number, min: number, max: number): number => {
  const raw = stringOption(values, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw new UsageError(`--${name} must be an integer ${min}..${max}`);
  return n;
};

/** An epoch-milliseconds option, or undefined when absent. */
export const epochMsOption = (values: Record<string, unknown>, name: string): number | undefined => {
  const raw = stringOption(values, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new UsageError(`--${name} must be epoch milliseconds`);
  return n;
};
