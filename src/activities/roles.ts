/** The team roles a run works with, read on the worker (role files are data, not code). */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { type Role, RoleError, loadRoles, userRoleDirs } from '../roles/roles';

/** What a workflow needs of a role: no file paths (they differ between workers). */
export type TeamRole = Omit<Role, 'source' | 'overrides'>;

export async function teamRoles(workspace: string): Promise<TeamRole[]> {
  const planRoles = path.join(workspace, 'roles');
  try {
    const roles = await loadRoles({ dirs: [...userRoleDirs(), ...(existsSync(planRoles) ? [planRoles] : [])] });
    return roles.map(({ source: _source, overrides: _overrides, ...role }) => role);
  } catch (err) {
    // A bad role file needs a person; retrying reads the same file.
    if (err instanceof RoleError) throw permanent(ErrorTypes.RolesInvalid, err.message);
    throw err;
  }
}
