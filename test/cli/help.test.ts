import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runCli } from '../helpers/cli.ts';
import type { CliAnswer } from '../helpers/json.ts';
import { REPO_ROOT, repoUrl } from '../helpers/repo.ts';
import { COMMANDS } from '../../src/cli/commands.ts';

// Help and --version never open the database: DATABASE_URL is set to something that cannot be opened.
const cli = <T = CliAnswer>(...argv: string[]) => runCli<T>({ DATABASE_URL: 'mysql://nowhere/keyhold' }, argv);
const VERSION = (JSON.parse(readFileSync(repoUrl('package.json'), 'utf8')) as { version: string }).version;

describe('keyhold --help, <command> --help and --version', () => {
  test('--help (or no arguments) lists every command with its synopsis and what it does', async () => {
    for (const argv of [['--help'], ['-h'], []]) {
      const r = await cli(...argv);
      assert.equal(r.code, 0);
      const text = r.out.join('\n');
      for (const [name, command] of Object.entries(COMMANDS)) {
        assert.match(text, new RegExp(`^  keyhold ${name}( |$)`, 'm'), `keyhold --help lacks ${name}`);
        assert.ok(text.includes(command.summary), `keyhold --help lacks what ${name} does`);
      }
      assert.match(text, /--version/);
      assert.match(text, /<command> --help/);
    }
  });

  test('<command> --help describes that command: what it does, its synopsis, each of its options on a line, what --json prints', async () => {
    for (const [name, command] of Object.entries(COMMANDS)) {
      const r = await cli(...name.split(' '), '--help');
      assert.equal(r.code, 0, name);
      const text = r.out.join('\n');
      assert.ok(text.startsWith(`keyhold ${name} — ${command.summary}`), text);
      assert.match(text, new RegExp(`^Usage: keyhold ${name}( |$)`, 'm'));
      for (const [option, spec] of Object.entries(command.options)) {
        const line = text.split('\n').find((l) => l.trimStart().startsWith(`--${option} `));
        assert.ok(line?.includes(spec.description), `${name} --help: no line for --${option}: ${text}`);
        if (spec.required) assert.match(String(line), /\(required/);
      }
      assert.ok(text.includes(command.prints), `${name} --help does not say what --json prints`);
      // Only this command: another command's synopsis is not there.
      const others = Object.keys(COMMANDS).filter((n) => n !== name && !n.startsWith(`${name} `));
      for (const other of others)
        assert.ok(!text.includes(`keyhold ${other} `) && !text.endsWith(`keyhold ${other}`), `${name} --help shows ${other}`);
    }
    const r = await cli('root-keys', 'create', '-h');
    assert.match(r.out.join('\n'), /^ {2}--permission P +a permission it grants.*\(required, repeatable\)$/m);
    assert.match(r.out.join('\n'), /^ {2}--expires-at MS +when it expires, in epoch milliseconds/m);
  });

  test('--help may come anywhere; a group name lists that group; --json wraps the text as {"help"}', async () => {
    const after = await cli('audit', 'list', '--workspace', 'ws_x', '--help');
    assert.equal(after.code, 0);
    assert.match(after.out.join('\n'), /^keyhold audit list — /);
    const group = await cli('root-keys', '--help');
    assert.equal(group.code, 0);
    const text = group.out.join('\n');
    for (const c of ['create', 'revoke', 'list']) assert.match(text, new RegExp(`^  keyhold root-keys ${c}`, 'm'));
    assert.ok(!text.includes('keyhold workspaces'));
    const json = await cli<{ help: string }>('workspaces', 'list', '--help', '--json');
    assert.equal(json.code, 0);
    assert.match(json.json.help, /^keyhold workspaces list — /);
  });

  test('--help of an unknown command is a usage error (exit 2); a group without its command says so', async () => {
    const unknown = await cli('frobnicate', '--help', '--json');
    assert.equal(unknown.code, 2);
    assert.match(unknown.json.error.detail, /unknown command "frobnicate"/);
    const bare = await cli('root-keys', '--json');
    assert.equal(bare.code, 2);
    assert.match(bare.json.error.detail, /^"root-keys" needs a command/);
  });

  test('--version prints the version of package.json; {"version"} with --json', async () => {
    const r = await cli('--version');
    assert.deepEqual([r.code, r.out, r.err], [0, [VERSION], []]);
    const json = await cli<{ version: string }>('--version', '--json');
    assert.deepEqual([json.code, json.json], [0, { version: VERSION }]);
  });

  test('bin/keyhold.js --version as a process prints only the version', async () => {
    const { stdout, stderr } = await promisify(execFile)(join(REPO_ROOT, 'node_modules/.bin/node'), ['bin/keyhold.js', '--version'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: 'mysql://nowhere/keyhold' },
    });
    assert.equal(stdout, `${VERSION}\n`);
    assert.equal(stderr, '');
  });
});
