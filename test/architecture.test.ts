import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, relative, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// The layering docs/architecture.md describes, checked so that it cannot drift.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });

interface SourceFile {
  path: string;
  rel: string;
  text: string;
}

const FILES: SourceFile[] = sourceFiles(SRC).map((path) => ({ path, rel: relative(ROOT, path), text: readFileSync(path, 'utf8') }));

/** Every module specifier a file imports (static, type-only and dynamic). */
const importsOf = (text: string): string[] => [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'([^']+)'/gm)].map((m) => m[1]);

/** Where an import leads: `src/…` for a relative import, else the package name. */
const target = (file: string, spec: string): string => (spec.startsWith('.') ? relative(ROOT, resolve(dirname(file), spec)) : spec);

interface Rule {
  /** The files the rule applies to (by path from the repository root). */
  where: (rel: string) => boolean;
  /** The imports it forbids them (`src/…` or a package name). */
  forbidden: (to: string) => boolean;
}

const violations = (where: Rule['where'], forbidden: Rule['forbidden'], files: SourceFile[] = FILES): string[] =>
  files
    .filter((f) => where(f.rel))
    .flatMap((f) =>
      importsOf(f.text)
        .map((spec) => target(f.path, spec))
        .filter(forbidden)
        .map((to) => `${f.rel} → ${to}`),
    );

/**
 * src/config/ is the bottom of the house: every layer may read settings from it, and it imports nothing of the
 * project but other config modules and domain/'s pure rules (the root key's shape), and Node's built-ins.
 */
const CONFIG_AT_THE_BOTTOM: Rule = {
  where: (rel) => rel.startsWith('src/config/'),
  forbidden: (to) => !to.startsWith('src/config/') && !to.startsWith('src/domain/') && !to.startsWith('node:'),
};

/** src/start/ (what runs once at start) is used only by the entry points: src/main.ts, src/server.ts and the CLI. */
const START_ONLY_FROM_ENTRY_POINTS: Rule = {
  where: (rel) => !['src/main.ts', 'src/server.ts'].includes(rel) && !rel.startsWith('src/start/') && !rel.startsWith('src/cli/'),
  forbidden: (to) => to.startsWith('src/start/'),
};

/** src/start/ may use config, store, services, crypto and domain, never a caller's layer or the composition root. */
const START_BELOW_CALLERS: Rule = {
  where: (rel) => rel.startsWith('src/start/'),
  forbidden: (to) =>
    to.startsWith('src/http/') || to.startsWith('src/cli/') || ['src/app.ts', 'src/server.ts', 'src/main.ts', 'fastify'].includes(to),
};

/** A file as the rules see it, for checking that a rule catches what it must. */
const fakeFile = (rel: string, text: string): SourceFile => ({ path: join(ROOT, rel), rel, text });

describe('architecture', () => {
  test('http and cli reach the store only through services: no Kysely, no driver, no dialect', () => {
    const storeInternals = (to: string) =>
      ['kysely', 'pg', 'node:sqlite', 'ioredis'].includes(to) ||
      to.startsWith('src/store/dialects/') ||
      to.startsWith('src/store/schema-migrations/');
    assert.deepEqual(
      violations((rel) => rel.startsWith('src/http/') || rel.startsWith('src/cli/'), storeInternals),
      [],
    );
  });

  test('domain is pure: it imports only other domain modules (and node:crypto for randomness)', () => {
    assert.deepEqual(
      violations(
        (rel) => rel.startsWith('src/domain/'),
        (to) => !to.startsWith('src/domain/') && to !== 'node:crypto',
      ),
      [],
    );
  });

  test('services, store, jobs, crypto and config never import the HTTP layer or the CLI', () => {
    const inner = (rel: string) =>
      ['src/services/', 'src/store/', 'src/jobs/', 'src/crypto/', 'src/domain/', 'src/config/'].some((p) => rel.startsWith(p));
    assert.deepEqual(
      violations(inner, (to) => to.startsWith('src/http/') || to.startsWith('src/cli/') || to === 'fastify'),
      [],
    );
  });

  test('config imports nothing of the project but config and domain: services, store, http, cli, jobs, crypto import it', () => {
    assert.deepEqual(violations(CONFIG_AT_THE_BOTTOM.where, CONFIG_AT_THE_BOTTOM.forbidden), []);
  });

  test('the config rule catches config importing a service, the store, the HTTP layer or start-up, and lets services import config', () => {
    const files = [
      fakeFile(
        'src/config/webhooks.ts',
        [
          "import { nextDelay } from '../services/webhooks/delivery-rules.ts';",
          "import type { Store } from '../store/store.ts';",
          "import type { AppOptions } from '../http/types.ts';",
          "import { StartError } from '../start/checks.ts';",
          "import { wholeNumberFrom } from './shapes.ts';",
          "import { isWellFormedRootKey } from '../domain/root-key-format.ts';",
          "import { resolve } from 'node:path';",
        ].join('\n'),
      ),
      fakeFile('src/services/webhooks/attempt.ts', "import type { WebhookSettings } from '../../config/webhooks.ts';"),
    ];
    assert.deepEqual(violations(CONFIG_AT_THE_BOTTOM.where, CONFIG_AT_THE_BOTTOM.forbidden, files), [
      'src/config/webhooks.ts → src/services/webhooks/delivery-rules.ts',
      'src/config/webhooks.ts → src/store/store.ts',
      'src/config/webhooks.ts → src/http/types.ts',
      'src/config/webhooks.ts → src/start/checks.ts',
    ]);
  });

  test('start-up code is imported only by the entry points (main.ts, server.ts, the CLI), and imports no caller layer', () => {
    assert.deepEqual(violations(START_ONLY_FROM_ENTRY_POINTS.where, START_ONLY_FROM_ENTRY_POINTS.forbidden), []);
    assert.deepEqual(violations(START_BELOW_CALLERS.where, START_BELOW_CALLERS.forbidden), []);
    const files = [
      fakeFile('src/services/readiness.ts', "import { checkRedis } from '../start/checks.ts';"),
      fakeFile('src/server.ts', "import { checkRedis } from './start/checks.ts';"),
      fakeFile('src/start/checks.ts', "import { openRedis } from '../store/redis.ts';\nimport { sendError } from '../http/errors.ts';"),
    ];
    assert.deepEqual(violations(START_ONLY_FROM_ENTRY_POINTS.where, START_ONLY_FROM_ENTRY_POINTS.forbidden, files), [
      'src/services/readiness.ts → src/start/checks.ts',
    ]);
    assert.deepEqual(violations(START_BELOW_CALLERS.where, START_BELOW_CALLERS.forbidden, files), [
      'src/start/checks.ts → src/http/errors.ts',
    ]);
  });

  test('OpenTelemetry is loaded only when traces are on: only src/tracing* imports it, and server.ts loads that dynamically', () => {
    const tracing = (rel: string) => rel === 'src/tracing.ts' || rel.startsWith('src/tracing/');
    assert.deepEqual(
      violations(
        (rel) => !tracing(rel),
        (to) => to.startsWith('@opentelemetry/'),
      ),
      [],
    );
    // Elsewhere src/tracing* is named in type imports only (erased), and loaded by server.ts's `await import(…)`.
    const valueImports = FILES.filter((f) => !tracing(f.rel)).flatMap((f) =>
      [...f.text.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?\bfrom\s*'([^']+)'|\bimport\s*\(\s*'([^']+)'/gm)]
        .map((m) => ({ to: target(f.path, m[1] ?? m[2]), dynamic: m[2] !== undefined }))
        .filter(({ to }) => tracing(to))
        .map(({ to, dynamic }) => `${f.rel} → ${to}${dynamic ? ' (dynamic)' : ''}`),
    );
    assert.deepEqual(valueImports, ['src/server.ts → src/tracing.ts (dynamic)']);
  });

  test('a route file imports schemas and services, never another route file', () => {
    assert.deepEqual(
      violations(
        (rel) => /^src\/http\/v\d+\/routes\//.test(rel),
        (to) => /^src\/http\/v\d+\/routes\//.test(to),
      ),
      [],
    );
  });

  test('no index.ts barrels', () => {
    assert.deepEqual(
      FILES.filter((f) => f.rel.endsWith('/index.ts')).map((f) => f.rel),
      [],
    );
  });

  test('no source file over 300 lines (the frozen initial schema migration aside)', () => {
    const long = FILES.filter((f) => !f.rel.startsWith('src/store/schema-migrations/'))
      .map((f) => ({ rel: f.rel, lines: f.text.split('\n').length - (f.text.endsWith('\n') ? 1 : 0) }))
      .filter((f) => f.lines > 300);
    assert.deepEqual(long, []);
  });

  test('no function over 60 lines (the frozen initial schema migration aside)', () => {
    const long: string[] = [];
    for (const f of FILES.filter((f) => !f.rel.startsWith('src/store/schema-migrations/'))) {
      const source = ts.createSourceFile(f.rel, f.text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
          const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
          if (end - start + 1 > 60) long.push(`${f.rel}:${start + 1} (${end - start + 1} lines)`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    assert.deepEqual(long, []);
  });

  test('docs/architecture.md names every source folder, and every path it names exists', () => {
    const section = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    assert.ok(section.length > 100, 'docs/architecture.md describes the architecture');
    const folders = new Set(FILES.map((f) => `${relative(ROOT, dirname(f.path))}/`));
    for (const folder of folders) assert.ok(section.includes(`${folder}`), `docs/architecture.md names ${folder}`);
    for (const [, path] of section.matchAll(/`((?:src|test|bench)\/[^`<>*\s]+)`/g)) {
      assert.ok(existsSync(join(ROOT, path)), `docs/architecture.md names ${path}, which does not exist`);
    }
  });
});
