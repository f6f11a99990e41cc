import type { Command, OptionSpec } from './command.ts';

const INTRO = 'keyhold — operate a Keyhold installation (uses DATABASE_URL, like the server)';
const COMMON = 'Every command accepts --json (print exactly one JSON object, also for errors). Changes reach running servers at once.';

/** How an option is written in a synopsis: `--name N`, `[--name N]`, `--permission P [--permission P…]`, `[--flag]`. */
function optionSynopsis(name: string, o: OptionSpec): string {
  const one = o.type === 'boolean' ? `--${name}` : `--${name} ${o.value ?? 'VALUE'}`;
  if (o.required) return o.multiple ? `${one} [${one}…]` : one;
  return o.multiple ? `[${one}…]` : `[${one}]`;
}

/** `keyhold <name> <its options>`. */
export const synopsis = (name: string, command: Command): string =>
  [
    'keyhold',
    name,
    ...Object.entries(command.options).map(([option, o]) => optionSynopsis(option, o)),
    ...(command.operands ? [command.operands] : []),
  ].join(' ');

/** A two-column list: each left side padded to the widest. */
function columns(rows: Array<[string, string]>): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join('\n');
}

/** `keyhold --help`: every command (its synopsis, then what it does), and the flags every command takes. */
export function generalUsage(commands: Readonly<Record<string, Command>>): string {
  const list = Object.entries(commands).map(([name, c]) => `  ${synopsis(name, c)}\n      ${c.summary}`);
  return [
    INTRO,
    'Usage: keyhold <command> [options] [--json]',
    `Commands:\n${list.join('\n')}`,
    `Options of every command:\n${columns([
      ['--json', 'print exactly one JSON object on stdout, also for errors: {"error":{"kind","detail"}}'],
      ['-h, --help', "print the command's options (keyhold <command> --help), or this list"],
      ['--version', 'print the version of Keyhold'],
    ])}`,
    COMMON,
  ].join('\n\n');
}

/** `keyhold <command> --help`: what the command does, its synopsis and every option with a line on it. */
export function commandUsage(name: string, command: Command): string {
  const options: Array<[string, string]> = Object.entries(command.options).map(([option, o]) => [
    o.type === 'boolean' ? `--${option}` : `--${option} ${o.value ?? 'VALUE'}`,
    `${o.description}${o.required ? (o.multiple ? ' (required, repeatable)' : ' (required)') : o.multiple ? ' (repeatable)' : ''}`,
  ]);
  const json = command.streams
    ? `changes nothing on success (every line is JSON: ${command.prints}); an error is one JSON object`
    : `print exactly one JSON object: ${command.prints}`;
  options.push(['--json', json], ['-h, --help', 'print this help']);
  return [`keyhold ${name} — ${command.summary}`, `Usage: ${synopsis(name, command)} [--json]`, `Options:\n${columns(options)}`].join(
    '\n\n',
  );
}

/** `keyhold <group> --help`: the commands of one group, each with what it does. */
export function groupUsage(group: string, commands: Array<[string, Command]>): string {
  const list = commands.map(([name, c]) => `  ${synopsis(name, c)}\n      ${c.summary}`);
  return [`keyhold ${group} — its commands (keyhold ${group} <command> --help describes one):`, list.join('\n')].join('\n\n');
}
