import type { Command } from './command.ts';
import { WORKSPACE_COMMANDS } from './commands/workspaces.ts';
import { ROOT_KEY_COMMANDS } from './commands/root-keys.ts';
import { AUDIT_COMMANDS } from './commands/audit.ts';
import { MIGRATION_COMMANDS } from './commands/migrations.ts';
import { MAINTENANCE_COMMANDS } from './commands/maintenance.ts';
import { RATELIMIT_COMMANDS } from './commands/ratelimits.ts';
import { DASHBOARD_COMMANDS } from './commands/dashboard.ts';
import { MEMBER_COMMANDS } from './commands/members.ts';
import { BACKUP_COMMANDS } from './commands/backup.ts';
import { EXPORT_COMMANDS } from './commands/export.ts';
import { KEY_COMMANDS } from './commands/keys.ts';
import { WEBHOOK_COMMANDS } from './commands/webhooks.ts';
import { USAGE_COMMANDS } from './commands/usage.ts';

/**
 * Every `keyhold` command, by name, in the order `keyhold --help` lists them. A new group of commands is a
 * file under commands/ exporting a CommandGroup, added here (and to the table of docs/cli.md).
 */
export const COMMANDS: Readonly<Record<string, Command>> = {
  ...WORKSPACE_COMMANDS,
  ...ROOT_KEY_COMMANDS,
  ...KEY_COMMANDS,
  ...AUDIT_COMMANDS,
  ...MIGRATION_COMMANDS,
  ...RATELIMIT_COMMANDS,
  ...WEBHOOK_COMMANDS,
  ...USAGE_COMMANDS,
  ...DASHBOARD_COMMANDS,
  ...MEMBER_COMMANDS,
  ...MAINTENANCE_COMMANDS,
  ...BACKUP_COMMANDS,
  ...EXPORT_COMMANDS,
};
