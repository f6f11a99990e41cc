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

const FILES = sourceFiles(SRC).map((path) => ({ path, rel: relative(ROOT, path), text: readFileSync(path, 'utf8') }));

/** Every module specifier a file imports (static, type-only and dynamic). */
const importsOf = (text: string): string[] => [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'([^']+)'/gm)].map((m) => m[1]);

/** Where an import leads: `src/…` for a relative import, else the package name. */
const target = (file: string, spec: string): string => (spec.startsWith('.') ? relative(ROOT, resolve(dirname(file), spec)) : spec);

const violations = (where: (rel: string) => boolean, forbidden: (to: string) => boolean): string[] =>
  FILES.filter((f) => where(f.rel)).flatMap((f) =>
    importsOf(f.text)
      .map((spec) => target(f.path, spec))
      .filter(forbidden)
      .map((to) => `${f.rel} → ${to}`),
  );

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

  test('services, store, jobs and crypto never import the HTTP layer or the CLI', () => {
    const inner = (rel: string) =>
      ['src/services/', 'src/store/', 'src/jobs/', 'src/crypto/', 'src/domain/'].some((p) => rel.startsWith(p));
    assert.deepEqual(
      violations(inner, (to) => to.startsWith('src/http/') || to.startsWith('src/cli/') || to === 'fastify'),
      [],
    );
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
