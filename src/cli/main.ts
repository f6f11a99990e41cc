import { parseArgs } from 'node:util';
import { userInfo } from 'node:os';
import { AppError } from '../domain/errors.ts';
import { ConfigError, loadDatabaseUrl, loadVaultConfig, masterKeysFromConfig } from '../config.ts';
import { createVault, VaultError } from '../crypto/vault.ts';
import { openStore, type Store } from '../store/store.ts';
import type { Actor } from '../services/caller.ts';
import { createWorkspace } from '../services/workspaces/workspaces.ts';
import { createRootKey, listRootKeys, revokeRootKey } from '../services/workspaces/root-keys.ts';
import { listAuditLogs } from '../services/audit/list-audit-logs.ts';
import { requireWorkspace } from '../services/lookups.ts';
import { createMigration, getMigration } from '../services/migrations/migration-records.ts';
import { WORKER_TASKS } from '../services/migrations/migration-import-task.ts';
import { runWorkerUntilSignal } from '../jobs/worker.ts';

const USAGE = `keyhold — operate a Keyhold installation (uses DATABASE_URL, like the server)

  keyhold workspaces create --name N
  keyhold root-keys create --workspace W --permission P [--permission P…] [--name N] [--expires-at MS]
  keyhold root-keys revoke --id RK
  keyhold root-keys list --workspace W
  keyhold audit list --workspace W [--since MS] [--event E] [--target ID] [--limit N]
  keyhold migrations create --workspace W [--name N]
  keyhold migrations status --id M
  keyhold worker [--concurrency N] [--visibility-timeout MS]
  keyhold db migrate
  keyhold vault rotate

Every command accepts --json (print exactly one JSON object). Changes reach running servers at once.`;

interface Command {
  options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
  /** Options that must be given; checked before the store is opened, so a usage error touches nothing. */
  required?: string[];
  run(store: Store, values: Record<string, unknown>, actor: Actor, applied: string[]): Promise<{ json: object; text: string }>;
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
    required: ['name'],
    async run(store, values, actor) {
      const r = await createWorkspace(store.db, required(values, 'name'), actor);
      return { json: r, text: `workspace ${r.workspaceId} created` };
    },
  },
  'root-keys create': {
    options: {
      workspace: { type: 'string' },
      permission: { type: 'string', multiple: true },
      name: { type: 'string' },
      'expires-at': { type: 'string' },
    },
    required: ['workspace', 'permission'],
    async run(store, values, actor) {
      const permissions = values.permission as string[];
      const expiresRaw = values['expires-at'] as string | undefined;
      const expiresAt = expiresRaw === undefined ? undefined : Number(expiresRaw);
      if (expiresAt !== undefined && (!/^\d+$/.test(expiresRaw!) || !Number.isSafeInteger(expiresAt)))
        throw new UsageError('--expires-at must be epoch milliseconds');
      const r = await createRootKey(
        store.db,
        {
          workspaceId: required(values, 'workspace'),
          permissions,
          name: values.name as string | undefined,
          expiresAt,
        },
        actor,
      );
      return { json: r, text: `root key ${r.rootKeyId} created; shown once:\n\n  ${r.rootKey}\n` };
    },
  },
  'root-keys revoke': {
    options: { id: { type: 'string' } },
    required: ['id'],
    async run(store, values, actor) {
      const r = await revokeRootKey(store.db, required(values, 'id'), actor);
      return { json: r, text: `root key ${r.rootKeyId} revoked at ${new Date(r.revokedAt).toISOString()}` };
    },
  },
  'root-keys list': {
    options: { workspace: { type: 'string' } },
    required: ['workspace'],
    async run(store, values) {
      const rootKeys = await listRootKeys(store.db, required(values, 'workspace'));
      const text = rootKeys
        .map((k) => `${k.rootKeyId}  ${k.start}…  ${k.revokedAt ? 'revoked' : 'active'}  ${k.name ?? ''}  ${k.permissions.join(' ')}`)
        .join('\n');
      return { json: { rootKeys }, text: text || 'no root keys' };
    },
  },
  'audit list': {
    options: {
      workspace: { type: 'string' },
      since: { type: 'string' },
      event: { type: 'string' },
      target: { type: 'string' },
      limit: { type: 'string' },
    },
    required: ['workspace'],
    async run(store, values) {
      const workspaceId = required(values, 'workspace');
      const since = values.since === undefined ? undefined : Number(values.since);
      if (since !== undefined && !Number.isSafeInteger(since)) throw new UsageError('--since must be epoch milliseconds');
      const limit = values.limit === undefined ? 100 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer 1..1000');
      await requireWorkspace(store.db, workspaceId);
      const { logs } = await listAuditLogs(store.db, workspaceId, {
        limit,
        since,
        event: values.event as string | undefined,
        targetId: values.target as string | undefined,
      });
      const text = logs
        .map((l) => `${new Date(l.time).toISOString()}  ${l.event}  ${l.target.type}:${l.target.id}  by ${l.actor.type}:${l.actor.id}`)
        .join('\n');
      return { json: { logs }, text: text || 'no audit records' };
    },
  },
  'migrations create': {
    options: { workspace: { type: 'string' }, name: { type: 'string' } },
    required: ['workspace'],
    async run(store, values, actor) {
      const r = await createMigration(store.db, required(values, 'workspace'), values.name as string | undefined, actor);
      return { json: r, text: `migration ${r.migrationId} created; give its id to the workspace for migrations.enqueueKeys` };
    },
  },
  'migrations status': {
    options: { id: { type: 'string' } },
    required: ['id'],
    async run(store, values) {
      const m = await getMigration(store.db, null, required(values, 'id'));
      const c = m.counts;
      const failures = m.failures.map((f) => `\n  #${f.index} ${f.hash}: ${f.reason}`).join('');
      return {
        json: m,
        text: `${m.migrationId} (${m.workspaceId}): ${m.status}; ${c.enqueued} enqueued, ${c.pending} pending, ${c.migrated} migrated, ${c.failed} failed${failures}`,
      };
    },
  },
  worker: {
    options: { concurrency: { type: 'string' }, 'visibility-timeout': { type: 'string' } },
    async run(store, values) {
      const int = (name: string, fallback: number, min: number, max: number): number => {
        const raw = values[name];
        if (raw === undefined) return fallback;
        const n = Number(raw);
        if (!/^\d+$/.test(String(raw)) || n < min || n > max) throw new UsageError(`--${name} must be an integer ${min}..${max}`);
        return n;
      };
      const stats = await runWorkerUntilSignal(store, WORKER_TASKS, {
        concurrency: int('concurrency', 4, 1, 64),
        visibilityTimeoutMs: int('visibility-timeout', 30_000, 1000, 86_400_000),
      });
      return {
        json: stats,
        text: `worker ${stats.workerId} stopped: ${stats.completed} job(s) completed, ${stats.retried} retried, ${stats.failed} failed`,
      };
    },
  },
  'db migrate': {
    options: {},
    async run(_store, _values, _actor, applied) {
      // Migrations run whenever the CLI opens the store; this command only reports what they did.
      return { json: { applied }, text: applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date' };
    },
  },
  'vault rotate': {
    options: {},
    async run(store) {
      // The master keys come from where the server takes them (KEYHOLD_MASTER_KEYS, else the SQLite data directory's file).
      const masterKeys = masterKeysFromConfig(loadVaultConfig(), (msg) => process.stderr.write(`keyhold: ${msg}\n`));
      if (!masterKeys) throw new ConfigError('KEYHOLD_MASTER_KEYS must be set to rotate the vault of a PostgreSQL database');
      try {
        const { rewrapped } = await createVault(masterKeys).rotate(store.db);
        return { json: { rewrapped }, text: `${rewrapped} data key(s) re-wrapped under master key "${masterKeys[0].id}"` };
      } catch (e) {
        if (e instanceof VaultError) throw new AppError('state/precondition-failed', e.message);
        throw e;
      }
    },
  },
};

const GLOBAL_FLAGS = new Set(['--json', '--help', '-h']);

/** Runs the CLI; returns the process exit code (0 ok, 1 failed, 2 usage or configuration error). */
export async function run(
  argv: string[],
  out: (s: string) => void = (s) => process.stdout.write(`${s}\n`),
  err: (s: string) => void = (s) => process.stderr.write(`${s}\n`),
): Promise<number> {
  const json = argv.includes('--json');
  const help = argv.includes('--help') || argv.includes('-h');
  // The command is the first two words; --json and --help may appear anywhere.
  const rest = argv.filter((a) => !GLOBAL_FLAGS.has(a));
  const wordCount = rest.slice(0, 2).findIndex((a) => a.startsWith('-'));
  const commandWords = rest.slice(0, wordCount === -1 ? 2 : wordCount);
  const words = commandWords.join(' ');
  const command = Object.hasOwn(COMMANDS, words) ? COMMANDS[words] : undefined;
  const fail = (code: number, kind: string, detail: string, errors?: unknown[]) => {
    if (json) out(JSON.stringify({ error: { kind, detail, ...(errors ? { errors } : {}) } }));
    else err(`keyhold: ${detail}`);
    return code;
  };
  if (help || argv.length === 0) {
    out(USAGE);
    return 0;
  }
  if (!command) return fail(2, 'usage', `unknown command "${words}"\n\n${USAGE}`);
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: rest.slice(commandWords.length), options: command.options, strict: true, allowPositionals: false }));
    for (const name of command.required ?? []) {
      const v = values[name];
      if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) throw new UsageError(`--${name} is required`);
    }
  } catch (e) {
    return fail(2, 'usage', `${(e as Error).message}\n\n${USAGE}`);
  }
  let store: Store | undefined;
  try {
    store = openStore(loadDatabaseUrl());
    const applied = await store.migrate();
    const result = await command.run(store, values, { type: 'operator', id: `cli:${userInfo().username}` }, applied);
    out(json ? JSON.stringify(result.json) : result.text);
    return 0;
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError) return fail(2, 'usage', e.message);
    // Input the operator must correct (an unknown permission, …) is a usage error too.
    if (e instanceof AppError) return fail(e.kind.startsWith('request/') ? 2 : 1, e.kind, e.message, e.errors);
    return fail(1, 'internal', (e as Error).message);
  } finally {
    await store?.close();
  }
}
