/**
 * The ids of runPlan's, agentTask's and session's patches (`patched()`): each a change of behaviour that runs
 * recorded before it must replay without. Every patch a run takes costs it a marker and an upsert
 * of TemporalChangeVersion (two history events and a visibility write, the server's costliest part
 * of a workflow task), so a run that starts now records one marker, its workflow's newest baseline,
 * that stands for every patch in it (workflows/patch-baselines.ts). A run recorded with an older
 * baseline replays with that one's patches, and a run recorded before any asks for each patch as
 * it did. Patches added later are asked for by themselves until the next baseline takes them in.
 * A run that took a baseline has no marker of its own for its patches: never remove one from it.
 * Pure data, so the workflows' code stays the workflows'.
 */

// runPlan's patches.

/** Runs take signals (answer, pause, resume, approve) as well as updates; older ones dropped them (handlers.ts). */
export const PATCH_SIGNALS = 'plan-signals';
/** An agent's wait asked again (a later `since`) opens again; older runs ignored it (agent-steps.ts). */
export const PATCH_REASKED_WAITS = 'reasked-waits';
/** A finished run is recorded for analytics by a local activity (analytics.ts). */
export const PATCH_RUN_ANALYTICS = 'run-analytics';
/** The run lets its stream's readers go before it ends (run-plan.ts). */
export const PATCH_RUN_STREAM = 'run-stream';
/** Activity ids named after steps instead of Temporal's sequence numbers (tool-call.ts). */
export const PATCH_STEP_ACTIVITY_IDS = 'step-activity-ids';
/**
 * Strict templates (a missing value fails its step), first answer wins, failures of the run instead
 * of workflow-task failures for plan data, local activities for cheap tools (run-state.ts).
 */
export const PATCH_HARDENED = 'engine-hardening';
/**
 * A step's successors start as the step settles, in the same microtask, instead of waking the
 * scheduler's `condition` after every step, and tools that start no process get no audit handler:
 * a chain's step made four promises and one call into the workflow's sandbox more, each of which
 * the SDK makes costly (docs/benchmarks.md, plan overhead) (run-plan.ts).
 */
export const PATCH_LEAN_STEPS = 'lean-steps';
/** forEach chunks' child runs get a 30 s workflow task timeout (foreach-chunks.ts). */
export const PATCH_CHUNK_TASK_TIMEOUT = 'foreach-chunk-task-timeout';

/**
 * Agents stream their turns on their own workflows, and the run's stream says where
 * (`agent_started`): the run's stream holds what controls the run (agent-steps.ts). A run's own
 * stream is part of what it replays (readers' long polls return when it grows), so what it
 * publishes changes only under a patch.
 */
export const PATCH_AGENT_STREAMS = 'agent-streams';
/** A run past its history or signal budget continues as new once no step runs (continue-as-new.ts). */
export const PATCH_CONTINUE_AS_NEW = 'plan-continue-as-new';

/** A run binds its workspace to the host that holds it, and sends its workspace's activities there (workspace-host.ts). */
export const PATCH_WORKSPACE_HOSTS = 'workspace-hosts';
/**
 * A run upserts `CadreStatus` only when it differs from what the run started with (the client
 * starts runs as running); runs recorded earlier upserted `running` once more as they began.
 */
export const PATCH_STATUS_AS_STARTED = 'status-as-started';
/**
 * A wait without a timeout shows in the Web UI's timeline: a timer named after it, renewed every
 * year (plan/waits.ts). Runs recorded before waited on a bare condition, which the timeline does not show.
 */
export const PATCH_VISIBLE_WAITS = 'visible-waits';
/**
 * A forEach item waits for the run to be resumed only while it is paused; runs and chunks (runItems, which asks for
 * this patch by itself) recorded earlier awaited a condition before every item.
 */
export const PATCH_LEAN_ITEMS = 'lean-items';
/** A run bound to a host that does not poll alone reads its stored values (and its forEach chunks run) on that host; before, where the run ran. Asked only there. */
export const PATCH_HOST_STORED_VALUES = 'host-stored-values';

/** A forEach chunk that finds its host unreachable tells its run, which shows the wait as the step's (foreach-chunks.ts). Asked only when bound. */
export const PATCH_CHUNK_HOST_WAITS = 'chunk-host-waits';

// agentTask's patches (its loop, stuck watch and reports).

/** Agents report their worker state (search attribute, signals to the team run); older histories did not (agent-task.ts). */
export const PATCH_WORKER_STATES = 'worker-states';
/** A worker's moves go to its team run in batches, spaced out (worker-reporter.ts); older histories sent a signal a move. */
export const PATCH_WORKER_REPORTS = 'worker-reports';
/** An agent ends once its agentWaits signals are delivered (common/sent-signals.ts); older histories ended without waiting. */
export const PATCH_WAITS_DELIVERED = 'agent-waits-delivered';
/** Agents started on this code judge shell calls by command rules (approval-gate.ts). */
export const PATCH_COMMAND_RULES = 'command-rules';
/** Agents started on this code fail a tool call written as text and a loop of the same calls (protocol/agent-guards.ts). */
export const PATCH_TURN_GUARDS = 'turn-guards';
/** Near its history limit an agent starts no model turn (agent-loop.ts): asked only then. */
export const PATCH_HISTORY_GUARD = 'agent-history-guard';
/** Agents started on this code send each model turn only the messages since the last (stored-conversation.ts). */
export const PATCH_CONVERSATION_CHAIN = 'agent-conversation-chain';
/** Team workers' stuck watch runs outside the workflow (activities/liveness.ts); older histories did not. */
export const PATCH_STUCK_WATCH = 'stuck-watch';
/**
 * The watch decides by progress events and times its activities recorded, not the workflow's clock:
 * the first task a live worker runs after a dead one's sticky queue timed out read the task before's
 * time (TS SDK 1.24), while its replay reads its own, so a branch on the clock did not replay.
 */
export const PATCH_RECORDED_WATCH = 'stuck-watch-recorded';
/**
 * The spacing after a report is a timer started as it is sent, and the next report waits for it to
 * fire: decided by history alone. Before, a report compared the workflow's clock with the last
 * one's, and after a workflow task timed out on a dead worker the SDK gave the next task the
 * previous task's time, where a replay gives it its own: the two chose differently (a timer, or a
 * signal at once) and the history no longer replayed. Asked at the first spaced report.
 */
export const PATCH_REPORT_GATES = 'worker-report-gates';

// session's patches (and its loop's, above).

/**
 * The session publishes what it sees itself (turns' ends, tool calls and results), and its
 * activities only the text as it comes, within its budget; runs recorded earlier published all
 * from the activities.
 */
export const PATCH_SESSION_EVENTS = 'session-own-events';
/** A session with tools binds its workspace to the host that holds it, as a plan run does; sessions recorded earlier were not bound. */
export const PATCH_SESSION_HOSTS = 'session-hosts';

/** A baseline: the marker a run records, and the patches it stands for. */
export type PatchBaseline = readonly [marker: string, patches: ReadonlySet<string>];

/** runPlan's baselines, oldest first: the first (eight patches), then two more, then the workspace's host, then the status it started with, visible waits and lean forEach items. */
const PLAN_BASELINE_1 = new Set([
  PATCH_SIGNALS,
  PATCH_REASKED_WAITS,
  PATCH_RUN_ANALYTICS,
  PATCH_RUN_STREAM,
  PATCH_STEP_ACTIVITY_IDS,
  PATCH_HARDENED,
  PATCH_LEAN_STEPS,
  PATCH_CHUNK_TASK_TIMEOUT,
]);
const PLAN_BASELINE_2 = new Set([...PLAN_BASELINE_1, PATCH_AGENT_STREAMS, PATCH_CONTINUE_AS_NEW]);
const PLAN_BASELINE_3 = new Set([...PLAN_BASELINE_2, PATCH_WORKSPACE_HOSTS]);
export const PLAN_BASELINES: readonly PatchBaseline[] = [
  ['plan-baseline', PLAN_BASELINE_1],
  ['plan-baseline-2', PLAN_BASELINE_2],
  ['plan-baseline-3', PLAN_BASELINE_3],
  ['plan-baseline-4', new Set([...PLAN_BASELINE_3, PATCH_STATUS_AS_STARTED, PATCH_VISIBLE_WAITS, PATCH_LEAN_ITEMS])],
];

/** agentTask's baselines: a run took seven markers as it started and one at its first spaced report. */
export const AGENT_BASELINES: readonly PatchBaseline[] = [
  [
    'agent-baseline',
    new Set([
      PATCH_WORKER_STATES,
      PATCH_WORKER_REPORTS,
      PATCH_WAITS_DELIVERED,
      PATCH_COMMAND_RULES,
      PATCH_TURN_GUARDS,
      PATCH_HISTORY_GUARD,
      PATCH_CONVERSATION_CHAIN,
      PATCH_STUCK_WATCH,
      PATCH_RECORDED_WATCH,
      PATCH_REPORT_GATES,
    ]),
  ],
];

/** session's baselines: each run of a session (it continues as new) took up to five markers as it started. */
export const SESSION_BASELINES: readonly PatchBaseline[] = [
  [
    'session-baseline',
    new Set([PATCH_SESSION_EVENTS, PATCH_SESSION_HOSTS, PATCH_COMMAND_RULES, PATCH_TURN_GUARDS, PATCH_HISTORY_GUARD, PATCH_CONVERSATION_CHAIN]),
  ],
];
