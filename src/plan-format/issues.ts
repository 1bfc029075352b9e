/** Plan problems and warnings: a path into the plan (`steps[3].dependsOn[0]`) and a message. */

export interface PlanIssue {
  path: string;
  message: string;
}

export function formatPath(parts: readonly PropertyKey[]): string {
  return parts
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join('');
}

export function formatIssues(issues: PlanIssue[]): string {
  return issues.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join('\n');
}

/** A report stays readable: past this many problems, the rest are counted. */
const MAX_REPORTED = 500;

/** Drops repeats and orders issues as they appear in the file: plan fields, then steps by index, then output. */
export function sortIssues(issues: PlanIssue[]): PlanIssue[] {
  const seen = new Set<string>();
  const unique = issues.filter((issue) => {
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const rank = (issue: PlanIssue) => {
    const step = /^steps\[(\d+)\]/.exec(issue.path);
    if (step) return 1 + Number(step[1]);
    return issue.path.startsWith('output') ? Number.MAX_SAFE_INTEGER : 0;
  };
  const sorted = unique
    .map((issue, i) => ({ issue, i }))
    .sort((a, b) => rank(a.issue) - rank(b.issue) || a.i - b.i)
    .map(({ issue }) => issue);
  if (sorted.length <= MAX_REPORTED) return sorted;
  const more = sorted.length - MAX_REPORTED;
  return [...sorted.slice(0, MAX_REPORTED), { path: '', message: `...and ${more.toLocaleString('en-US')} more problems` }];
}
