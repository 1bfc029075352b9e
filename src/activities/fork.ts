/**
 * A fork (docs/forks.md): the run it forks is read here, by its `forkSource` query, never by the
 * workflow's own code, and what is restored and what runs again is decided here; the workflow
 * takes the result from history, so a forked run replays.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { canonical } from '../protocol/canonical-json';
import { COMPILED_PLAN } from '../protocol/plan-input';
import { CadreForkedFrom, type StepRecord } from '../protocol/definitions';
import { type AgentForkSource, type AgentResume, type ForkSource, RESTORED_NOTE, agentForkSourceQuery, forkSourceQuery } from '../protocol/forks';
import { resolveInputs } from '../plan-format/inputs';
import { FOREACH_CHILD_THRESHOLD } from '../plan-format/limits';
import { type PlanIssue, formatIssues } from '../plan-format/issues';
import { checkStartPayload } from '../plan-format/payload';
import type { CompiledPlan, ForkInput, ForkItems, ForkRestore, ForkWorktree, RunPlanInput } from '../plan-format/types';

/** A compiled plan's shape, as runPlan checks its own input's (`plan` is the field it checks). */
const COMPILED_PLAN_SHAPE = (plan: unknown, at: string) => COMPILED_PLAN({ plan, inputs: {} }, '')?.replace(/^plan/, at);

export type ForkResult =
  | { ok: true; start: RunPlanInput; rerun: string[]; indexed: boolean }
  | { ok: false; message: string; issues: PlanIssue[] };

/** Reads the run `input.fork.from` names, and plans the fork of it. */
export async function readFork(input: ForkInput): Promise<ForkResult> {
  const shapeIssues = requestIssues(input);
  if (shapeIssues.length > 0) return refused(shapeIssues);
  const { client } = Context.current();
  const from = input.fork.from;
  const handle = client.workflow.getHandle(from);
  let source: ForkSource;
  try {
    const description = await handle.describe();
    if (description.type !== 'runPlan') return refused([{ path: 'fork.from', message: `${from} is a ${description.type} run, not a plan run: only plan runs fork` }]);
    if (description.status.name === 'RUNNING') return refused([{ path: 'fork.from', message: `run ${from} is still running: fork it once it ended (or cancel it)` }]);
    source = await handle.query(forkSourceQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return refused([{ path: 'fork.from', message: `no run ${from} in this namespace (its history may be past retention)` }]);
    if (/did not register a handler for forkSource|QueryNotRegistered|unknown query/i.test((err as Error).message)) {
      return refused([{ path: 'fork.from', message: `run ${from} was recorded by a cadre that could not be forked from yet` }]);
    }
    throw err;
  }
  const planned = planFork(source, input);
  if (!planned.ok) return planned;
  if (input.fork.turn !== undefined) {
    const agent = await agentAtTurn(source, input.fork.step, input.fork.turn);
    if (typeof agent === 'string') return refused([{ path: 'fork.turn', message: agent }]);
    planned.start.forked = { ...(planned.start.forked as ForkRestore), agents: { [input.fork.step]: agent } };
  }
  // An upsert of an attribute the namespace lacks would fail the fork's workflow task: asked first.
  const { customAttributes, systemAttributes } = await client.connection.operatorService.listSearchAttributes({ namespace: Context.current().info.workflowNamespace });
  return { ...planned, indexed: CadreForkedFrom.name in { ...customAttributes, ...systemAttributes } };
}

/** A fork's conversation may be this big: it travels in the fork's input and its agent's. */
const MAX_RESUME_BYTES = 1_000_000;

/** The first `turn` turns of the agent the step ran, read by its query; or why they cannot be. */
async function agentAtTurn(source: ForkSource, step: string, turn: number): Promise<AgentResume | string> {
  const agent = source.records.find((r) => r.id === step)?.agent?.workflowId as string;
  let read: AgentForkSource;
  try {
    read = await Context.current().client.workflow.getHandle(agent).query(agentForkSourceQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return `the agent ${agent} of step "${step}" is not in this namespace (its history may be past retention)`;
    if (/did not register a handler for agentForkSource|QueryNotRegistered|unknown query/i.test((err as Error).message)) return `the agent ${agent} of step "${step}" was recorded by a cadre that could not fork agents at a turn yet`;
    throw err;
  }
  const cut = read.turnStarts[turn];
  if (cut === undefined) return `the agent ${agent} of step "${step}" took ${read.turnStarts.length} turns: fork at a turn before its last`;
  const resume = { turns: turn, from: agent, messages: read.messages.slice(0, cut), turnStarts: read.turnStarts.slice(0, turn) };
  const bytes = Buffer.byteLength(JSON.stringify(resume));
  if (bytes > MAX_RESUME_BYTES) return `the first ${turn} turns of step "${step}" hold ${bytes} bytes of messages, more than a fork carries (${MAX_RESUME_BYTES}): fork at an earlier turn, or from the step`;
  return resume;
}

function refused(issues: PlanIssue[]): ForkResult {
  return { ok: false, message: `the fork cannot start:\n${formatIssues(issues)}`, issues };
}

function requestIssues(input: ForkInput): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const fork = (input as { fork?: unknown }).fork;
  if (fork === null || typeof fork !== 'object' || Array.isArray(fork)) return [{ path: 'fork', message: 'must be { from, step, set? }' }];
  const { from, step, set } = fork as Record<string, unknown>;
  if (typeof from !== 'string' || from === '') issues.push({ path: 'fork.from', message: 'must be the id of the run to fork' });
  if (typeof step !== 'string' || step === '') issues.push({ path: 'fork.step', message: 'must be the id of the step to run again from' });
  if (set !== undefined && (set === null || typeof set !== 'object' || Array.isArray(set))) issues.push({ path: 'fork.set', message: 'must be a map of step ids to the outputs they are given' });
  const turn = (fork as Record<string, unknown>).turn;
  if (turn !== undefined && (typeof turn !== 'number' || !Number.isInteger(turn) || turn < 1)) issues.push({ path: 'fork.turn', message: 'must be a whole number of turns, 1 or more' });
  const plan = (fork as Record<string, unknown>).plan;
  const planProblem = plan === undefined ? undefined : COMPILED_PLAN_SHAPE(plan, 'fork.plan');
  if (planProblem) issues.push({ path: 'fork.plan', message: `must be a compiled plan, as \`cadre fork --plan\` sends it (${planProblem})` });
  const inputs = input.inputs;
  if (inputs !== undefined && (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs))) issues.push({ path: 'inputs', message: 'must be a map of input names to values' });
  return issues;
}

/**
 * Which steps run again, which are restored, and the new run's start. Run again: the fork step,
 * the steps that read an input given anew, those that read a step whose output `set` replaces, an
 * edited plan's new and changed steps, and everything downstream of them. Restored: every other step that completed (or was skipped) in the
 * old run, with its record and output. Any other step runs as in a new run. Pure.
 */
export function planFork(source: ForkSource, input: ForkInput): ForkResult {
  const { from, set = {} } = input.fork;
  const old = source.plan as unknown as CompiledPlan;
  // Onto an edited plan: a step whose action changed (or that is new) runs again, and says why.
  const plan = input.fork.plan ?? old;
  const edited = input.fork.plan ? editedSteps(old, plan) : new Map<string, string>();
  const records = new Map(source.records.map((r) => [r.id, r]));
  const ids = new Set(plan.steps.map((s) => s.id));
  // `enrich[3]`: one item of a forEach runs again, the others restored.
  const { step, item } = namedStep(input.fork.step, ids);
  const issues: PlanIssue[] = [];
  if (plan.source !== undefined) issues.push({ path: 'fork.from', message: `run ${from} works in a workspace cloned from a repository: forks of such runs are not supported yet` });
  const ran = records.get(step);
  if (!ids.has(step)) issues.push({ path: 'fork.step', message: `plan "${plan.name}" has no step "${step}"` });
  else if (!ran || ran.status === 'pending' || (ran.status === 'cancelled' && ran.startedAt === undefined)) {
    issues.push({ path: 'fork.step', message: `step "${step}" never ran in run ${from}: fork from a step that ran` });
  }
  if (input.fork.turn !== undefined && ran) issues.push(...turnIssues(plan, step, ran, input.fork.turn, from));
  const resolved = resolveInputs(plan, { ...source.inputs, ...input.inputs });
  if (!resolved.ok) issues.push(...resolved.issues);
  const changedInputs = resolved.ok ? Object.keys(plan.inputs).filter((name) => canonical(resolved.values[name]) !== canonical(source.inputs[name])) : [];
  // What runs again besides the fork step itself: what reads a changed input or output, and edited steps.
  const changed = new Set([...edited.keys(), ...plan.steps.filter((s) => readsInput(s, changedInputs) || s.needs.some((n) => Object.hasOwn(set, n))).map((s) => s.id)]);
  const rerun = downstream(plan, new Set([step, ...changed]));
  const items = item === undefined || !ran ? undefined : forkedItem(plan, source, step, item, downstream(plan, changed), from);
  if (typeof items === 'string') issues.push({ path: 'fork.step', message: items });
  for (const id of Object.keys(set)) {
    const record = records.get(id);
    if (!ids.has(id)) issues.push({ path: `fork.set.${id}`, message: `plan "${plan.name}" has no step "${id}"` });
    else if (rerun.has(id)) issues.push({ path: `fork.set.${id}`, message: `step "${id}" runs again in the fork (it is "${step}" or downstream of it): only a restored step's output can be set` });
    else if (record?.status !== 'completed') issues.push({ path: `fork.set.${id}`, message: `step "${id}" did not complete in run ${from}: there is no output to replace` });
  }
  const restored = plan.steps.filter((s) => !rerun.has(s.id) && (records.get(s.id)?.status === 'completed' || records.get(s.id)?.status === 'skipped'));
  const worktrees = restoredWorktrees(plan, restored, rerun, records);
  issues.push(...worktrees.issues);
  if (issues.length > 0 || !resolved.ok) return refused(issues);
  const payload = checkStartPayload(plan, resolved.values, (name) => `inputs.${name}`);
  if (payload.problem) return refused([payload.problem]);
  const note = `${RESTORED_NOTE}${from}`;
  const reasons = { ...Object.fromEntries(edited), ...turnReason(step, input.fork.turn, from), ...(typeof items === 'object' && { [step]: items.reason }) };
  const forked = {
    from,
    step: input.fork.step,
    ...(Object.keys(reasons).length > 0 && { reasons }),
    ...(typeof items === 'object' && { items: { [step]: items.items } }),
    ...(plan.team && restoredTeam(source, new Set(restored.map((s) => s.id)), note)),
    ...(worktrees.found.length > 0 && { worktrees: worktrees.found }),
    records: restored.map((s) => restoredRecord(records.get(s.id) as StepRecord, Object.hasOwn(set, s.id) ? `${note}, its output set by the fork` : note)),
    outputs: Object.fromEntries(restored.flatMap((s) => (Object.hasOwn(set, s.id) ? [[s.id, set[s.id]]] : s.id in source.outputs ? [[s.id, source.outputs[s.id]]] : []))),
  };
  return { ok: true, start: { plan, inputs: resolved.values, ...(input.limits && { limits: input.limits }), forked }, rerun: plan.steps.filter((s) => rerun.has(s.id)).map((s) => s.id), indexed: false };
}

/**
 * A team's fork: the board's records of the workers of restored steps (their items too), saying
 * so, and the answers the team remembers, so a worker that runs again and asks again is answered
 * as before. Specialists and the workers of steps that run again start afresh.
 */
function restoredTeam(source: ForkSource, restored: Set<string>, note: string): Pick<ForkRestore, 'workers' | 'teamAnswers'> {
  const workers = (source.workers ?? []).filter((w) => restored.has(w.step.replace(/\[\d+\]$/, ''))).map((w) => ({ ...w, reason: note }));
  return { workers, teamAnswers: source.teamAnswers ?? [] };
}

/** The step a fork names: a step of the plan, or one item of a forEach (`enrich[3]`). */
function namedStep(named: string, ids: Set<string>): { step: string; item?: number } {
  const item = ids.has(named) ? null : /^(.+)\[(\d+)\]$/.exec(named);
  return item && ids.has(item[1]) ? { step: item[1], item: Number(item[2]) } : { step: named };
}

/**
 * A forEach forked at one item: the old run's outputs of the others, restored; or why it cannot be
 * (the step is no forEach, did not complete, keeps its outputs by reference, or runs again whole).
 */
function forkedItem(plan: CompiledPlan, source: ForkSource, step: string, item: number, changed: Set<string>, from: string): { items: ForkItems; reason: string } | string {
  const outputs = source.outputs[step];
  if (plan.steps.find((s) => s.id === step)?.forEach === undefined) return `step "${step}" is not a forEach: "${step}[${item}]" names no item`;
  if (source.records.find((r) => r.id === step)?.status !== 'completed') return `step "${step}" did not complete in run ${from}: fork from the whole step`;
  if (!Array.isArray(outputs)) return `the outputs of step "${step}" are stored by reference (a long or big forEach): fork from the whole step`;
  if (outputs.length > FOREACH_CHILD_THRESHOLD) return `step "${step}" ran its ${outputs.length} items in child workflows: fork from the whole step`;
  if (item >= outputs.length) return `step "${step}" had ${outputs.length} items in run ${from}: there is no item ${item}`;
  if (changed.has(step)) return `step "${step}" runs again whole in the fork (it reads what the fork changes): fork from the whole step`;
  return { items: { rerun: item, outputs }, reason: `ran again for item ${item} only: its other ${outputs.length - 1} items restored from ${from}` };
}

/** Why a fork at a turn cannot be, from the plan and the step's record: not an agent, or not that many turns. */
function turnIssues(plan: CompiledPlan, step: string, ran: StepRecord, turn: number, from: string): PlanIssue[] {
  const planned = plan.steps.find((s) => s.id === step);
  const problem =
    planned?.action.kind !== 'agent'
      ? `step "${step}" is a ${planned?.action.kind} step: only an agent step forks at a turn`
      : planned.forEach !== undefined
        ? `step "${step}" is a forEach: its agents do not fork at a turn yet`
        : ran.agent?.workflowId === undefined
          ? `step "${step}" started no agent in run ${from}`
          : (ran.agent.turns ?? 0) <= turn
            ? `step "${step}" took ${ran.agent.turns ?? 0} turns in run ${from}: fork at a turn before its last`
            : undefined;
  return problem === undefined ? [] : [{ path: 'fork.turn', message: problem }];
}

function turnReason(step: string, turn: number | undefined, from: string): Record<string, string> {
  return turn === undefined ? {} : { [step]: `ran again from turn ${turn + 1}: its first ${turn} turns restored from ${from}` };
}

/** The steps of an edited plan that run again, and why: new, or with an action other than the old run's. */
function editedSteps(old: CompiledPlan, edited: CompiledPlan): Map<string, string> {
  const before = new Map(old.steps.map((s) => [s.id, s]));
  const what = (s: CompiledPlan['steps'][number]) => canonical({ action: s.action, when: s.when, forEach: s.forEach, as: s.as, worktree: s.worktree });
  const reasons = new Map<string, string>();
  for (const s of edited.steps) {
    const was = before.get(s.id);
    if (!was) reasons.set(s.id, "ran again: it is new in the fork's plan");
    else if (what(was) !== what(s)) reasons.set(s.id, "ran again: its action changed in the fork's plan");
  }
  return reasons;
}

/** The step and everything that needs it, however far down. */
function downstream(plan: CompiledPlan, seeds: Set<string>): Set<string> {
  const found = new Set(seeds);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of plan.steps) {
      if (!found.has(s.id) && s.needs.some((n) => found.has(n))) {
        found.add(s.id);
        grew = true;
      }
    }
  }
  return found;
}

/** Whether a step's templates read one of `names` (`inputs.name`, or `inputs["name"]`). */
function readsInput(step: CompiledPlan['steps'][number], names: string[]): boolean {
  if (names.length === 0) return false;
  const text = JSON.stringify(step);
  return names.some((name) => text.includes(`inputs.${name}`) || text.includes(`inputs[\\"${name}\\"]`) || text.includes(`inputs['${name}']`));
}

/**
 * The worktrees restored steps worked in, each as the last of them left it (its snapshot): the
 * fork's own worktree of that task starts there. A run from before snapshots has none to start
 * from, so a step that runs again in such a worktree is refused.
 */
function restoredWorktrees(plan: CompiledPlan, restored: CompiledPlan['steps'], rerun: Set<string>, records: Map<string, StepRecord>): { found: ForkWorktree[]; issues: PlanIssue[] } {
  const key = (w: { repo: string; task: string }) => `${w.repo}\0${w.task}`;
  const last = new Map<string, ForkWorktree | undefined>();
  const inWorktrees = restored.filter((s) => s.worktree && records.get(s.id)?.status === 'completed');
  const endedAt = (s: CompiledPlan['steps'][number]) => records.get(s.id)?.endedAt ?? '';
  for (const s of inWorktrees.sort((a, b) => endedAt(a).localeCompare(endedAt(b)))) {
    const worktree = s.worktree as NonNullable<typeof s.worktree>;
    const snapshot = records.get(s.id)?.worktree;
    // One without a snapshot spoils the task: where the worktree was left is not known.
    if (last.has(key(worktree)) && last.get(key(worktree)) === undefined) continue;
    last.set(key(worktree), snapshot && { repo: worktree.repo, task: worktree.task, ...snapshot });
  }
  const issues = plan.steps.flatMap((s, index) =>
    s.worktree && rerun.has(s.id) && last.has(key(s.worktree)) && last.get(key(s.worktree)) === undefined
      ? [{ path: `steps[${index}].worktree`, message: `step "${s.id}" runs again in worktree task "${s.worktree.task}", which restored steps worked in, and the run they ran in kept no snapshot of it (it ran before cadre kept them, or taking one failed)` }]
      : [],
  );
  return { found: [...last.values()].filter((w): w is ForkWorktree => w !== undefined), issues };
}

function restoredRecord(record: StepRecord, note: string): StepRecord {
  const kept: StepRecord = { ...record, note };
  delete kept.retrying;
  return kept;
}
