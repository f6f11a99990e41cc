import type { FastifyRequest, RouteOptions } from 'fastify';
import { invalid, type FieldProblem } from '../domain/errors.ts';

/** One failed rule as Ajv reports it. */
export interface AjvIssue {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Rules across the members of a body that a schema cannot state; pure, and safe on a body that failed its schema. */
export type BodyRules = (body: unknown) => FieldProblem[];

/** Every failed schema rule, with the JSON path of the offending member. */
export function validationProblems(issues: AjvIssue[]): FieldProblem[] {
  return issues.map((i) => {
    const path = i.keyword === 'required' ? `${i.instancePath}/${String(i.params.missingProperty)}` : i.instancePath;
    let message = i.keyword === 'not' ? 'is not allowed here' : (i.message ?? 'is invalid');
    if (i.keyword === 'enum' || i.keyword === 'const') message += `: ${JSON.stringify(i.params.allowedValues ?? i.params.allowedValue)}`;
    return { path: path || '/', message };
  });
}

/** Schema problems plus rule problems; a rule problem at a path the schema already reported adds nothing. */
export function mergeProblems(schema: FieldProblem[], rules: FieldProblem[]): FieldProblem[] {
  const seen = new Set(schema.map((p) => p.path));
  return [...schema, ...rules.filter((p) => !seen.has(p.path))];
}

/**
 * The one validation path of a route with `config.bodyRules` (installed by an onRoute hook): when its body
 * fails the schema, the 400 lists the schema's problems and the rules' together, so a caller sees every
 * problem at once. When the schema passes, the service checks the same rules itself (it is also called by
 * the CLI and other versions of the route), so they are stated once, in the service.
 */
export function installBodyRules(route: RouteOptions): void {
  const rules = route.config?.bodyRules;
  if (!rules) return;
  route.attachValidation = true;
  const check = async (request: FastifyRequest) => {
    const err = request.validationError as (Error & { validation?: AjvIssue[] }) | undefined;
    if (!err) return;
    if (!err.validation) throw err;
    const schemaProblems = validationProblems(err.validation);
    // An array over its maxItems (found before its items: http/input-guards.ts) is refused as it is: the
    // rules would otherwise walk every item of a body that is never going to be accepted.
    if (err.validation.some((issue) => issue.keyword === 'maxItems')) throw invalid(schemaProblems);
    throw invalid(mergeProblems(schemaProblems, rules(request.body)));
  };
  route.preHandler = [check, ...([] as NonNullable<RouteOptions['preHandler']>[]).concat(route.preHandler ?? [])].flat();
}
