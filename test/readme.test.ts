import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { repoUrl } from './helpers/repo.ts';
import { declaredRoutes } from './helpers/routes.ts';
import { ERROR_CATALOG } from '../src/domain/errors.ts';
import { ACTIONS } from '../src/domain/permissions.ts';
import { run as cli } from '../src/cli/main.ts';
import type { Store } from '../src/store/store.ts';

// The README is part of the product: it must list exactly what the code does.
describe('README.md matches the code', () => {
  const readme = readFileSync(repoUrl('README.md'), 'utf8');
  const section = (name: string) => {
    const m = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(readme);
    assert.ok(m, `README.md lacks the <!-- ${name}:start --> … <!-- ${name}:end --> section`);
    return m[1];
  };

  test('the error table is ERROR_CATALOG, row for row', () => {
    const rows = section('errors')
      .split('\n')
      .filter((l) => l.startsWith('| `'));
    const expected = Object.entries(ERROR_CATALOG).map(([kind, e]) => `| \`${kind}\` | ${e.status} | \`${e.code}\` | ${e.description} |`);
    assert.deepEqual(rows, expected, 'regenerate the README error table from src/domain/errors.ts');
  });

  test('the operations table lists exactly the registered /v1 routes', () => {
    const routes = declaredRoutes({ store: {} as Store })
      .filter((r) => r.url.startsWith('/v1/'))
      .map((r) => `${r.method} ${r.url}`);
    const documented = [...section('operations').matchAll(/^\| `(GET|POST) (\/v1\/[^`]+)`/gm)].map((m) => `${m[1]} ${m[2]}`);
    assert.deepEqual([...documented].sort(), [...routes].sort(), 'add (or remove) the operation in the README operations table');
  });

  test('the v2 table lists exactly the registered /v2 routes, each beside a registered /v1 route or none', () => {
    const routes = declaredRoutes({ store: {} as Store }).map((r) => `${r.method} ${r.url}`);
    const rows = [...section('v2-operations').matchAll(/^\| (—|`(?:GET|POST) \/v1\/[^`]+`) \| `((?:GET|POST) \/v2\/[^`]+)` \|/gm)];
    assert.deepEqual(
      rows.map((m) => m[2]).sort(),
      routes.filter((r) => r.includes(' /v2/')).sort(),
      'add (or remove) the operation in the README v2 table',
    );
    for (const [, v1] of rows) if (v1 !== '—') assert.ok(routes.includes(v1.slice(1, -1)), `${v1} is not a registered route`);
  });

  test('the permission table lists every type and action', () => {
    for (const [type, actions] of Object.entries(ACTIONS)) {
      assert.ok(
        readme.includes(`| \`${type}\` | ${actions.map((a) => `\`${a}\``).join(' ')} |`),
        `README permission row for ${type} differs from src/domain/permissions.ts`,
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
    for (const command of commands) assert.ok(readme.includes(`| \`${command}`), `README does not document "keyhold ${command}"`);
    // The OIDC settings are read in src/oidc-config.ts, for loadConfig.
    const config = ['src/config.ts', 'src/oidc-config.ts'].map((f) => readFileSync(repoUrl(f), 'utf8')).join('\n');
    // Settings are read as env.NAME or by their name as a string ('KEYHOLD_…') through a shared parser.
    const variables = new Set([...config.matchAll(/env\.([A-Z][A-Z0-9_]+)|'(KEYHOLD_[A-Z0-9_]+)'/g)].map((m) => m[1] ?? m[2]));
    assert.ok(variables.has('DATABASE_URL'));
    for (const v of [...variables, 'KEYHOLD_TEST_POSTGRES_URL', 'KEYHOLD_TEST_REDIS_URL']) {
      assert.ok(readme.includes(`| \`${v}\` |`), `README configuration table lacks ${v}`);
    }
    const example = readFileSync(repoUrl('.env.example'), 'utf8');
    for (const v of variables) assert.match(example, new RegExp(`^#? ?${v}=`, 'm'), `.env.example lacks ${v}`);
  });
});
