/**
 * Where audit logs live: one JSONL file per plan run (its agents' events included), under
 * CADRE_AUDIT_DIR or ~/.cadre/audit, so the worker writes and `cadre audit` reads the same place.
 */
import os from 'node:os';
import path from 'node:path';

export function auditDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.CADRE_AUDIT_DIR || path.join(os.homedir(), '.cadre', 'audit'));
}

/** A workflow id as a file name: ids may hold `/` and other characters files cannot. */
export function auditFile(dir: string, workflowId: string): string {
  return path.join(dir, `${encodeURIComponent(workflowId)}.jsonl`);
}
