import { parseArgs } from 'node:util';
import { userInfo } from 'node:os';
import { AppError } from '../domain/errors.ts';
import { ConfigError, loadDatabaseUrl } from '../config.ts';
import { openStore, type Store } from '../store/store.ts';
import type { Actor } from '../services/caller.ts';
import { createWorkspace } from '../services/workspaces.ts';
import { createRootKey, listRootKeys, revokeRootKey } from '../services/root-keys.ts';

const USAGE = `keyhold — operate a Keyhold installation (uses DATABASE_URL, like the server)

  keyhold workspaces create --name N
  keyhold root-keys create --workspace W --permission P [--permission P…] [--name N] [--expires-at MS]
  keyhold root-keys revoke --id RK
  keyhold root-keys list --workspace W
  keyhold db migrate

Every command accepts --json (print exactly one JSON object). Changes reach running servers at once.`;

interface Command {
  options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
  run(store: Store, values: Record<string, unknown>, actor: Actor): Promise<{ json: object; text: string }>;
}

const required = (values: Record<string, unknown>, name: string): string => {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
};

class UsageError extends Error {}

const COMMANDS: Record<string, Command> = {
  'workspaces create': {
    options: { name: { type: 'string' } },
    async run(store, values, actor) {
      const r = await createWorkspace(store.db, required(values, 'name'), actor);
      return { json: r, text: `workspace ${r.workspaceId} created` };
    },
  },
  'root-keys create': {
    options: { workspace: { type: 'string' }, permission: { type: 'string', multiple: true }, name: { type: 'string' }, 'expires-at': { type: 'string' } },
    async run(store, values, actor) {
      const permissions = (values.permission as string[] | undefined) ?? [];
      if (permissions.length === 0) throw new UsageError('at least one --permission is required');
      const expiresRaw = values['expires-at'] as string | undefined;
      const expiresAt = expiresRaw === undefined ? undefined : Number(expiresRaw);
      if (expiresAt !== undefined && !Number.isSafeInteger(expiresAt)) throw new UsageError('--expires-at must be epoch milliseconds');
      const r = await createRootKey(store.db, {
        workspaceId: required(values, 'workspace'), permissions, name: values.name as string | undefined, expiresAt,
      }, actor);
      return { json: r, text: `root key ${r.rootKeyId} created; shown once:\n\n  ${r.rootKey}\n` };
    },
  },
  'root-keys revoke': {
    options: { id: { type: 'string' } },
    async run(store, values, actor) {
      const r = await revokeRootKey(store.db, required(values, 'id'), actor);
      return { json: r, text: `root key ${r.rootKeyId} revoked at ${new Date(r.revokedAt).toISOString()}` };
    },
  },
  'root-keys list': {
    options: { workspace: { type: 'string' } },
    async run(store, values) {
      const rootKeys = await listRootKeys(store.db, required(values, 'workspace'));
      const text = rootKeys.map((k) => `${k.rootKeyId}  ${k.start}…  ${k.revokedAt ? 'revoked' : 'active'}  ${k.name ?? ''}  ${k.permissions.join(' ')}`).join('\n');
      return { json: { rootKeys }, text: text || 'no root keys' };
    },
  },
  'db migrate': {
    options: {},
    async run() {
      // Migrations already ran when the store was opened; report the state.
      return { json: { migrated: true }, text: 'schema is up to date' };
    },
  },
};

/** Runs the CLI; returns the process exit code (0 ok, 1 failed, 2 usage or configuration error). */
export async function run(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s + '\n'), err: (s: string) => void = (s) => process.stderr.write(s + '\n')): Promise<number> {
  const json = argv.includes('--json');
  const words = argv.filter((a) => !a.startsWith('-')).slice(0, 2).join(' ');
  const command = COMMANDS[words];
  const fail = (code: number, kind: string, detail: string) => {
    if (json) out(JSON.stringify({ error: { kind, detail } }));
    else err(`keyhold: ${detail}`);
    return code;
  };
  if (!command || argv.includes('--help') || argv.includes('-h')) {
    if (!command && argv.length > 0 && !argv.includes('--help') && !argv.includes('-h')) return fail(2, 'usage', `unknown command "${words}"\n\n${USAGE}`);
    out(USAGE);
    return 0;
  }
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: argv.slice(2), options: { ...command.options, json: { type: 'boolean' } }, strict: true, allowPositionals: false }));
  } catch (e) {
    return fail(2, 'usage', `${(e as Error).message}\n\n${USAGE}`);
  }
  let store: Store | undefined;
  try {
    store = openStore(loadDatabaseUrl());
    const applied = await store.migrate();
    const result = await command.run(store, values, { type: 'operator', id: `cli:${userInfo().username}` });
    if (words === 'db migrate') result.json = { applied };
    out(json ? JSON.stringify(result.json) : result.text);
    return 0;
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError) return fail(2, 'usage', e.message);
    if (e instanceof AppError) return fail(1, e.kind, e.message);
    return fail(1, 'internal', (e as Error).message);
  } finally {
    await store?.close();
  }
}
