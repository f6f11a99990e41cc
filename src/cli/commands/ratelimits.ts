import { BOUNDS, MAX_RATELIMIT_NAME } from '../../domain/bounds.ts';
import { newId } from '../../domain/ids.ts';
import { operatorCaller, type Actor, type Caller } from '../../services/caller.ts';
import { requireWorkspace } from '../../services/lookups.ts';
import { deleteNamespace, listNamespaces, type NamespaceRef } from '../../services/ratelimits/namespaces.ts';
import { deleteOverride, listOverrides, setOverride } from '../../services/ratelimits/overrides.ts';
import type { Store } from '../../store/store.ts';
import { type CommandGroup, type OptionSpec, UsageError, integerOption, requiredOption, stringOption } from '../command.ts';

const WORKSPACE: OptionSpec = { type: 'string', required: true, value: 'W', description: 'the workspace (ws_…)' };
const NAMESPACE: Record<string, OptionSpec> = {
  namespace: { type: 'string', value: 'N', description: 'the namespace, by name' },
  'namespace-id': { type: 'string', value: 'ID', description: 'the namespace, by id (rlns_…), instead of --namespace' },
};
const IDENTIFIER: OptionSpec = {
  type: 'string',
  required: true,
  value: 'I',
  description: 'the identifier, or a pattern where * matches any characters',
};
const PAGE: Record<string, OptionSpec> = {
  limit: { type: 'string', value: 'N', description: 'at most N items (1..100, default 100)' },
  cursor: { type: 'string', value: 'C', description: 'the cursor printed with the previous page' },
};

/** The operator acting in an existing workspace, as the services' caller. */
async function inWorkspace(store: Store, actor: Actor, values: Record<string, unknown>): Promise<Caller> {
  const workspaceId = requiredOption(values, 'workspace');
  await requireWorkspace(store.db, workspaceId);
  return operatorCaller(workspaceId, actor, newId('req'));
}

function namespaceRef(values: Record<string, unknown>): NamespaceRef {
  const ref = { namespaceId: stringOption(values, 'namespace-id'), namespaceName: stringOption(values, 'namespace') };
  if (ref.namespaceId === undefined && ref.namespaceName === undefined) throw new UsageError('--namespace or --namespace-id is required');
  return ref;
}

function identifier(values: Record<string, unknown>): string {
  const v = requiredOption(values, 'identifier');
  // Counted in code points, as the API's schema counts string length.
  if ([...v].length > MAX_RATELIMIT_NAME) throw new UsageError(`--identifier must be at most ${MAX_RATELIMIT_NAME} characters`);
  return v;
}

const page = (values: Record<string, unknown>) => ({
  limit: integerOption(values, 'limit', 100, 1, 100),
  cursor: stringOption(values, 'cursor'),
});
const more = (cursor: string | undefined) => (cursor ? `\nmore: --cursor ${cursor}` : '');

/** `keyhold ratelimits …`: a workspace's rate-limit namespaces and overrides (docs/rate-limiting.md). */
export const RATELIMIT_COMMANDS: CommandGroup = {
  'ratelimits namespaces': {
    summary: "Lists a workspace's rate-limit namespaces, by id.",
    options: { workspace: WORKSPACE, ...PAGE },
    prints: '{"namespaces":[{"id","name","createdAt"}…],"total","cursor"?}',
    async run({ store, actor }, values) {
      const r = await listNamespaces(store.db, await inWorkspace(store, actor, values), page(values));
      const lines = r.namespaces.map((n) => `${n.id}  ${n.name}  created ${new Date(n.createdAt).toISOString()}`);
      return { json: r, text: `${lines.join('\n') || 'no namespaces'}${more(r.cursor)}` };
    },
  },
  'ratelimits delete-namespace': {
    summary: 'Deletes a namespace and its overrides; one later made with the same name starts from zero.',
    options: { workspace: WORKSPACE, ...NAMESPACE },
    prints: '{}',
    async run({ store, actor }, values) {
      const ref = namespaceRef(values);
      await deleteNamespace(store.db, await inWorkspace(store, actor, values), ref);
      return { json: {}, text: `namespace ${ref.namespaceId ?? ref.namespaceName} deleted` };
    },
  },
  'ratelimits overrides': {
    summary: "Lists a namespace's overrides, by id.",
    options: { workspace: WORKSPACE, ...NAMESPACE, ...PAGE },
    prints: '{"overrides":[{"id","identifier","limit","duration","async"?}…],"total","cursor"?}',
    async run({ store, actor }, values) {
      const ref = namespaceRef(values);
      const r = await listOverrides(store.db, await inWorkspace(store, actor, values), { ...ref, ...page(values) });
      const lines = r.overrides.map(
        (o) => `${o.id}  ${o.identifier}  ${o.limit} per ${o.duration} ms${o.async === undefined ? '' : o.async ? ' async' : ' sync'}`,
      );
      return { json: r, text: `${lines.join('\n') || 'no overrides'}${more(r.cursor)}` };
    },
  },
  'ratelimits set-override': {
    summary: 'Creates or replaces the override of an identifier (or pattern) in a namespace.',
    options: {
      workspace: WORKSPACE,
      ...NAMESPACE,
      identifier: IDENTIFIER,
      limit: { type: 'string', required: true, value: 'L', description: `requests (total cost) per window, 0..${BOUNDS.limit.maximum}` },
      duration: {
        type: 'string',
        required: true,
        value: 'MS',
        description: `the window in ms, ${BOUNDS.duration.minimum}..${BOUNDS.duration.maximum}`,
      },
      async: { type: 'boolean', description: 'decide on each server, synced in the background (default: as each request says)' },
      sync: { type: 'boolean', description: 'decide exactly across servers (default: as each request says)' },
    },
    prints: '{"overrideId"}',
    async run({ store, actor }, values) {
      if (values.async && values.sync) throw new UsageError('--async and --sync exclude each other');
      const input = {
        ...namespaceRef(values),
        identifier: identifier(values),
        limit: integerOption(values, 'limit', 0, BOUNDS.limit.minimum, BOUNDS.limit.maximum),
        duration: integerOption(values, 'duration', 0, BOUNDS.duration.minimum, BOUNDS.duration.maximum),
        async: values.async ? true : values.sync ? false : undefined,
      };
      const r = await setOverride(store.db, await inWorkspace(store, actor, values), input);
      return { json: r, text: `override ${r.overrideId} set: ${input.identifier} ${input.limit} per ${input.duration} ms` };
    },
  },
  'ratelimits delete-override': {
    summary: 'Deletes the override of exactly this identifier (or pattern).',
    options: { workspace: WORKSPACE, ...NAMESPACE, identifier: IDENTIFIER },
    prints: '{}',
    async run({ store, actor }, values) {
      const input = { ...namespaceRef(values), identifier: identifier(values) };
      await deleteOverride(store.db, await inWorkspace(store, actor, values), input);
      return { json: {}, text: `override of ${input.identifier} deleted` };
    },
  },
};
