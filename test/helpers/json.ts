/**
 * A parsed JSON body whose shape the test has not declared: any member can be read at any depth
 * (`res.json.identity.externalId`) and handed to assert. To use a value as a string, a number or an
 * array, the test declares the shape it expects where it makes the request: `w.get<{ keys: Key[] }>(…)`.
 */
export interface LooseJson {
  readonly [member: string]: LooseJson;
}

/** `T` with its members typed and any other member loose: the shape a test declares for what it reads. */
export type Loose<T> = T & LooseJson;

/** One problem of a `request/invalid-body` answer. */
export interface ValidationProblem {
  path: string;
  message: string;
}

/** The error envelope every failed request answers with (SPEC §2, src/http/errors.ts). */
export interface ErrorEnvelope {
  meta: { requestId: string };
  error: {
    title: string;
    detail: string;
    status: number;
    type: string;
    code: string;
    /** The members Unkey v1 clients read: `detail`, `type` and `meta.requestId` again. */
    message: string;
    docs: string;
    requestId: string;
    /** Only in `request/invalid-body` answers. */
    errors: ValidationProblem[];
  };
}

/** A response body as a test reads it when it names no shape: the error envelope typed, every other member loose. */
export type Answer = Loose<ErrorEnvelope>;

/** The `--json` line of a failed CLI command. */
export interface CliErrorLine {
  error: {
    kind: string;
    detail: string;
    /** Only for `request/…` kinds. */
    errors: ValidationProblem[];
  };
}

/** A CLI `--json` line as a test reads it when it names no shape: the error typed, every other member loose. */
export type CliAnswer = Loose<CliErrorLine>;
