/** A plan file that cannot be read or does not validate: its problems, each with a path. Light, for the CLI's error report. */
import type { PlanIssue } from './issues';

export class PlanError extends Error {
  constructor(
    readonly file: string,
    readonly issues: PlanIssue[],
    /** Whether the file could not be read or parsed, or its plan did not validate. */
    readonly stage: 'read' | 'validate' = 'read',
  ) {
    super(`${file}: ${issues.length} problem${issues.length === 1 ? '' : 's'}`);
  }
}
