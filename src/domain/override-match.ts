/**
 * Which rate-limit override applies to an identifier. An override's identifier is exact, or a pattern in
 * which `*` stands for any sequence of characters (possibly empty) and everything else is literal. An exact
 * override wins over every pattern; among matching patterns the one with the most literal (non-`*`)
 * characters wins, and of those the oldest (then the smallest id, for a total order).
 */

export interface OverrideRule {
  id: string;
  identifier: string;
  limit: number;
  duration: number;
  /** null: as the request says. */
  async: boolean | null;
  createdAt: number;
}

export const isPattern = (identifier: string): boolean => identifier.includes('*');

const literalCount = (pattern: string): number => pattern.length - pattern.split('*').length + 1;

/**
 * Whether `text` matches the `*` pattern, anchored at both ends. Linear in practice and O(pattern × text)
 * at worst (backtracks only to the last `*`), so no pattern an API caller writes can make it slow.
 */
export function globMatches(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.length && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (star !== -1) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/** A namespace's overrides, indexed for matching. */
export class OverrideSet {
  readonly #exact = new Map<string, OverrideRule>();
  /** Patterns in the order they win. */
  readonly #patterns: OverrideRule[];

  constructor(rules: readonly OverrideRule[]) {
    const patterns: OverrideRule[] = [];
    for (const r of rules) {
      if (isPattern(r.identifier)) patterns.push(r);
      else this.#exact.set(r.identifier, r);
    }
    this.#patterns = patterns.sort(
      (a, b) => literalCount(b.identifier) - literalCount(a.identifier) || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1),
    );
  }

  get size(): number {
    return this.#exact.size + this.#patterns.length;
  }

  /** The override that applies to `identifier`, if any. */
  match(identifier: string): OverrideRule | undefined {
    const exact = this.#exact.get(identifier);
    if (exact) return exact;
    for (const p of this.#patterns) if (globMatches(p.identifier, identifier)) return p;
    return undefined;
  }
}
