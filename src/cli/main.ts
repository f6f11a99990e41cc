import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { userInfo } from 'node:os';
import { AppError } from '../domain/errors.ts';
import { ConfigError } from '../config/shapes.ts';
import { loadDatabaseUrl } from '../config/store.ts';
import { openStore, type Store } from '../store/store.ts';
import { SchemaTooNewError } from '../store/schema-version.ts';
import { storeProblem } from '../start/checks.ts';
import { type Command, UsageError } from './command.ts';
import { COMMANDS } from './commands.ts';
import { commandUsage, generalUsage, groupUsage } from './usage.ts';
import { tuneGcForStreaming, writeLines } from './write-lines.ts';

/** The database named by DATABASE_URL cannot be opened or migrated; `message` names DATABASE_URL and the fix. */
class StoreProblem extends Error {}

/**
 * How long a command waits for a PostgreSQL connection. Longer than the server's 2 s: an operator's one-off command
 * would rather wait out a busy database than fail, and no request queues behind it.
 */
const CLI_CONNECT_MS = 10_000;

const GLOBAL_FLAGS = new Set(['--json', '--help', '-h', '--version']);

type Print = (s: string) => void;

/** The version of Keyhold: package.json's. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/** What `words` name: a command, or the commands of a group (`root-keys`), or nothing. */
function lookUp(words: string[]): { command?: Command; group?: Array<[string, Command]> } {
  const name = words.join(' ');
  if (Object.hasOwn(COMMANDS, name)) return { command: COMMANDS[name] };
  const group = words.length === 1 ? Object.entries(COMMANDS).filter(([n]) => n.startsWith(`${words[0]} `)) : [];
  return group.length ? { group } : {};
}

/** The help asked for by `--help` after these words: general, a group's or a command's; undefined for unknown words. */
function helpFor(words: string[]): string | undefined {
  if (words.length === 0) return generalUsage(COMMANDS);
  const { command, group } = lookUp(words);
  if (command) return commandUsage(words.join(' '), command);
  return group ? groupUsage(words[0], group) : undefined;
}

/** The option values of a command, with every required one present; throws UsageError. */
function parseOptions(command: Command, args: string[]): Record<string, unknown> {
  const options = Object.fromEntries(
    Object.entries(command.options).map(([name, o]) => [name, { type: o.type, multiple: o.multiple === true }]),
  );
  const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: command.operands !== undefined });
  if (command.operands !== undefined && positionals.length === 0) throw new UsageError(`${command.operands} is required`);
  for (const [name, o] of Object.entries(command.options)) {
    const v = values[name];
    if (o.required && (v === undefined || v === '' || (Array.isArray(v) && v.length === 0))) throw new UsageError(`--${name} is required`);
  }
  return command.operands === undefined ? values : { ...values, _: positionals };
}

/** Runs the CLI; returns the process exit code (0 ok, 1 failed, 2 usage or configuration error). */
export async function run(
  argv: string[],
  out: Print = (s) => process.stdout.write(`${s}\n`),
  err: Print = (s) => process.stderr.write(`${s}\n`),
  /** Where a streaming command's lines go. */
  stream: Writable = process.stdout,
): Promise<number> {
  const json = argv.includes('--json');
  const fail = (code: number, kind: string, detail: string, errors?: unknown[]) => {
    if (json) out(JSON.stringify({ error: { kind, detail, ...(errors ? { errors } : {}) } }));
    else err(`keyhold: ${detail}`);
    return code;
  };
  const print = (text: string, object: object) => {
    out(json ? JSON.stringify(object) : text);
    return 0;
  };
  // The command is the first two words; --json, --help and --version may appear anywhere.
  const rest = argv.filter((a) => !GLOBAL_FLAGS.has(a));
  const wordCount = rest.slice(0, 2).findIndex((a) => a.startsWith('-'));
  const words = rest.slice(0, wordCount === -1 ? 2 : wordCount);
  const name = words.join(' ');

  if (argv.includes('--help') || argv.includes('-h') || argv.length === 0) {
    const help = helpFor(words);
    return help === undefined ? fail(2, 'usage', `unknown command "${name}"\n\n${generalUsage(COMMANDS)}`) : print(help, { help });
  }
  if (argv.includes('--version')) {
    const version = packageVersion();
    return print(version, { version });
  }
  const { command, group } = lookUp(words);
  if (!command) {
    if (group) return fail(2, 'usage', `"${name}" needs a command\n\n${groupUsage(name, group)}`);
    return fail(2, 'usage', `${words.length ? `unknown command "${name}"` : 'no command given'}\n\n${generalUsage(COMMANDS)}`);
  }
  let values: Record<string, unknown>;
  try {
    values = parseOptions(command, rest.slice(words.length));
  } catch (e) {
    return fail(2, 'usage', `${(e as Error).message}\n\n${commandUsage(name, command)}`);
  }
  return execute(command, values, { print, fail, stream });
}

/** Opens the store (applying pending schema migrations), runs the command and closes the store; the exit code. */
async function execute(
  command: Command,
  values: Record<string, unknown>,
  {
    print,
    fail,
    stream,
  }: {
    print: (text: string, object: object) => number;
    fail: (code: number, kind: string, detail: string, errors?: unknown[]) => number;
    stream: Writable;
  },
): Promise<number> {
  let store: Store | undefined;
  const collect = command.streams ? tuneGcForStreaming() : undefined;
  try {
    let applied: string[] = [];
    if (!command.storeless?.(values)) {
      const url = loadDatabaseUrl();
      store = openStore(url, { postgres: { connectMs: CLI_CONNECT_MS } });
      // A database that cannot be opened or migrated is told as the server tells it: naming DATABASE_URL, without its password.
      applied = await store.migrate().catch((err: unknown) => {
        throw err instanceof SchemaTooNewError ? err : new StoreProblem(storeProblem(err, url));
      });
    }
    const actor = { type: 'operator' as const, id: `cli:${userInfo().username}` };
    const result = await command.run({ store: store as Store, actor, applied }, values);
    if ('lines' in result) {
      await writeLines(result.lines, stream, collect);
      return 0;
    }
    return print(result.text, result.json) || (result.exitCode ?? 0);
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError) return fail(2, 'usage', e.message);
    // An older CLI never touches a database a newer Keyhold migrated: not even a read-only command.
    if (e instanceof SchemaTooNewError) return fail(1, 'store/schema-too-new', e.message);
    if (e instanceof StoreProblem) return fail(1, 'store/unusable', e.message);
    // Input the operator must correct (an unknown permission, …) is a usage error too.
    if (e instanceof AppError) return fail(e.kind.startsWith('request/') ? 2 : 1, e.kind, e.message, e.errors);
    return fail(1, 'internal', (e as Error).message);
  } finally {
    await store?.close();
  }
}
