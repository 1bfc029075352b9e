import type { Budget, PlanBudget } from '../protocol/budget';
import type { MustChange } from '../protocol/made-no-change';
import type { Verify } from '../protocol/verify';
import type { SandboxNarrowing, SandboxSpec } from '../sandbox/profile';
import type { CommandRuleSet } from '../commands/rule-set';
import type { RunLimitValues } from './limits';

/**
 * Plain data types of a validated plan. Workflows receive these (never zod schemas,
 * which are costly to instantiate in every cached workflow sandbox).
 */

export const ON_FAILURE = ['abort', 'retry', 'skip', 'ask'] as const;
export const ON_TIMEOUT = ['abort', 'extend', 'skip', 'ask'] as const;
export type OnFailure = (typeof ON_FAILURE)[number];
export type OnTimeout = (typeof ON_TIMEOUT)[number];

export interface RetrySpec {
  maximumAttempts?: number;
  initialInterval?: string;
  backoffCoefficient?: number;
  maximumInterval?: string;
  nonRetryableErrorTypes?: string[];
}

/**
 * Tools whose work is done by processes they start: what the sandbox is for, and the only tools
 * `sandbox: none` leaves unconfined (the runTool activity says so, and plan runs audit it).
 */
export function startsProcesses(tool: string): boolean {
  return tool === 'shell' || tool.startsWith('mcp:');
}

export interface ToolCall {
  tool: string;
  with: Record<string, unknown>;
}

export interface AskSpec {
  question: string;
  choices?: string[];
  timeout?: string;
}

export const APPROVAL_POLICIES = ['allow', 'deny', 'ask'] as const;
export type ApprovalPolicy = (typeof APPROVAL_POLICIES)[number];
/**
 * Per tool; `shell` may take command rules instead (src/commands: every command it would run is
 * judged, the strictest decision wins). Runs recorded before rules held glob maps (first match wins).
 */
export type Approvals = Record<string, ApprovalPolicy | CommandRuleSet | LegacyCommandGlobs>;
export type LegacyCommandGlobs = Record<string, ApprovalPolicy>;
export const MAX_AGENT_TURNS = 200;
export const DEFAULT_AGENT_TURNS = 20;
/** An approval nobody gives within this counts as a denial. */
export const DEFAULT_APPROVAL_TIMEOUT = '24h';

export interface AgentSpec {
  role?: string;
  /** Templated like `with`. */
  prompt: string;
  system?: string;
  tools: string[];
  model?: string;
  maxTurns: number;
  maxTokens?: number;
  budget?: Budget;
  output?: Record<string, unknown>;
  approvals: Approvals;
  approvalTimeout: string;
  /** The task is a change (of each file listed): an answer before it fails (AgentMadeNoChange). */
  mustChange?: MustChange;
  /** A command that must pass before its answer is taken (protocol/verify.ts). */
  verify?: Verify;
  /** Its role's narrowing of the run's sandbox (set from the role file, never by a plan or a model). */
  roleSandbox?: SandboxNarrowing;
}

export interface DecideSpec {
  prompt: string;
  choices: string[];
  model?: string;
}

export type StepAction =
  | ({ kind: 'tool' } & ToolCall)
  | { kind: 'ask'; ask: AskSpec }
  | { kind: 'agent'; agent: AgentSpec }
  | { kind: 'decide'; decide: DecideSpec }
  | { kind: 'echo'; echo: unknown };

export interface CompiledStep {
  id: string;
  /** Every step this one waits for: `dependsOn` plus steps named in templates and `when`. */
  needs: string[];
  when?: string;
  forEach?: unknown;
  as: string;
  concurrency?: number;
  /** Run the tool as a local activity (default: only for `fs.*`); see step-options.ts. */
  local?: boolean;
  timeout?: string;
  retry: RetrySpec;
  onFailure: OnFailure;
  onTimeout: OnTimeout;
  action: StepAction;
  compensate?: ToolCall;
  worktree?: WorktreeSpec;
}

export type WorktreeCleanup = 'onSuccess' | 'always' | 'never';

/** A worktree's `repo` in a workspace cloned from a repository: the run's clone, on whichever host holds it. */
export const CLONE_REPO = '.';

export interface WorktreeSpec {
  /** Absolute path of the repository; CLONE_REPO in a cloned workspace. */
  repo: string;
  /** The task's name: the step id unless given. Steps with the same repo and task share the worktree. */
  task: string;
  base?: string;
  /** When the run ends: remove the worktree if the run completed (default), whatever happened, or never. Uncommitted work is never removed. */
  cleanup: WorktreeCleanup;
}

export interface InputSpec {
  type: 'string' | 'number' | 'boolean' | 'json';
  default?: unknown;
  description?: string;
}

export interface CompiledPlan {
  name: string;
  /** What the plan says of its tools' sandbox and egress; absent: the worker's settings, no egress. */
  sandbox?: SandboxSpec;
  /** Absolute path where tools run; for a workspace cloned from `source`, set by the host that clones it (empty until then). */
  workspace: string;
  /** The repository the workspace is cloned from, on whichever host takes the run (docs/operations.md, A fleet). */
  source?: WorkspaceSource;
  inputs: Record<string, InputSpec>;
  steps: CompiledStep[];
  output?: unknown;
  /** Its agents work as a team (see workflows/team/team.ts). */
  team?: TeamSpec;
  /** Caps all its agents share, and its wall time (workflows/plan/run-budget.ts). */
  budget?: PlanBudget;
}

export interface WorkspaceSource {
  /** A URL git fetches, or an absolute path on the hosts. */
  repo: string;
  ref?: string;
}

export interface TeamSpec {
  silentTurns: number;
  model?: string;
  fallbackModel?: string;
  confidence: number;
  escalationTimeout: string;
  defaultAnswer?: string;
  maxConsultDepth: number;
  maxSubtaskDepth: number;
  maxSubtasks: number;
  stuckAfter: string;
}

/** What a plan's `team: {}` means. */
export const TEAM_DEFAULTS: TeamSpec = {
  silentTurns: 2,
  confidence: 0.7,
  escalationTimeout: '24h',
  maxConsultDepth: 2,
  maxSubtaskDepth: 2,
  maxSubtasks: 4,
  stuckAfter: '10s',
};

/**
 * A team worker's tool goes this long without a heartbeat before Temporal retries it elsewhere:
 * longer than `stuckAfter`, so the team hears of a silent worker before its work is run again.
 */
export const TEAM_TOOL_HEARTBEAT_TIMEOUT = '30s' as const;

/** Attempts of a team worker's model turn before its failure's class decides (a fallback model, a person). */
export const TEAM_MODEL_ATTEMPTS = 3;

export interface RunPlanInput {
  plan: CompiledPlan;
  inputs: Record<string, unknown>;
  /** The cluster's per-run limits, when lower than Temporal's defaults (`CADRE_RUN_LIMITS`); its agents keep within the same. */
  limits?: Partial<RunLimitValues>;
  /** A fork: the steps restored from the run it forks, as the worker read them (activities/fork.ts). */
  forked?: ForkRestore;
}

/**
 * `runPlan`'s input for a fork, from any client (`cadre fork`, the `temporal` CLI, Python): the run
 * and the step to run again from; the plan and inputs are the old run's, `inputs` overriding some.
 */
export interface ForkInput {
  fork: {
    from: string;
    step: string;
    /** Restored steps' outputs replaced, by step id. */
    set?: Record<string, unknown>;
    /** An edited plan to fork onto (compiled, as `cadre run` sends it); its changed steps run again. */
    plan?: CompiledPlan;
    /** `step` is an agent: it keeps its first `turn` turns from the old run, and the model goes on from there. */
    turn?: number;
  };
  inputs?: Record<string, unknown>;
  limits?: Partial<RunLimitValues>;
}

/**
 * What a fork restores of the run it forks: records and outputs of the steps it does not run again.
 * `Record` is the protocol's StepRecord (protocol/definitions.ts), which imports the plan format,
 * and `Resume` its AgentResume (protocol/forks.ts).
 */
export interface ForkRestore<Record = unknown, Resume = unknown> {
  from: string;
  step: string;
  records: Record[];
  outputs: { [step: string]: unknown };
  /** Steps that run again for a reason of the fork's own (an edited plan): said in their records. */
  reasons?: { [step: string]: string };
  /** The worktrees restored steps worked in: the fork's own are made from where they left them. */
  worktrees?: ForkWorktree[];
  /** An agent forked at a turn (`fork.turn`): the conversation it goes on from, by step id. */
  agents?: { [step: string]: Resume };
  /** A forEach forked at one item (`fork.step` `enrich[3]`): the old run's item outputs, the others restored. */
  items?: { [step: string]: ForkItems };
  /** A team: the board's records of the workers of restored steps, and the answers the team remembers. */
  workers?: unknown[];
  teamAnswers?: [string, { answer: string; by: string }][];
}

/** A forEach's item outputs in the old run, and the one item that runs again. */
export interface ForkItems {
  rerun: number;
  outputs: unknown[];
}

/** A worktree of the forked run, as its last restored step left it (git/snapshot.ts). */
export interface ForkWorktree {
  repo: string;
  task: string;
  snapshot: string;
  /** The commit its branch started from. */
  baseCommit: string;
}

/**
 * `runPlan`'s input from any Temporal client: the plan document itself, validated and compiled by
 * the worker before the first step (docs/protocol.md).
 */
export interface PlanDocumentInput {
  /** The plan as the JSON of a plan file (or the text of one). */
  document: unknown;
  /** Input values by name: typed JSON, or strings as `--input` takes them. */
  inputs?: Record<string, unknown>;
  /** Where relative paths in the plan resolve, an absolute path on the worker; default the worker's working directory. */
  baseDir?: string;
  /** The cluster's per-run limits, when lower than Temporal's defaults. */
  limits?: Partial<RunLimitValues>;
}
