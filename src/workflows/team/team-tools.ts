/**
 * What makes an agent a team worker: `signal_state`, `ask_question` and `spawn_subtask`, and the
 * rule that a worker is done only when it says so. A turn that ends without a tool call is answered
 * with a reminder; after `silentTurns` reminders the worker is `blocked` and waits for a person,
 * never taken for done.
 */
import type { SandboxSpec } from '../../sandbox/profile';
import { ApplicationFailure, CancellationScope, condition, executeChild, getExternalWorkflowHandle, isCancellation, sleep, workflowInfo } from '@temporalio/workflow';
import { durationMs, isDuration } from '../../plan-format/duration';
import { DEFAULT_AGENT_TURNS } from '../../plan-format/types';
import type { WorkflowTool } from '../agent/agent-loop';
import { AGENT_TASK_WORKFLOW, type AgentTaskInput, type AgentTaskWorkflow, type InheritedPolicy, type TeamWorker } from '../../protocol/agent-task';
import { isoAt, nowMs } from '../common/clock';
import { type TeamReply, type WorktreeRecord, teamLearnedSignal, teamQuestionSignal, teamReplySignal } from '../../protocol/definitions';
import { describeFailure } from '../common/failures';
import { withRole } from '../../roles/team-roles';
import type { WorkerReporter } from '../agent/worker-reporter';
import { WorktreeLeases } from '../plan/worktrees';
import { type RunLimits, onSignal } from '../common/run-limits';
import { refusedForLimit } from '../common/sent-signals';
import type { HostRoute } from '../common/host-route';

/** States an agent may say it is in; the others follow from what it does (asking, spawning, answering). */
const SIGNALLED_STATES = ['completing', 'blocked', 'error'] as const;
const MAX_REASON_CHARS = 10_000;
/** A blocked worker that checks again on its own waits at most this long in one go. */
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

const MAX_QUESTION_CHARS = 10_000;
const MAX_PROMPT_CHARS = 256 * 1024;

export interface TeamWorkerContext {
  team: TeamWorker;
  reporter: WorkerReporter;
  /** Asks a person (a wait on the worker's own run); undefined when `timeout` passed first. */
  askPerson(id: string, prompt: string, timeout?: string): Promise<string | undefined>;
  /** Asks a person while blocked: the worker stays blocked until the answer, then runs again. */
  askWhileBlocked(id: string, prompt: string, choices?: string[]): Promise<string>;
  label: string;
  workspace: string;
  /** The run's sandbox and egress: a subtask gets the same, whatever its role. */
  sandbox?: SandboxSpec;
  /** The worker's own tools and approvals: a subtask, whatever role the model picks, gets no more. */
  policy?: InheritedPolicy;
  /** The worker's own worktree, when it works in one: subtasks may get worktrees branched from it. */
  worktree?: { branch: string; storeWorkspace: string };
  /** Records of subtasks' worktrees, shown in the worker's diagnostics. */
  subtaskWorktrees: WorktreeRecord[];
  /** Questions and subtasks under way: the worker's state follows them. */
  busy: { questions: number; subtasks: number };
  sync(reason: string): void;
  /** The worker's count of what its run takes (the team's replies are signals). */
  limits: RunLimits;
  /** A subtask started: readers of the worker's stream follow the subtask's from here (a worker with a stream of its own). */
  announce?(step: string, workflowId: string): void;
  /** A signal to the team run that Temporal refused (it took as many as a run may): never silent. */
  refused(signal: string, err: ApplicationFailure): void;
  /** What a subtask is told of streams, limits and its host's queue: as its worker was. */
  childInput(): Pick<AgentTaskInput, 'ownStream' | 'limits' | 'hostQueue' | 'hostLostAfterMs' | 'runBudget'>;
  /** The host its workspace is bound to, when the run has one: its subtasks' worktrees are made there. */
  route?: HostRoute;
}

const SIGNAL_STATE_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    state: { type: 'string', enum: [...SIGNALLED_STATES], description: 'completing: you are done (give result); blocked: you cannot go on now; error: the task cannot be done' },
    reason: { type: 'string', description: 'Why, in a sentence or two.' },
    result: { description: 'With completing: your final answer, as text or JSON.' },
    retryAfter: { type: 'string', description: 'With blocked: check again after this long (e.g. 30s, 5m) instead of waiting for a person.' },
  },
  required: ['state', 'reason'],
  additionalProperties: false,
};

export function signalStateTool(ctx: TeamWorkerContext): WorkflowTool {
  return {
    name: 'signal_state',
    description: 'Tell the team your state. You must call it to finish (completing, with your result), or when you cannot go on (blocked) or the task cannot be done (error).',
    inputSchema: SIGNAL_STATE_SCHEMA,
    call: async (args, callId) => {
      const problem = checkArgs(args);
      if (problem) return { result: problem, isError: true };
      const { state, reason } = args as { state: (typeof SIGNALLED_STATES)[number]; reason: string };
      if (state === 'completing') {
        const moved = ctx.reporter.tryMove('completing', reason);
        if (typeof moved === 'string') return { result: moved, isError: true };
        return { result: 'completing', final: { output: args.result } };
      }
      if (state === 'error') {
        const moved = ctx.reporter.tryMove('error', reason);
        if (typeof moved === 'string') return { result: moved, isError: true };
        throw ApplicationFailure.nonRetryable(`${ctx.label}: the worker gave up: ${reason}`, 'WorkerGaveUp');
      }
      const moved = ctx.reporter.tryMove('blocked', reason);
      if (typeof moved === 'string') return { result: moved, isError: true };
      const retryAfter = args.retryAfter as string | undefined;
      if (retryAfter !== undefined) {
        await sleep(durationMs(retryAfter));
        ctx.reporter.move('running', `checking again after ${retryAfter}`);
        return { result: `${retryAfter} passed: check again whether you can go on` };
      }
      const answer = await ctx.askWhileBlocked(`${ctx.label}/blocked-${callId}`, `${ctx.label} is blocked: ${reason}. What should it do?`);
      return { result: `A person answered: ${answer}` };
    },
  };
}

/** The reminder for a turn without a tool call; past the limit, a person is asked what the worker should do. */
export function silentTurnHandler(ctx: TeamWorkerContext): (count: number) => Promise<string> {
  const { silentTurns } = ctx.team;
  return async (count) => {
    if (count <= silentTurns) {
      return (
        `You ended your turn without calling a tool (reminder ${count} of ${silentTurns}). ` +
        'A team worker must say its state: call signal_state with state completing and your result when you are done, ' +
        'blocked with the reason when you cannot go on, or error when the task cannot be done.'
      );
    }
    ctx.reporter.move('blocked', `ended ${count} turns in a row without a tool call or a state signal`);
    const answer = await ctx.askWhileBlocked(`${ctx.label}/silent-${count}`, `${ctx.label} stopped without saying its state (${count} turns). What should it do?`);
    return `A person answered: ${answer}`;
  };
}

const ASK_QUESTION_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    question: { type: 'string', description: 'The question, with what the answerer needs to know to answer it.' },
    canBeAnsweredBy: { type: 'string', description: 'The role that can answer it (architect, product, ...), if you know.' },
  },
  required: ['question'],
  additionalProperties: false,
};

/**
 * `ask_question`: the worker waits (waiting_for_input) while its team run finds the answer: from
 * memory, a specialist, or, when the team sends the question on, a person (with a timeout).
 */
export function askQuestionTool(ctx: TeamWorkerContext): WorkflowTool {
  const replies = new Map<string, TeamReply>();
  // Only replies to questions asked and not yet answered are kept: anyone can send signals.
  const asked = new Set<string>();
  onSignal(ctx.limits, teamReplySignal, (reply) => {
    if (typeof reply?.id === 'string' && asked.has(reply.id) && !replies.has(reply.id)) replies.set(reply.id, reply);
  });
  return {
    name: 'ask_question',
    description: 'Ask the team a question you cannot answer yourself: a specialist answers, or a person when no one is sure. You wait until then.',
    inputSchema: ASK_QUESTION_SCHEMA,
    call: async (args, callId) => {
      const { question, canBeAnsweredBy } = args;
      if (typeof question !== 'string' || question.trim() === '') return { result: 'question must be a non-empty string', isError: true };
      if (question.length > MAX_QUESTION_CHARS) return { result: `the question has ${question.length} characters; at most ${MAX_QUESTION_CHARS}`, isError: true };
      if (canBeAnsweredBy !== undefined && typeof canBeAnsweredBy !== 'string') return { result: 'canBeAnsweredBy must be a role name', isError: true };
      const id = `${ctx.label}/q-${callId}`;
      asked.add(id);
      ctx.busy.questions++;
      ctx.sync(`asked: ${question}`);
      try {
        const asking = getExternalWorkflowHandle(ctx.team.runId).signal(teamQuestionSignal, {
          from: workflowInfo().workflowId,
          id,
          step: ctx.label,
          question,
          ...(canBeAnsweredBy !== undefined && { canBeAnsweredBy }),
          chain: ctx.team.chain,
          at: isoAt(nowMs()),
        });
        const refused = await asking.then(
          () => undefined,
          (err: unknown) => {
            if (!refusedForLimit(err)) throw err;
            ctx.refused('teamQuestion', err);
            return `not asked: the team run takes no more signals (Temporal's limit of signals a run). Decide yourself, or signal blocked for a person.`;
          },
        );
        if (refused) return { result: refused, isError: true };
        await condition(() => replies.has(id));
        const reply = replies.get(id) as TeamReply;
        if (reply.outcome === 'cut') return { result: `not answered: ${reply.note ?? 'cut'}`, isError: true };
        if (reply.outcome !== 'escalate') {
          const how = reply.outcome === 'cached' ? ' (the answer given earlier to the same question)' : reply.confidence !== undefined ? ` (confidence ${reply.confidence})` : '';
          const who = reply.by === 'a person' ? 'A person' : `The ${reply.by ?? 'team'}`;
          return { result: `${who} answered${how}: ${reply.answer ?? ''}` };
        }
        return { result: await escalate(ctx, id, question, reply.note) };
      } finally {
        asked.delete(id);
        replies.delete(id);
        ctx.busy.questions--;
        ctx.sync('answered');
      }
    },
  };
}

/** A question nobody on the team could answer surely goes to a person; the team remembers the answer. */
async function escalate(ctx: TeamWorkerContext, id: string, question: string, note: string | undefined): Promise<string> {
  const { escalationTimeout, defaultAnswer } = ctx.team;
  const answer = await ctx.askPerson(id, `${ctx.label} asks: ${question}${note ? ` (${note})` : ''}`, escalationTimeout);
  if (answer !== undefined) {
    // The team run may have ended (nobody to remember it), or taken as many signals as it may (said).
    await getExternalWorkflowHandle(ctx.team.runId)
      .signal(teamLearnedSignal, { question, answer })
      .catch((err: unknown) => refusedForLimit(err) && ctx.refused('teamLearned', err));
    return `A person answered: ${answer}`;
  }
  if (defaultAnswer !== undefined) return `Nobody answered within ${escalationTimeout}; the team's default answer: ${defaultAnswer}`;
  ctx.reporter.move('error', `nobody answered "${question.slice(0, 200)}" within ${escalationTimeout}`);
  throw ApplicationFailure.nonRetryable(`${ctx.label}: nobody answered its question within ${escalationTimeout} and the team has no defaultAnswer`, 'QuestionUnanswered');
}

const SPAWN_SUBTASK_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    role: { type: 'string', description: 'The role of the worker to start (implementer, tester, researcher, ...).' },
    prompt: { type: 'string', description: 'The subtask: everything the worker needs to do it.' },
    worktree: { type: 'boolean', description: 'Give it a git worktree of its own, branched from yours (you must work in one).' },
  },
  required: ['role', 'prompt'],
  additionalProperties: false,
};

/** `spawn_subtask`: a child worker with a role; the parent waits (waiting_for_subtask) and gets its result. */
export function spawnSubtaskTool(ctx: TeamWorkerContext): WorkflowTool {
  let started = 0;
  return {
    name: 'spawn_subtask',
    description: 'Start a teammate on a subtask and wait for its result.',
    inputSchema: SPAWN_SUBTASK_SCHEMA,
    call: async (args) => {
      const { role, prompt } = args;
      const { team } = ctx;
      if (typeof role !== 'string' || !team.roles.some((r) => r.name === role)) return { result: `role must be one of ${team.roles.map((r) => r.name).join(', ')}`, isError: true };
      if (typeof prompt !== 'string' || prompt.trim() === '') return { result: 'prompt must be a non-empty string', isError: true };
      if (prompt.length > MAX_PROMPT_CHARS) return { result: `the prompt has ${prompt.length} characters; at most ${MAX_PROMPT_CHARS} (put long text in a file)`, isError: true };
      if (team.depth + 1 > team.maxSubtaskDepth) return { result: `not started: subtasks go at most ${team.maxSubtaskDepth} deep (team.maxSubtaskDepth)`, isError: true };
      if (started >= team.maxSubtasks) return { result: `not started: a worker starts at most ${team.maxSubtasks} subtasks (team.maxSubtasks)`, isError: true };
      const agent = withRole({ role, prompt, tools: [], maxTurns: DEFAULT_AGENT_TURNS, approvals: {}, approvalTimeout: team.escalationTimeout }, team.roles, team.model);
      if (typeof agent === 'string') return { result: agent, isError: true };
      if (args.worktree !== undefined && typeof args.worktree !== 'boolean') return { result: 'worktree must be true or false', isError: true };
      if (args.worktree === true && !ctx.worktree) return { result: 'worktree: true needs you to work in a git worktree (your step has no worktree)', isError: true };
      const n = ++started;
      const label = `${ctx.label}/sub-${n}`;
      ctx.busy.subtasks++;
      ctx.sync(`started subtask ${label} (${role})`);
      // A subtask's own worktree is the parent's lease: released (kept when it holds uncommitted
      // work) when the subtask ends, however it ends, cancellation included.
      const leases = new WorktreeLeases('team', () => undefined, () => ctx.route);
      try {
        const own = args.worktree === true && ctx.worktree ? await leases.lease({ repo: ctx.workspace, task: label.replace(/[^A-Za-z0-9._-]+/g, '-'), base: ctx.worktree.branch, cleanup: 'always' }, label) : undefined;
        const input = {
          step: label,
          action: { kind: 'agent' as const, agent },
          prompt,
          ...(own && ctx.worktree ? { workspace: own.path, worktree: true, branch: own.branch, storeWorkspace: ctx.worktree.storeWorkspace } : { workspace: ctx.workspace }),
          team: { ...team, role, chain: [role], depth: team.depth + 1 },
          ...(ctx.sandbox && { sandbox: ctx.sandbox }),
          ...(ctx.policy && { inherited: ctx.policy }),
        };
        const workflowId = `${workflowInfo().workflowId}/sub-${n}`;
        ctx.announce?.(label, workflowId);
        const result = await executeChild<AgentTaskWorkflow>(AGENT_TASK_WORKFLOW, { workflowId, args: [{ ...input, ...ctx.childInput() }] });
        return { result: { subtask: label, output: result.output, ...(own && { branch: own.branch }) } };
      } catch (err) {
        if (isCancellation(err)) throw err;
        return { result: `subtask ${label} failed: ${describeFailure(err).message}`, isError: true };
      } finally {
        if (leases.size > 0) {
          // Read here: inside nonCancellable the current scope is the one that is never cancelled.
          const outcome = CancellationScope.current().consideredCancelled ? 'cancelled' : 'completed';
          await CancellationScope.nonCancellable(() => leases.release(outcome));
          ctx.subtaskWorktrees.push(...leases.records());
        }
        ctx.busy.subtasks--;
        ctx.sync(`subtask ${label} ended`);
      }
    },
  };
}

function checkArgs(args: Record<string, unknown>): string | undefined {
  const { state, reason, retryAfter } = args;
  if (!(SIGNALLED_STATES as readonly unknown[]).includes(state)) return `state must be one of ${SIGNALLED_STATES.join(', ')}`;
  if (typeof reason !== 'string' || reason.trim() === '') return 'reason must be a non-empty string';
  if (reason.length > MAX_REASON_CHARS) return `reason has ${reason.length} characters; at most ${MAX_REASON_CHARS}`;
  if (state === 'completing' && args.result === undefined) return 'completing needs your result';
  if (retryAfter !== undefined) {
    if (state !== 'blocked') return 'only blocked takes retryAfter';
    if (typeof retryAfter !== 'string' || !isDuration(retryAfter)) return 'retryAfter must be a duration such as 30s or 5m';
    const ms = durationMs(retryAfter);
    if (ms <= 0 || ms > MAX_RETRY_AFTER_MS) return 'retryAfter must be more than 0 and at most 24h';
  }
  return undefined;
}
