/** `cadre roles [task...]`: the team roles cadre knows, or which of them fits a task (roles-action.ts). */
import type { Command } from 'commander';

export function registerRolesCommand(program: Command): void {
  program
    .command('roles [task...]')
    .description('list the team roles (built-in, ./roles, CADRE_ROLES_DIR); with a task, rank the roles that fit it')
    .option('--json', 'print JSON')
    .action(async (task: string[], opts: { json?: boolean }) => {
      const { listRoles } = await import('./roles-action');
      await listRoles(task, opts);
    });
}
