import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createConfig, lintFromString, type NormalizedProblem } from '@redocly/openapi-core';
import { freshStore } from '../helpers/harness.ts';
import { declaredRoutes } from '../helpers/routes.ts';
import { buildApp } from '../../src/app.ts';
import { TAGS } from '../../src/http/docs.ts';
import type { App } from '../../src/http/types.ts';

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: Array<Record<string, string[]>>;
}
interface Document {
  info: { title: string };
  servers?: Array<{ url: string }>;
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
}

const where = (p: NormalizedProblem) => p.location[0]?.pointer ?? '';
const describeProblem = (p: NormalizedProblem) => `${p.severity} ${p.ruleId} at ${where(p)}: ${p.message}`;

// The document is the same on every dialect (it is made of the route schemas), so one SQLite store suffices.
describe('the OpenAPI document, for code generators', () => {
  let app: App;
  let close: () => Promise<void>;
  let text: string;
  let doc: Document;
  before(async () => {
    const fresh = await freshStore('sqlite');
    close = fresh.close;
    app = await buildApp({ store: fresh.store });
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    text = res.body;
    doc = JSON.parse(text);
  });
  after(async () => {
    await app.close();
    await close();
  });

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));

  test("Redocly's recommended ruleset finds no error (warnings are listed)", async (t) => {
    const config = await createConfig({
      extends: ['recommended'],
      // Stricter than recommended: every operation has exactly one tag, declared at the top with a description.
      rules: { 'operation-tag-defined': 'error', 'operation-singular-tag': 'error' },
    });
    const problems = await lintFromString({ source: text, absoluteRef: '/openapi.json', config });
    for (const p of problems.filter((p) => p.severity !== 'error')) t.diagnostic(describeProblem(p));
    assert.deepEqual(problems.filter((p) => p.severity === 'error').map(describeProblem), []);
  });

  test('every operation is named by its operationId (keys.verifyKey, liveness): unique, as in its URL', () => {
    const ids = operations().map(({ path, op }) => {
      const name = path.slice('/v1/'.length);
      assert.equal(op.operationId, path.startsWith('/v2/') ? `v2.${name}` : name, `${path}: operationId`);
      return op.operationId;
    });
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.includes('keys.verifyKey') && ids.includes('liveness'));
  });

  test('every operation is tagged with its group (health outside a group); every tag listed is described and used', () => {
    const declared = new Map(TAGS.map((t) => [t.name, t.description]));
    for (const { path, op } of operations()) {
      const name = path.slice('/v1/'.length);
      const group = name.includes('.') ? name.split('.')[0] : 'health';
      assert.deepEqual(op.tags, [path.startsWith('/v2/') ? `v2 ${group}` : group], `${path}: tags`);
    }
    const used = new Set(operations().flatMap(({ op }) => op.tags ?? []));
    assert.deepEqual(
      doc.tags?.map((t) => t.name),
      TAGS.map((t) => t.name).filter((name) => used.has(name)),
      'the document lists the tags in use, in the order of TAGS',
    );
    for (const tag of doc.tags ?? []) assert.equal(tag.description, declared.get(tag.name));
    for (const group of ['keys', 'apis', 'permissions', 'identities', 'migrations', 'analytics', 'audit', 'health'])
      assert.ok(used.has(group), `no operation is tagged ${group}`);
  });

  test('public routes need no security ([]); every other operation needs the root key', () => {
    const routes = declaredRoutes({ store: {} as never }).filter((r) => r.url.startsWith('/v1/'));
    assert.ok(routes.filter((r) => r.isPublic).length >= 3, 'liveness, readiness and keys.verifyKey are public');
    for (const r of routes) {
      const op = doc.paths[r.url][r.method.toLowerCase()];
      assert.deepEqual(op.security, r.isPublic ? [] : [{ rootKey: [] }], `${r.method} ${r.url}: security`);
    }
  });

  test('it names the product and a server; /docs has the same title', async () => {
    assert.equal(doc.info.title, 'Keyhold API');
    assert.deepEqual(
      doc.servers?.map((s) => s.url),
      ['/'],
    );
    let res = await app.inject({ method: 'GET', url: '/docs' });
    for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 3; hops++) {
      res = await app.inject({ method: 'GET', url: new URL(String(res.headers.location), 'http://localhost/docs').pathname });
    }
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /<title>Keyhold API<\/title>/);
  });
});
