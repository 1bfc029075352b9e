/**
 * The worker's side of the audit sink (workflows/agent/audit.ts): appends each event as one JSON line to
 * its run's file. Not called on replay, so a replayed history writes nothing twice. A write that
 * fails is logged and dropped: the audit log must never stop a run.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import type { InjectedSinks } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import { auditDir, auditFile } from '../store/audit-files';
import type { AuditEvent, AuditSinks } from '../workflows/agent/audit';

export function auditSinks(dir = auditDir()): InjectedSinks<AuditSinks> {
  let made = false;
  return {
    audit: {
      record: {
        fn(info: WorkflowInfo, event: AuditEvent) {
          // The plan run's file holds its agents' events too.
          const run = info.root?.workflowId ?? info.workflowId;
          const line = JSON.stringify({ ...event, run, workflowId: info.workflowId, runId: info.runId });
          try {
            if (!made) mkdirSync(dir, { recursive: true });
            made = true;
            appendFileSync(auditFile(dir, run), `${line}\n`);
          } catch (err) {
            console.error(`cadre: audit event of ${run} not written: ${(err as Error).message}`);
          }
        },
        callDuringReplay: false,
      },
    },
  };
}
