/**
 * Activities: every piece of I/O cadre does. Workflows import only the *type*
 * of `createActivities`; the worker registers the real functions.
 */
import { Context, type Info } from '@temporalio/activity';
import { Runtime } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import type { BlobStore } from '../store/blobs';
import { type StoredRef, hasDeferred } from '../plan-format/refs';
import { type ForkInput, startsProcesses } from '../plan-format/types';
import { externalize } from '../store/values';
import { INLINE_OUTPUT_LIMITS, STORED_OUTPUT_LIMITS } from './tools/context';
import { type CreateRequest, type RemoveRequest, createWorktree, removeWorktree } from '../git';
import type { ModelTurnRequest, ModelTurnResult } from '../providers/model-turn';
import { type ModelDeps, lazyCustomTools, lazyModelSettings } from './models';
import { isCustomTool } from './tools/custom/registry';
import { agentToolset } from './tools/agent-toolset';
import { prewarmCodeThread, startCodeThread } from './tools/code/thread';
import { PROTECTED_PATHS, openBoundary } from './confinement';
import { teamRoles } from './roles';
import { repairWorktree } from '../git/repair';
import { type SnapshotRequest, snapshotWorktree } from '../git/snapshot';
import { type SilenceWatch, lastSignOfLife, watchForSilence } from './liveness';
import { type PlanDocumentRequest, compilePlanDocument } from './plan-document';
import { runTool } from './tools/run-tool';
import { readFork } from './fork';
import { type WorkerHost, checkOnHost, hostPolling, locateWorkspace } from './workspace-host';
import { type CheckpointRequest, type CloneRequest, cloneWorkspace, checkpointWorkspace, inClone, removeClone } from './workspace-clone';
import { AnalyticsWriter } from '../analytics/writer';
import { type AnalyticsTarget, analyticsTarget } from '../analytics/database';
import type { RecordOutcome, RunAnalyticsPart } from '../analytics/types';
import { type ConditionRequest, type StoreOptions, type ValueRequest, lazyStore, readParams, valueActivities } from './values';
import { type SandboxDeps, lazyContainment } from './sandbox-settings';
import { configFile } from './models';
import type { SandboxSpec } from '../sandbox/profile';
import { effectiveProfile } from '../sandbox/profile';
import { codecKeysFromEnv } from '../codec/keys';
import type { Redactor } from '../secrets/redact';
import type { CommandDecision } from '../commands/rules';
import type { CommandRuleSetInput } from '../commands/rule-set';
import type { StreamTarget } from '../protocol/stream';
import { TurnStream, publishToolResult } from './stream-events';
import { keepTurnSmall } from './model-results';
import { chainedConversation } from './conversation-chain';
import type { BudgetLimits } from '../protocol/budget';
import { heldToBudget } from '../providers/turn-budget';
import { type Pricing, costOf, pricedPart } from '../providers/prices';

export type { ConditionRequest, ValueRequest } from './values';
export type { ModelTurnRequest, ModelTurnResult, ModelMessageInput, ToolCall as ModelToolCall } from '../providers/model-turn';
export type { AgentTool } from './tools/agent-toolset';
export type { PlanDocumentRequest, PlanDocumentResult } from './plan-document';
export type { WorkerHost, WorkspaceHost } from './workspace-host';
export type { ClonedWorkspace } from './workspace-clone';

/** A model turn's request as the agent loop sends it. */
type TurnRequest = ModelTurnRequest & { stream?: StreamTarget; budget?: BudgetLimits };
/** A chained turn's result names the stored conversation it was sent, for the next turn to go on from. */
export type ChainedTurnResult = ModelTurnResult & { conversation?: StoredRef };

export interface ToolRequest {
  tool: string;
  params: unknown;
  workspace: string;
  stepId: string;
  /**
   * Output bytes to keep in history; bigger parts go to the blob store and come back as references,
   * and references in `params` are read first. Runs from before the blob store send none.
   */
  inlineLimit?: number;
  /** `workspace` is a git worktree: its `.git` is out of bounds, and git.* tools work in it. */
  worktree?: boolean;
  /** Whose blob store holds big outputs, when not `workspace`'s (an agent in a worktree keeps its worktree clean). */
  storeWorkspace?: string;
  /** What the plan (or role) says of its tools' sandbox and egress; the worker's own settings fill the rest. */
  sandbox?: SandboxSpec;
  /** An agent's call: its result is shown in the run's stream. */
  stream?: StreamTarget;
  /** An agent's call: results for its model to read (fs tools answer in text, windows of numbered lines). */
  forModel?: boolean;
  /** A local activity's: the host the run is bound to, which must be this worker's (workspace-host.ts). */
  onHost?: string;
}

export interface ToolResult {
  output: unknown;
  /** The attempt that succeeded, so the workflow can record attempts. */
  attempt: number;
  /** Its processes ran outside the sandbox (`sandbox: none`, chosen by people): the audit log says so. */
  unconfined?: true;
}

/** Details attached to every failure of `runTool`. */
export interface ToolFailureDetails {
  attempt: number;
  output?: unknown;
}

const HEARTBEAT_EVERY_MS = 1000;

/** Dependencies of the activities; more join as cadre grows (model clients, git, audit sinks). */
export type ActivityDeps = StoreOptions &
  ModelDeps &
  SandboxDeps & {
    /** Where finished runs are recorded; default from CADRE_ANALYTICS, CADRE_DATABASE_URL, CADRE_ANALYTICS_DIR. */
    analytics?: AnalyticsTarget;
    /** This worker's host in a fleet (worker/worker.ts); unset, runs are not bound to a host. */
    host?: WorkerHost;
  };

/** Starts the code tools' thread and, with the agent's workspace, its service; not awaited (the toolset answers at once), never failing. */
function prewarmCode(workspace: string | undefined, worktree: boolean | undefined): void {
  startCodeThread();
  if (workspace === undefined) return;
  openBoundary(workspace, { name: worktree ? 'worktree' : 'workspace', deny: PROTECTED_PATHS }).then(prewarmCodeThread, () => undefined);
}

export function createActivities(deps: ActivityDeps = {}) {
  const modelSettings = lazyModelSettings(deps);
  // Provider keys and codec keys are secrets whatever the config says: known once the settings are read.
  const containment = lazyContainment(() => configFile(deps), deps, () => [...modelSecrets(modelSettings), ...codecKeyTexts()]);
  const customTools = lazyCustomTools(deps, containment);
  // Its background writes log through the worker's logger (JSON lines when not on a terminal).
  const analytics = new AnalyticsWriter(deps.analytics ?? analyticsTarget(), (message) => Runtime.instance().logger.warn(message));
  const values = valueActivities(deps);
  // With `stream`, the turn's text and events go to the run's stream as the provider sends them.
  // With `budget` (what the agent's budget has left), the turn is held to it (providers/turn-budget.ts), and a priced model's turn says what it cost.
  // `chained`: the messages are those since `earlier`, the stored conversation, and what was sent is stored in turn.
  const modelTurnOf = ({ stream, budget, ...request }: TurnRequest, chained?: { earlier?: StoredRef }): Promise<ChainedTurnResult> =>
    heartbeating(async () => {
      // Loaded on first use: the AI SDK costs ~130 ms at startup, and every CLI command imports the activities.
      const { modelTurn } = await import('../providers/model-turn');
      let events: TurnStream | undefined;
      try {
        const redactor = containment().redactor;
        // A host out of streaming budget (maxBatches 0) hears nothing of the turn but its result.
        events = stream && stream.maxBatches !== 0 ? new TurnStream(stream, redactor, request.model ?? modelSettings().defaultModel) : undefined;
        const store = request.workspace ? lazyStore(request.workspace, deps) : undefined;
        const { sent, conversation } = chained ? await chainedConversation(chained.earlier, request.messages, store) : { sent: request.messages, conversation: undefined };
        // Tool results a session stored outside history are read back here, never into history.
        const messages = store && hasDeferred(sent) ? await readParams(sent, store) : sent;
        // A model repeating a secret it was given (in a prompt, say) does not carry it into history either.
        const settings = modelSettings();
        const model = request.model ?? settings.defaultModel;
        const price = model === undefined ? undefined : settings.prices[model];
        const asked = { ...request, messages: messages as ModelTurnRequest['messages'] };
        const held = budget ? heldToBudget(asked, budget, price, model) : asked;
        const turn = redactor.value(await modelTurn(held, settings, Context.current().cancellationSignal, events));
        if (price) turn.costUsd = costOf(turn.usage, price);
        events?.completed(turn);
        // A big answer travels by reference: history, and gRPC's message limit, see a small one.
        const small = await keepTurnSmall(turn, store, model ?? 'the model');
        // What this attempt streamed, so the workflow publishes the turn's end to match.
        const streamed = stream && (events?.streamed() ?? { attempt: Context.current().info.attempt, chars: 0, textChars: 0 });
        return { ...small, ...(streamed && { streamed }), ...(conversation && { conversation }) };
      } catch (err) {
        events?.failed(err);
        throw withJitter(err, Context.current().info.attempt);
      } finally {
        await events?.close();
      }
    });

  return {
    // Local activities of a run bound to a lone host check they run on it (onHost).
    resolveValue: (request: ValueRequest & { onHost?: string }) => heartbeating(async () => (checkOnHost(deps.host, request.onHost), values.resolveValue(request))),
    evaluateCondition: (request: ConditionRequest & { onHost?: string }) => heartbeating(async () => (checkOnHost(deps.host, request.onHost), values.evaluateCondition(request))),
    // Which host holds a run's workspace (workspace-host.ts), asked on the shared queue.
    locateWorkspace: ({ workspace }: { workspace: string }) => locateWorkspace(deps.host, workspace),
    hostPolling: ({ taskQueue, lostAfterMs }: { taskQueue: string; lostAfterMs: number }) => hostPolling(taskQueue, lostAfterMs),
    // A workspace cloned from a repository (workspace-clone.ts): made by any host, each step's work pushed.
    cloneWorkspace: (request: CloneRequest) => heartbeating(() => cloneWorkspace(deps.host, request)),
    checkpointWorkspace: (request: CheckpointRequest) => heartbeating(() => checkpointWorkspace(request)),
    removeClone: ({ workspace }: { workspace: string }) => heartbeating(() => removeClone(deps.host, workspace)),
    // A fork (workflows/plan/fork-start.ts): the run it forks, read by its query, and what is restored.
    readFork: (input: ForkInput) => heartbeating(() => readFork(input)),
    // A run's worktree leases (workflows/plan/worktrees.ts); they heartbeat so a dead worker's attempt is retried soon.
    // A worktree of a clone goes beside the clones, and on a host the run moved to starts from its last push.
    createWorktree: (request: CreateRequest & { startedFrom?: string }) => heartbeating(async () => createWorktree(await inClone(deps.host, request))),
    removeWorktree: (request: RemoveRequest) => heartbeating(() => removeWorktree(request)),
    // A worktree as a step left it, for forks (git/snapshot.ts).
    snapshotWorktree: (request: SnapshotRequest) => heartbeating(() => snapshotWorktree(request)),
    // One model call; the agent loop (a workflow) runs the tools it asks for. Cancellation aborts the HTTP request.
    modelTurn: (request: TurnRequest): Promise<ModelTurnResult> => modelTurnOf(request),
    // The same, given only the messages since the last turn and the stored conversation before them (conversation-chain.ts).
    modelTurnChained: ({ earlier, ...request }: TurnRequest & { earlier?: StoredRef }): Promise<ChainedTurnResult> => modelTurnOf(request, { earlier }),

    // The tools an agent's model is offered, fixed when the agent starts (history keeps them for replay).
    // With code tools among them, their thread builds the workspace's service while the model takes its first turn.
    agentToolset: (request: { tools: string[]; workspace?: string; worktree?: boolean }) =>
      heartbeating(async () => {
        if (request.tools.some((tool) => tool.startsWith('code.'))) prewarmCode(request.workspace, request.worktree);
        return agentToolset(request.tools, customTools);
      }),

    // A team worker's infrastructure recovery: stale git locks of its worktree removed.
    repairWorktree: (request: { worktree: string }) => heartbeating(() => repairWorktree(request.worktree)),

    // A team worker's stuck detection: when its running activities last beat.
    lastSignOfLife: (request: { workflowId: string }) => lastSignOfLife(request.workflowId),
    // ...and its watch from outside the workflow, which a lost worker cannot hold up (it beats).
    watchForSilence: (request: SilenceWatch) => heartbeating(() => watchForSilence(request)),

    // The shell calls of an agent's turn judged by their command rules, at once: every command each would run (src/commands).
    decideCommands: async (request: { items: { command: string; rules: object }[] }): Promise<CommandDecision[]> => {
      const { decideCommand } = await import('../commands/rules');
      return Promise.all(request.items.map((item) => decideCommand(item.command, item.rules as CommandRuleSetInput)));
    },

    // A plan sent as a document (any Temporal client): validated and compiled before its first step.
    compilePlanDocument: (request: PlanDocumentRequest) => heartbeating(async () => compilePlanDocument(request)),

    // A finished run's step outcomes and waits for people, for `cadre stats` and ETAs (src/analytics).
    // Agent steps' spend priced here, by this worker's models.prices (and its default model for steps that name none).
    // A config that cannot be read prices nothing here: the run is recorded all the same (its modelTurn calls say why).
    recordRunAnalytics: (part: RunAnalyticsPart): Promise<RecordOutcome> => {
      let pricing: Pricing = { prices: {} };
      try {
        pricing = modelSettings();
      } catch {
        // unpriced
      }
      return analytics.record(pricedPart(part, pricing));
    },

    // A team's roles: built-in, the worker's ./roles and CADRE_ROLES_DIR, then the plan workspace's roles/ folder.
    teamRoles: (request: { workspace: string }) => heartbeating(() => teamRoles(request.workspace)),

    runTool: (request: ToolRequest): Promise<ToolResult> =>
      heartbeating(async () => {
        checkOnHost(deps.host, request.onHost);
        const ctx = Context.current();
        const attempt = ctx.info.attempt;
        const call = toolCall(ctx.info);
        // Runs from before the blob store send no inlineLimit: they get neither reads nor writes of it.
        const store = request.inlineLimit === undefined ? undefined : lazyStore(request.storeWorkspace ?? request.workspace, deps);
        let redactor: Redactor | undefined;
        try {
          const worker = containment();
          redactor = worker.redactor;
          const sandbox = { profile: effectiveProfile(worker.profile, request.sandbox), secrets: worker.secrets, log: (line: string) => ctx.log.debug(line), redact: (text: string) => worker.redactor.text(text), ...(deps.egressLookup && { lookup: deps.egressLookup }) };
          const params = store ? await readParams(request.params, store) : request.params;
          const found = isCustomTool(request.tool)
            ? await customTools().call(request.tool, params, { workspace: request.workspace, stepId: request.stepId, attempt, signal: ctx.cancellationSignal }, request.sandbox?.within)
            : await runTool(request.tool, params, {
                workspace: request.workspace,
                ...(request.worktree && { worktree: true }),
                stepId: request.stepId,
                attempt,
                ...(call !== undefined && { call }),
                signal: ctx.cancellationSignal,
                limits: store ? STORED_OUTPUT_LIMITS : INLINE_OUTPUT_LIMITS,
                sandbox,
                ...(request.forModel && { forModel: true }),
              });
          // Scrubbed before anything is stored: history, the blob store and the model see the same redacted output.
          const output = redactor.value(found);
          const unconfined = sandbox.profile.mode === 'none' && startsProcesses(request.tool);
          const result = { output: store ? await externalize(output, store, request.inlineLimit as number) : output, attempt, ...(unconfined && { unconfined: true as const }) };
          // Runs recorded before the workflow published tool results: the activity does.
          if (request.stream && request.stream.lifecycle !== 'workflow') await publishToolResult(request.stream, redactor, request.tool, { output: result.output });
          return result;
        } catch (err) {
          const failure = await withAttempt(redactor ? redactFailure(err, redactor) : err, attempt, store, request.inlineLimit);
          if (request.stream && request.stream.lifecycle !== 'workflow' && redactor) await publishToolResult(request.stream, redactor, request.tool, { error: failure });
          throw failure;
        }
      }),
  };
}

export type Activities = ReturnType<typeof createActivities>;

/** The tool call an activity makes, named alike in each of its attempts: its workflow run and activity id. */
function toolCall(info: Info): string | undefined {
  const { workflowExecution: run, activityId } = info;
  return run && `${run.workflowId}/${run.runId}/${activityId}`;
}

const JITTER_BASE_MS = 1000;
const JITTER_MAX_MS = 60_000;

/**
 * A retryable provider failure without the provider's own Retry-After waits an exponential backoff
 * with full jitter (half to one and a half of it), so workers rate-limited together do not come back together.
 */
function withJitter(err: unknown, attempt: number, random = Math.random): unknown {
  if (!(err instanceof ApplicationFailure) || err.nonRetryable || err.nextRetryDelay !== undefined) return err;
  const backoff = Math.min(JITTER_MAX_MS, JITTER_BASE_MS * 2 ** (attempt - 1));
  return ApplicationFailure.create({ type: err.type ?? undefined, message: err.message, details: err.details ?? [], nonRetryable: false, nextRetryDelay: Math.round(backoff * (0.5 + random())), cause: err.cause });
}

/**
 * Runs `work` while heartbeating: the server notices a dead worker within the heartbeat timeout
 * and can deliver cancellation; the SDK throttles the beats. Local activities cannot heartbeat
 * (they are cancelled through their workflow task instead).
 */
async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const beat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}

/** The failure's message and details with every secret taken out (its cause chain is dropped: it may quote them). */
function redactFailure(err: unknown, redactor: Redactor): unknown {
  if (redactor.empty || !(err instanceof Error)) return err;
  if (err instanceof ApplicationFailure) {
    return ApplicationFailure.create({ type: err.type ?? 'Error', message: redactor.text(err.message), nonRetryable: err.nonRetryable ?? false, details: redactor.value(err.details ?? []) });
  }
  if (err.name === 'AbortError' || err.name.includes('Cancel')) return err;
  const scrubbed = new Error(redactor.text(err.message));
  scrubbed.name = err.name;
  return scrubbed;
}


/** The keys the model settings hold; a broken models section fails model turns, not tools. */
function modelSecrets(settings: () => { secrets: string[] }): string[] {
  try {
    return settings().secrets;
  } catch {
    return [];
  }
}

/** Each payload encryption key as its base64 text: a secret like the provider keys. */
function codecKeyTexts(): string[] {
  try {
    return (codecKeysFromEnv() ?? []).map((k) => k.key.toString('base64'));
  } catch {
    return [];
  }
}

/** The failure with the attempt in its details; a big output in them is stored, like a result's. */
async function withAttempt(err: unknown, attempt: number, store: (() => Promise<BlobStore>) | undefined, inlineLimit: number | undefined): Promise<unknown> {
  if (err instanceof ApplicationFailure) {
    const output: unknown = err.details?.[0];
    const details: ToolFailureDetails = { attempt, output: store && output !== undefined ? await externalize(output, store, inlineLimit as number) : output };
    return ApplicationFailure.create({ type: err.type ?? 'Error', message: err.message, nonRetryable: err.nonRetryable ?? false, details: [details] });
  }
  if (err instanceof Error && err.name !== 'AbortError' && !(err as { name?: string }).name?.includes('Cancel')) {
    const details: ToolFailureDetails = { attempt };
    return ApplicationFailure.create({ type: err.name || 'Error', message: err.message, details: [details] });
  }
  return err;
}
