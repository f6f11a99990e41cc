import { BACKUP_PACE_MB_PER_S, BackupRefused, backupDatabase, MASTER_KEYS_NOTICE } from '../../services/backup/backup-database.ts';
import { type CommandGroup, integerOption, requiredOption, UsageError } from '../command.ts';

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Copies of the data: a consistent SQLite backup taken while the server runs. */
export const BACKUP_COMMANDS: CommandGroup = {
  backup: {
    summary:
      'Writes a consistent copy of the SQLite database to a new file while the server runs (PostgreSQL: use pg_dump). The master keys are not copied.',
    options: {
      to: { type: 'string', required: true, value: 'PATH', description: 'the new file to write (an existing file is refused)' },
      pace: {
        type: 'string',
        value: 'MB_PER_S',
        description: `the most MB a second the copy reads and writes, so that the server keeps its share of the machine (${BACKUP_PACE_MB_PER_S.min}..${BACKUP_PACE_MB_PER_S.max}; default ${BACKUP_PACE_MB_PER_S.default}; 0: no limit, one burst)`,
      },
    },
    prints: '{"path","bytes","ms"}',
    async run({ store }, values) {
      const to = requiredOption(values, 'to');
      const { default: fallback, min, max } = BACKUP_PACE_MB_PER_S;
      const pace = integerOption(values, 'pace', fallback, min, max);
      try {
        const result = await backupDatabase(store, to, pace);
        // On stderr, so that --json's one line stays the only line on stdout.
        process.stderr.write(`keyhold: warning: ${MASTER_KEYS_NOTICE}\n`);
        return { json: result, text: `${result.path}  ${megabytes(result.bytes)} (${result.bytes} bytes)  in ${result.ms} ms` };
      } catch (e) {
        if (e instanceof BackupRefused) throw new UsageError(e.message);
        throw e;
      }
    },
  },
};
