import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { REPO_ROOT } from './helpers/repo.ts';
import { headingAnchors, headingSlug, linksOf } from './helpers/markdown.ts';

/** The pages a reader moves between: the README and every page of docs/. */
const PAGES = [
  'README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

/** What is wrong with one relative link of a page, or undefined when it leads to an existing file and heading. */
function brokenLink(page: string, target: string): string | undefined {
  const [pathPart, fragment] = target.split('#', 2) as [string, string | undefined];
  const path = pathPart === '' ? page : relative(REPO_ROOT, resolve(REPO_ROOT, dirname(page), decodeURIComponent(pathPart)));
  if (path.startsWith('..')) return 'leads out of the repository';
  if (!existsSync(join(REPO_ROOT, path))) return `${path} does not exist`;
  if (fragment === undefined) return undefined;
  if (extname(path) !== '.md' || statSync(join(REPO_ROOT, path)).isDirectory()) {
    // GitHub's line anchors are the only fragments a source file has.
    return /^L\d+(-L\d+)?$/.test(fragment) ? undefined : `${path} is not a Markdown page, so it has no heading #${fragment}`;
  }
  return headingAnchors(read(path)).includes(decodeURIComponent(fragment)) ? undefined : `${path} has no heading #${fragment}`;
}

describe('the links of README.md and docs/', () => {
  test('headings get GitHub anchors: lowercase, punctuation dropped but - and _, spaces to -, repeats numbered', () => {
    assert.equal(headingSlug('The `keyhold` CLI'), 'the-keyhold-cli');
    assert.equal(headingSlug('When the store or Redis fails'), 'when-the-store-or-redis-fails');
    assert.equal(headingSlug("API reference: v1's operations, errors (and more)!"), 'api-reference-v1s-operations-errors-and-more');
    assert.equal(headingSlug('KEYHOLD_MASTER_KEYS & [rotation](x.md)'), 'keyhold_master_keys--rotation');
    assert.deepEqual(headingAnchors('# A\n## Notes\n```sh\n# Notes\n```\n### Notes\n## Notes-1\n## Notes'), [
      'a',
      'notes',
      'notes-1',
      'notes-1-1',
      'notes-2',
    ]);
  });

  test('a link inside code is no link, and a link beside code is one', () => {
    const links = linksOf(
      'see [`.env.example`](.env.example) and `[not](a-link)`\n```\n[nor](this)\n```\n![img](docs/a.png "t") [a\nwrapped link](b.md#c)',
    );
    assert.deepEqual(
      links.map((l) => `${l.line} ${l.target}`),
      ['1 .env.example', '5 docs/a.png', '5 b.md#c'],
    );
  });

  test('every relative link leads to an existing file, and its #fragment to a heading there', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of PAGES) {
      for (const { line, target } of linksOf(read(page))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check here
        checked++;
        const problem = brokenLink(page, target);
        if (problem) broken.push(`${page}:${line}: (${target}) ${problem}`);
      }
    }
    assert.ok(checked > 50, `checked only ${checked} links`);
    assert.deepEqual(broken, []);
  });

  test('every page starts with its title and a line saying what it is for', () => {
    for (const page of PAGES.filter((p) => p.startsWith('docs/'))) {
      const [title, blank, purpose] = read(page).split('\n');
      assert.match(title, /^# \S/, `${page} starts with a "# " title`);
      assert.equal(blank, '', `${page}: a blank line after the title`);
      assert.match(purpose, /^(?!```)[^#\s|<>-]/, `${page}: a sentence saying what the page is for follows its title`);
    }
  });

  test("the README's Documentation section links every page of docs/", () => {
    const readme = read('README.md');
    const start = readme.indexOf('\n## Documentation\n');
    assert.ok(start >= 0, 'README.md has a "## Documentation" section');
    const end = readme.indexOf('\n## ', start + 1);
    const linked = new Set(linksOf(readme.slice(start, end < 0 ? undefined : end)).map((l) => l.target.split('#')[0]));
    assert.deepEqual(
      PAGES.filter((p) => p.startsWith('docs/') && !linked.has(p)),
      [],
      'link the page from the README\'s "Documentation" section',
    );
  });
});
