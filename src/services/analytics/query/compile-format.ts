import type { Ex } from './compiled.ts';
import type { CompileContext } from './compile-context.ts';
import type { FunctionCompiler } from './compile-dates.ts';
import { invalidQuery } from './parse.ts';

/**
 * formatDateTime's specifiers (ClickHouse's, with %i for minutes and %M for the month's name) as the parts the
 * dialects render (strftime's letters) and the text between them.
 */
const SPECIFIERS: Record<string, string[]> = {
  Y: ['Y'],
  y: ['y'],
  m: ['m'],
  d: ['d'],
  e: ['e'],
  H: ['H'],
  i: ['M'],
  S: ['S'],
  s: ['S'],
  j: ['j'],
  M: ['B'],
  F: ['Y', '-', 'm', '-', 'd'],
  T: ['H', ':', 'M', ':', 'S'],
  R: ['H', ':', 'M'],
  D: ['m', '/', 'd', '/', 'y'],
  '%': ['%'],
};

/** A format string as a list of parts: strftime letters (`{ part }`) and literal texts. */
function formatParts(format: string): Array<{ part: string } | { text: string }> {
  const out: Array<{ part: string } | { text: string }> = [];
  let text = '';
  for (let i = 0; i < format.length; i++) {
    if (format[i] !== '%') {
      text += format[i];
      continue;
    }
    const spec = SPECIFIERS[format[++i] ?? ''];
    if (!spec) throw invalidQuery(`formatDateTime does not support the specifier %${format[i] ?? ''}.`);
    for (const p of spec) {
      if (p.length === 1 && /[A-Za-z]/.test(p)) {
        if (text) out.push({ text });
        text = '';
        out.push({ part: p });
      } else text += p === '%' ? '%' : p;
    }
  }
  if (text) out.push({ text });
  return out;
}

/** A ms time rendered by a format string (a literal), each part by the dialect. */
function render(ctx: CompileContext, ms: string, format: string): string {
  const parts = formatParts(format).map((p) => ('part' in p ? ctx.dialect.timePart(p.part, ms) : ctx.bind(p.text, 'string')));
  return parts.length === 0 ? ctx.bind('', 'string') : ctx.dialect.concat(parts);
}

/** A value as text, as ClickHouse's toString writes it (DateTime `YYYY-MM-DD HH:MM:SS`, Date `YYYY-MM-DD`). */
export function toStringOf(ctx: CompileContext, e: Ex): string {
  const v = ctx.dialect.value(e);
  if (e.type === 'datetime') return render(ctx, v, '%F %T');
  if (e.type === 'date') return render(ctx, v, '%F');
  if (e.type === 'string') return v;
  return ctx.dialect.castText(v);
}

export const formatDateTime: FunctionCompiler = (ctx, _scope, args, compile) => {
  if (args.length !== 2 || args[1].type !== 'string_literal')
    throw invalidQuery("formatDateTime takes a time and a literal format such as '%Y-%m-%d'.");
  const e = compile(args[0]);
  return { sql: render(ctx, ctx.dialect.value(e), args[1].value), type: 'string' };
};
