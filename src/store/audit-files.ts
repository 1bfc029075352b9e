/**
 * Where audit logs live: one JSONL file per plan run (its agents' events included), under
 * CADRE_AUDIT_DIR or ~/.cadre/audit, so the worker writes and `cadre audit` reads the same place.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CadreError } from '../errors/cadre-error';

export function auditDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.CADRE_AUDIT_DIR || path.join(os.homedir(), '.cadre', 'audit'));
}

/** A workflow id as a file name: ids may hold `/` and other characters files cannot. */
export function auditFile(dir: string, workflowId: string): string {
  return path.join(dir, `${encodeURIComponent(workflowId)}.jsonl`);
}

/** A run's audit log as JSONL lines; says where it looked when the run wrote none. */
export function readAuditLines(dir: string, workflowId: string): string[] {
  const file = auditFile(dir, workflowId);
  if (!existsSync(file)) throw new CadreError(`no audit log for ${workflowId} in ${dir} (runs without agents write none; set CADRE_AUDIT_DIR as the worker does)`);
  return readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== '');
}
