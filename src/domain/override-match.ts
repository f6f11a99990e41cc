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

/** A `*` pattern split at its stars, for matching many identifiers. */
export const globParts = (pattern: string): string[] => pattern.split('*');

/**
 * Whether `text` matches the pattern split by `globParts`, anchored at both ends: the first part must start
 * it, the last end it, and the parts between occur in order in what is left (the leftmost occurrence of each
 * is always the best choice). Native `startsWith`/`indexOf` do the comparing: a few microseconds at most for
 * 255-character patterns and identifiers, whatever their stars.
 */
export function globPartsMatch(parts: readonly string[], text: string): boolean {
  if (parts.length === 1) return parts[0] === text;
  const first = parts[0];
  const last = parts[parts.length - 1];
  const end = text.length - last.length;
  if (end < first.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = text.indexOf(parts[i], at);
    if (found === -1 || found + parts[i].length > end) return false;
    at = found + parts[i].length;
  }
  return true;
}

/** Whether `text` matches the `*` pattern, anchored at both ends. */
export const globMatches = (pattern: string, text: string): boolean => globPartsMatch(globParts(pattern), text);

/** A namespace's overrides, indexed for matching. */
export class OverrideSet {
  readonly #exact = new Map<string, OverrideRule>();
  /** Patterns in the order they win, each with its parts. */
  readonly #patterns: Array<{ rule: OverrideRule; parts: string[] }>;

  constructor(rules: readonly OverrideRule[]) {
    const patterns: OverrideRule[] = [];
    for (const r of rules) {
      if (isPattern(r.identifier)) patterns.push(r);
      else this.#exact.set(r.identifier, r);
    }
    this.#patterns = patterns
      .sort((a, b) => literalCount(b.identifier) - literalCount(a.identifier) || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
      .map((rule) => ({ rule, parts: globParts(rule.identifier) }));
  }

  get size(): number {
    return this.#exact.size + this.#patterns.length;
  }

  /** The override that applies to `identifier`, if any. */
  match(identifier: string): OverrideRule | undefined {
    const exact = this.#exact.get(identifier);
    if (exact) return exact;
    for (const p of this.#patterns) if (globPartsMatch(p.parts, identifier)) return p.rule;
    return undefined;
  }
}
