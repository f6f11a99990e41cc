/**
 * Just enough of Markdown, as GitHub renders it, to check the documentation's relative links: the lines outside
 * fenced code blocks, the links on them, and the anchors GitHub gives headings.
 */

/** The page's lines, with every line of a fenced code block (and its fences) blanked: code holds no links or headings. */
export function proseLines(text: string): string[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined && opening) {
      fence = opening[1];
      return '';
    }
    if (fence !== undefined) {
      if (line.trim().startsWith(fence[0].repeat(fence.length)) && line.trim().replace(/[`~]/g, '') === '') fence = undefined;
      return '';
    }
    return line;
  });
}

/** A line without its inline code spans: `[a](b)` inside backticks is code, not a link. */
const withoutCodeSpans = (line: string): string => line.replace(/(`+)[\s\S]*?\1/g, 'code');

export interface Link {
  line: number;
  target: string;
}

/** Every inline link and image of the page (`[text](target)`, `![alt](target "title")`, the text may wrap), with its line. */
export function linksOf(text: string): Link[] {
  const prose = proseLines(text).map(withoutCodeSpans).join('\n');
  return [...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => ({
    line: prose.slice(0, m.index).split('\n').length,
    target: m[1],
  }));
}

/**
 * The anchor GitHub gives a heading: its text as rendered (a link's text; code, emphasis and every other character
 * that is not a letter, a digit, `-`, `_` or a space dropped), lowercased, each space made a `-`.
 */
export function headingSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\-_ ]/gu, '')
    .replace(/ /g, '-');
}

/**
 * The anchors of a page's headings, in order. A repeated anchor gets `-1`, `-2`, … (GitHub's slugger: the count is
 * kept per anchor, and an anchor already taken, by an earlier heading or an earlier suffix, is never given twice).
 */
export function headingAnchors(text: string): string[] {
  const taken = new Map<string, number>();
  const anchors: string[] = [];
  for (const line of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (!heading) continue;
    const base = headingSlug(heading[1]);
    let anchor = base;
    while (taken.has(anchor)) {
      const n = (taken.get(base) ?? 0) + 1;
      taken.set(base, n);
      anchor = `${base}-${n}`;
    }
    taken.set(anchor, 0);
    anchors.push(anchor);
  }
  return anchors;
}
