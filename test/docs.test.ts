import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { repoUrl } from './helpers/repo.ts';
import { declaredRoutes } from './helpers/routes.ts';
import { ERROR_CATALOG } from '../src/domain/errors.ts';
import { ACTIONS } from '../src/domain/permissions.ts';
import { run as cli } from '../src/cli/main.ts';
import type { Store } from '../src/store/store.ts';

// The documentation is part of the product: its tables must list exactly what the code does.
describe('the docs/ tables match the code', () => {
  const page = (path: string) => readFileSync(repoUrl(path), 'utf8');
  const section = (path: string, name: string) => {
    const m = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(page(path));
    assert.ok(m, `${path} lacks the <!-- ${name}:start --> … <!-- ${name}:end --> section`);
    return m[1];
  };

  test('the error table is ERROR_CATALOG, row for row', () => {
    const rows = section('docs/api-reference.md', 'errors')
      .split('\n')
      .filter((l) => l.startsWith('| `'));
    const expected = Object.entries(ERROR_CATALOG).map(([kind, e]) => `| \`${kind}\` | ${e.status} | \`${e.code}\` | ${e.description} |`);
    assert.deepEqual(rows, expected, 'regenerate the error table of docs/api-reference.md from src/domain/errors.ts');
  });

  test('the operations table lists exactly the registered /v1 routes', () => {
    const routes = declaredRoutes({ store: {} as Store })
      .filter((r) => r.url.startsWith('/v1/'))
      .map((r) => `${r.method} ${r.url}`);
    const documented = [...section('docs/api-reference.md', 'operations').matchAll(/^\| `(GET|POST) (\/v1\/[^`]+)`/gm)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
    assert.deepEqual(
      [...documented].sort(),
      [...routes].sort(),
      'add (or remove) the operation in the operations table of docs/api-reference.md',
    );
  });

  test('the v2 table lists exactly the registered /v2 routes, each beside a registered /v1 route or none', () => {
    const routes = declaredRoutes({ store: {} as Store }).map((r) => `${r.method} ${r.url}`);
    const rows = [
      ...section('docs/compatibility-v2.md', 'v2-operations').matchAll(
        /^\| (—|`(?:GET|POST) \/v1\/[^`]+`) \| `((?:GET|POST) \/v2\/[^`]+)` \|/gm,
      ),
    ];
    assert.deepEqual(
      rows.map((m) => m[2]).sort(),
      routes.filter((r) => r.includes(' /v2/')).sort(),
      'add (or remove) the operation in the v2 table of docs/compatibility-v2.md',
    );
    for (const [, v1] of rows) if (v1 !== '—') assert.ok(routes.includes(v1.slice(1, -1)), `${v1} is not a registered route`);
  });

  test('the permission table lists every type and action', () => {
    const apiReference = page('docs/api-reference.md');
    for (const [type, actions] of Object.entries(ACTIONS)) {
      assert.ok(
        apiReference.includes(`| \`${type}\` | ${actions.map((a) => `\`${a}\``).join(' ')} |`),
        `the permission row for ${type} in docs/api-reference.md differs from src/domain/permissions.ts`,
      );
    }
  });

  test('every CLI command and every environment variable is documented', async () => {
    const usage: string[] = [];
    await cli(
      ['--help'],
      (s) => usage.push(s),
      () => {},
    );
    const commands = usage
      .join('\n')
      .split('\n')
      .filter((l) => l.startsWith('  keyhold '))
      .map((l) => l.trim().split(' ').slice(1, 3).join(' '));
    assert.ok(commands.length >= 5);
    const cliPage = page('docs/cli.md');
    for (const command of commands) assert.ok(cliPage.includes(`| \`${command}`), `docs/cli.md does not document "keyhold ${command}"`);
    // Every setting is read in src/config/, one file per area.
    const configFiles = readdirSync(repoUrl('src/config/')).filter((f) => f.endsWith('.ts'));
    const config = configFiles.map((f) => readFileSync(repoUrl(`src/config/${f}`), 'utf8')).join('\n');
    // Settings are read as env.NAME or by their name as a string ('KEYHOLD_…') through a shared parser.
    const variables = new Set([...config.matchAll(/env\.([A-Z][A-Z0-9_]+)|'(KEYHOLD_[A-Z0-9_]+)'/g)].map((m) => m[1] ?? m[2]));
    assert.ok(variables.has('DATABASE_URL'));
    const configurationPage = page('docs/configuration.md');
    for (const v of [...variables, 'KEYHOLD_TEST_POSTGRES_URL', 'KEYHOLD_TEST_REDIS_URL']) {
      assert.ok(configurationPage.includes(`| \`${v}\` |`), `the table of docs/configuration.md lacks ${v}`);
    }
    const example = readFileSync(repoUrl('.env.example'), 'utf8');
    for (const v of variables) assert.match(example, new RegExp(`^#? ?${v}=`, 'm'), `.env.example lacks ${v}`);
  });
});
