import { publicUrlFrom, publicUrlSet } from '../../config/server.ts';
import { ConfigError } from '../../config/shapes.ts';
import { recordedServerAddress } from '../../services/dashboard/server-address.ts';
import { createSignInLink } from '../../services/dashboard/sessions.ts';
import { type CommandGroup, stringOption, UsageError } from '../command.ts';

export const DASHBOARD_COMMANDS: CommandGroup = {
  'dashboard link': {
    summary:
      'Prints a one-time dashboard sign-in link, valid for 10 minutes, for one workspace or (--operator) every workspace; based on KEYHOLD_PUBLIC_URL, else the address the running server recorded at start.',
    options: {
      workspace: { type: 'string', value: 'W', description: 'the workspace the session acts in' },
      operator: { type: 'boolean', description: 'sign in as the operator: every workspace, and creating workspaces' },
    },
    prints: '{"url","expiresAt"}',
    async run({ store, actor }, values) {
      const workspaceId = stringOption(values, 'workspace');
      const operator = values.operator === true;
      if ((workspaceId === undefined) === !operator) throw new UsageError('give exactly one of --workspace W and --operator');
      const problems: string[] = [];
      const given = publicUrlFrom(process.env, problems);
      if (problems.length) throw new ConfigError(problems.join('\n'));
      const base = publicUrlSet(process.env) ? given : ((await recordedServerAddress(store.db)) ?? given);
      const { token, expiresAt } = await createSignInLink(
        store.db,
        workspaceId === undefined ? { operator: true } : { workspaceId },
        actor,
      );
      const url = `${base}/dashboard/sign-in?token=${token}`;
      return {
        json: { url, expiresAt },
        text: `Open this link once, within 10 minutes (until ${new Date(expiresAt).toISOString()}), to sign in:\n\n  ${url}\n`,
      };
    },
  },
};
