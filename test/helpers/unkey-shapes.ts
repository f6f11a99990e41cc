import ts from 'typescript';
import { repoUrl } from './repo.ts';
import { fileURLToPath } from 'node:url';

/**
 * Unkey v1's answer shapes, as `@unkey/api` itself declares them: its bundled OpenAPI types
 * (`node_modules/@unkey/api/dist/index.d.ts`, interface `paths`), read with the TypeScript checker and applied to a
 * JSON value. So a compatibility test checks an answer against what the SDK's users compile against, not against a
 * copy of it that could drift.
 */

const DTS = fileURLToPath(repoUrl('node_modules/@unkey/api/dist/index.d.ts'));

let loaded: { checker: ts.TypeChecker; paths: ts.Type } | undefined;

function sdkTypes(): { checker: ts.TypeChecker; paths: ts.Type } {
  if (loaded) return loaded;
  const program = ts.createProgram([DTS], { noEmit: true, strict: true, skipLibCheck: true, types: [], lib: ['lib.es2024.d.ts'] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(DTS);
  if (!source) throw new Error(`cannot read ${DTS}`);
  const decl = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'paths');
  if (!decl) throw new Error(`${DTS} declares no interface paths`);
  loaded = { checker, paths: checker.getTypeAtLocation(decl) };
  return loaded;
}

/** The type at `path` of member names, from `paths` on. */
function typeAt(names: string[]): ts.Type {
  const { checker, paths } = sdkTypes();
  let type = paths;
  for (const name of names) {
    const prop = checker.getPropertyOfType(checker.getNonNullableType(type), name);
    if (!prop) throw new Error(`@unkey/api declares no ${names.join(' → ')} (at ${name})`);
    type = checker.getTypeOfSymbol(prop);
  }
  return type;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The problems of `value` as a `type`, each naming its JSON path; [] when it conforms. Extra members are allowed. */
function problems(type: ts.Type, value: unknown, at: string): string[] {
  const { checker } = sdkTypes();
  const f = type.flags;
  const got = () => `${at}: expected ${checker.typeToString(type)}, got ${JSON.stringify(value)?.slice(0, 120)}`;
  if (f & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return [];
  if (f & ts.TypeFlags.Never) return [got()];
  if (type.isUnion()) {
    const each = type.types.map((t) => problems(t, value, at));
    return each.some((p) => p.length === 0) ? [] : each.length > 3 || each.every((p) => p.length <= 1) ? [got()] : each.flat();
  }
  if (f & ts.TypeFlags.StringLiteral) return value === (type as ts.StringLiteralType).value ? [] : [got()];
  if (f & ts.TypeFlags.BooleanLiteral) return value === (checker.typeToString(type) === 'true') ? [] : [got()];
  if (f & ts.TypeFlags.String) return typeof value === 'string' ? [] : [got()];
  if (f & ts.TypeFlags.Number) return typeof value === 'number' && Number.isFinite(value) ? [] : [got()];
  if (f & ts.TypeFlags.Boolean) return typeof value === 'boolean' ? [] : [got()];
  if (f & ts.TypeFlags.Null) return value === null ? [] : [got()];
  if (checker.isArrayType(type)) {
    if (!Array.isArray(value)) return [got()];
    const item = checker.getTypeArguments(type as ts.TypeReference)[0];
    return value.flatMap((v, i) => problems(item, v, `${at}/${i}`));
  }
  if (f & ts.TypeFlags.Object) return objectProblems(type, value, at, got);
  return [`${at}: cannot check type ${checker.typeToString(type)}`];
}

function objectProblems(type: ts.Type, value: unknown, at: string, got: () => string): string[] {
  const { checker } = sdkTypes();
  if (!isPlainObject(value)) return [got()];
  const out: string[] = [];
  const declared = checker.getPropertiesOfType(type);
  for (const prop of declared) {
    const optional = (prop.flags & ts.SymbolFlags.Optional) !== 0;
    const member = value[prop.name];
    if (member === undefined) {
      if (!optional) out.push(`${at}/${prop.name}: required by @unkey/api, missing`);
      continue;
    }
    const declaredType = checker.getTypeOfSymbol(prop);
    if (member !== null) out.push(...problems(checker.getNonNullableType(declaredType), member, `${at}/${prop.name}`));
    else if (!(declaredType.isUnion() ? declaredType.types : [declaredType]).some((t) => t.flags & ts.TypeFlags.Null))
      out.push(`${at}/${prop.name}: null, but @unkey/api declares ${checker.typeToString(declaredType)}`);
  }
  const index = checker.getIndexInfosOfType(type)[0];
  if (index && declared.length === 0) {
    for (const [k, v] of Object.entries(value)) out.push(...problems(index.type, v, `${at}/${k}`));
  }
  return out;
}

/**
 * The problems of `body` as the 200 (202 for enqueueKeys) answer of `GET|POST /v1/<operation>` that @unkey/api
 * declares. An object with `[k]: never` (`Record<string, never>`, v1's `{}`) accepts members: a v1 client reads
 * none of them.
 */
export function v1ShapeProblems(operation: string, method: 'get' | 'post', body: unknown, status: '200' | '202' = '200'): string[] {
  const type = typeAt([`/v1/${operation}`, method, 'responses', status, 'content', 'application/json']);
  const { checker } = sdkTypes();
  if (checker.typeToString(type) === 'Record<string, never>') return isPlainObject(body) ? [] : ['expected an object'];
  return problems(type, body, '');
}
