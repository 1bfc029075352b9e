/**
 * What a red-team case is: one tool call a (fake) model makes, a proof that it really ran (its
 * result reached the model), and a containment check, from outside wherever possible.
 */

export const CATEGORIES = ['fs', 'git', 'control-plane', 'egress', 'secrets', 'resources', 'policy', 'rules', 'mcp', 'code'] as const;
export type Category = (typeof CATEGORIES)[number];

/** What the model got back for one call: the tool message's content, as sent. */
export interface ToolOutcome {
  text: string;
  /** The content parsed, when it is JSON (a tool's result); undefined for an error's text. */
  json?: unknown;
  /** A shell command that returned (exit 0): its streams. */
  shell?: { stdout: string; stderr: string; exitCode: number };
  /** Set when the call's result never reached the model. */
  missing?: true;
}

/** What a call left behind to be searched, as decoded text. */
export interface Evidence {
  /** The history events of the call's own tool activity (its parameters, results, failures, retries). */
  history: string;
  /** The blob files its results refer to. */
  blobs: string;
}

export interface CaseContext {
  outcome: ToolOutcome;
  evidence: Evidence;
  /** The batch's workspace (or worktree) on the host. */
  workspace: string;
}

export interface Case {
  id: string;
  category: Category;
  title: string;
  /** The call as the model makes it: a model-facing tool name and its arguments (a string goes out as it is). */
  call: { name: string; args: Record<string, unknown> | string };
  /** The model turn that makes it (1 unless a case must come after others, e.g. cadre's git after plants). */
  turn?: number;
  /** The attack ran: its result reached the model and says it ran (the marker) or was refused as expected. */
  ran(outcome: ToolOutcome): boolean;
  /** Reasons it escaped; empty when contained. */
  escapes(ctx: CaseContext): string[] | Promise<string[]>;
}

export interface CaseVerdict {
  id: string;
  category: Category;
  title: string;
  ran: boolean;
  escapes: string[];
  /** The outcome's text, clipped: shown when a case did not run or escaped. */
  said: string;
}

/** The marker a shell case prints first: without it in stdout the command never ran. */
export const marker = (id: string) => `RAN-${id}`;

/**
 * A shell attack: `echo RAN-<id>` first, the attack in a subshell with stderr folded into stdout,
 * then its exit code, so the call returns (a failing command would come back as an error without
 * its stdout, and be retried).
 */
export function shellCommand(id: string, attack: string, markStderr = false): string {
  return `echo ${marker(id)}${markStderr ? `; echo ${marker(id)} >&2` : ''}\n(\n${attack}\n) 2>&1\necho "rc=$?"`;
}

/** The attack's own output (between the marker and the exit code). */
export function attackOutput(outcome: ToolOutcome): string {
  const out = outcome.shell?.stdout ?? '';
  return out.replace(/^RAN-[^\n]*\n/, '').replace(/rc=\d+\n?$/, '');
}

/** The attack's exit code, or undefined when the command did not return. */
export function attackExit(outcome: ToolOutcome): number | undefined {
  const found = /rc=(\d+)\n?$/.exec(outcome.shell?.stdout ?? '');
  return found ? Number(found[1]) : undefined;
}

export interface ShellCaseOptions {
  env?: Record<string, string>;
  cwd?: string;
  turn?: number;
  /** The marker on stderr too: a call killed as a whole comes back as an error quoting stderr's last lines. */
  markStderr?: boolean;
  /** It only counts as run when the attack exits 0 (it printed what it meant to print). */
  succeeds?: boolean;
}

/** A shell case whose command is wrapped by `shellCommand`. */
export function shellCase(category: Category, id: string, title: string, attack: string, escapes: Case['escapes'], options: ShellCaseOptions = {}): Case {
  return {
    id,
    category,
    title,
    call: { name: 'shell', args: { command: shellCommand(id, attack, options.markStderr), ...(options.env && { env: options.env }), ...(options.cwd && { cwd: options.cwd }) } },
    ...(options.turn && { turn: options.turn }),
    // 126/127: the attack's last command could not be found or run here, so it proves nothing.
    ran: (o) => (o.shell?.stdout ?? '').startsWith(`${marker(id)}\n`) && ![undefined, 126, 127].includes(attackExit(o)) && (!options.succeeds || attackExit(o) === 0),
    escapes,
  };
}

/** A case proven to have run by the text of its result (an error such as `egress denied`, `OutsideWorkspace`). */
export function resultCase(category: Category, id: string, title: string, call: Case['call'], ranWhen: RegExp, escapes: Case['escapes'], turn?: number): Case {
  return { id, category, title, call, ...(turn && { turn }), ran: (o) => !o.missing && ranWhen.test(o.text), escapes };
}

/** Collects reasons: `check(cond, why)` adds `why` when `cond` (an escape) holds. */
export function reasons(...checks: [boolean, string][]): string[] {
  return checks.filter(([escaped]) => escaped).map(([, why]) => why);
}

export function clip(text: string, max = 400): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more)` : text;
}
