import { resolve } from 'node:path';
import { loadLeakedKeyAction } from '../../config/leaks.ts';
import { newId } from '../../domain/ids.ts';
import { scanPaths, type KeySighting } from '../../services/leaks/key-scanner.ts';
import { applyLeak } from '../../services/leaks/report-leaks.ts';
import { lookUpTokens, type TokenMatch } from '../../services/leaks/token-lookup.ts';
import type { Store } from '../../store/store.ts';
import type { Actor } from '../../services/caller.ts';
import { type CommandGroup, UsageError } from '../command.ts';

/** One finding as printed: where, the key's visible start, and with --check what it is. Never the key itself. */
interface Finding {
  file: string;
  line: number;
  column: number;
  start: string;
  kind?: TokenMatch['kind'];
  keyId?: string;
  apiId?: string;
  workspaceId?: string;
  state?: TokenMatch['state'] | 'unknown';
  reported?: boolean;
}

/** Keys: finding leaked ones in files. */
export const KEY_COMMANDS: CommandGroup = {
  'keys scan': {
    summary:
      'Finds Keyhold keys (shape and checksum) in files and directories, skipping .git and node_modules unless named; exit 1 when a live key is found (any key without --check).',
    options: {
      check: {
        type: 'boolean',
        description: 'look each key up in the database: its id, API, workspace and state (live, disabled, deleted, unknown)',
      },
      report: {
        type: 'boolean',
        description:
          'apply KEYHOLD_LEAKED_KEY_ACTION to the live keys found (root keys are revoked), audited with you as actor; implies --check',
      },
    },
    operands: 'PATH…',
    prints: '{"findings":[{"file","line","column","start",…}],"files","bytes"}',
    storeless: (values) => !values.check && !values.report,
    async run({ store, actor }, values) {
      const action = values.report ? leakedKeyAction() : undefined;
      const sightings: KeySighting[] = [];
      const stats = await scanPaths(values._ as string[], (s) => sightings.push(s));
      const findings = values.check || values.report ? await checked(store, sightings) : sightings.map(where);
      if (action) {
        await report(store, sightings, findings, action, actor);
      }
      const live = findings.some((f) => (f.state ?? 'live') === 'live');
      const text = [...findings.map(line), `${findings.length} key(s) in ${stats.files} file(s), ${stats.bytes} bytes read`].join('\n');
      return { json: { findings, ...stats }, text, exitCode: live ? 1 : 0 };
    },
  },
};

function leakedKeyAction() {
  try {
    return loadLeakedKeyAction();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

const where = (s: KeySighting): Finding => ({ file: s.file, line: s.line, column: s.column, start: s.start });

async function checked(store: Store, sightings: KeySighting[]): Promise<Finding[]> {
  const matches = await lookUpTokens(
    store.db,
    sightings.map((s) => s.key),
  );
  return sightings.map((s) => {
    const m = matches.get(s.key);
    if (!m) return { ...where(s), state: 'unknown' };
    return { ...where(s), kind: m.kind, keyId: m.id, ...(m.apiId ? { apiId: m.apiId } : {}), workspaceId: m.workspaceId, state: m.state };
  });
}

/** Applies the leaked-key action to each live key found (once per key), naming the file and line it was found at. */
async function report(
  store: Store,
  sightings: KeySighting[],
  findings: Finding[],
  action: ReturnType<typeof loadLeakedKeyAction>,
  actor: Actor,
) {
  const matches = await lookUpTokens(
    store.db,
    sightings.map((s) => s.key),
  );
  const requestId = newId('req');
  for (const [i, s] of sightings.entries()) {
    const m = matches.get(s.key);
    if (m?.state !== 'live') continue;
    const url = `file://${resolve(s.file)}#L${s.line}`;
    await applyLeak(store.db, m, { url, source: 'keyhold keys scan' }, action, actor, requestId);
    findings[i].reported = true;
  }
}

function line(f: Finding): string {
  const what =
    f.state === undefined
      ? ''
      : f.state === 'unknown'
        ? '  unknown'
        : `  ${f.keyId}  ${f.apiId ?? '(root key)'}  ${f.workspaceId}  ${f.state}`;
  return `${f.file}:${f.line}:${f.column}  ${f.start}…${what}${f.reported ? '  reported' : ''}`;
}
