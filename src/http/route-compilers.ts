import type { Ajv } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import fastJsonStringify, { type Options, type Schema } from 'fast-json-stringify';
import { guardedValidator } from './input-guards.ts';

/**
 * The validators and response serializers of Fastify's routes, each compiled on its route's first request
 * rather than when the server starts: compiling those of every route was the largest part of a start,
 * and most routes are called seldom or never by a given server. The hot operations (the lane's)
 * compile theirs at start, in app.ts. A schema that fails to compile therefore fails its route's first
 * request (a 500) instead of the start; every route's tests compile them.
 */
export function validatorCompiler(ajv: { body: Ajv; query: Ajv }): FastifySchemaCompiler<unknown> {
  // Bodies are validated exactly as sent; querystrings (and params, headers), which are strings, with coercion.
  return ({ schema, httpPart }) => {
    const part = httpPart === 'body' ? 'body' : 'query';
    const validate = onFirstCall(() => guardedValidator(ajv[part], schema as object, part));
    // Fastify passes Ajv's context (the parent of the validated part, so defaults and coercions may replace
    // the root value) only to a validator that has a `schemaEnv`, as Ajv's own have.
    return Object.assign(validate, { schemaEnv: true });
  };
}

/**
 * Fastify's own serializer compiler (fast-json-stringify, as @fastify/fast-json-stringify-compiler makes it:
 * the shared schemas given as external ones, except the one the response schema itself is).
 */
export function serializerFactory(externalSchemas?: unknown, options?: Options) {
  const shared = (externalSchemas ?? {}) as Record<string, unknown>;
  return ({ schema }: { schema?: unknown }) =>
    onFirstCall(() => {
      const id = (schema as { $id?: string }).$id;
      const { [id ?? '']: _itself, ...others } = shared;
      return fastJsonStringify(schema as Schema, { ...options, schema: (id && id in shared ? others : shared) as Options['schema'] });
    });
}

/** `compile()`'s function, compiled when first called. */
function onFirstCall<R>(compile: () => (data: unknown, context?: object) => R): (data: unknown, context?: object) => R {
  let compiled: ((data: unknown, context?: object) => R) | undefined;
  return (data, context) => {
    compiled ??= compile();
    return compiled(data, context);
  };
}
