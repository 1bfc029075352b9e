/** What `cadre roles` does, loaded only when it runs (the role files' parser is not light). */
import { type Role, RoleError, isBuiltinSource, loadRoles, shown } from '../../roles/roles';
import { routeTask, suggestRole } from '../../roles/router';

const out = (line: string): void => void process.stdout.write(`${line}\n`);

export async function listRoles(task: string[], opts: { json?: boolean }): Promise<void> {
  let roles: Role[];
  try {
    roles = await loadRoles();
  } catch (err) {
    // Every problem on its own line (the CLI's generic handler would keep only the first).
    if (!(err instanceof RoleError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
    return;
  }
  if (task.length > 0) return printSuggestions(task.join(' '), roles, opts.json);
  if (opts.json) return out(JSON.stringify(roles, null, 2));
  printTable(roles);
}

function printTable(roles: Role[]): void {
  const rows = roles.map((r) => [r.name, String(r.tools.length), clip(r.competencies.join(', '), 50), sourceOf(r)]);
  const header = ['NAME', 'TOOLS', 'COMPETENCIES', 'SOURCE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  for (const row of [header, ...rows]) out(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join('  '));
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function sourceOf(role: Role): string {
  if (isBuiltinSource(role.source)) return 'built-in';
  if (role.overrides === undefined) return shown(role.source);
  return `${shown(role.source)} (overrides ${isBuiltinSource(role.overrides) ? 'built-in' : shown(role.overrides)})`;
}

function printSuggestions(task: string, roles: Role[], json?: boolean): void {
  const ranked = suggestRole(task, roles);
  if (json) return out(JSON.stringify({ task, route: routeTask(task, roles), suggestions: ranked }, null, 2));
  if (ranked.length === 0) return out(`no role's competencies match; a team would route it to ${routeTask(task, roles)}`);
  const width = Math.max(...ranked.map((s) => s.role.length));
  for (const s of ranked) out(`${s.role.padEnd(width)}  score ${s.score}  matched: ${s.matched.join(', ')}`);
}
