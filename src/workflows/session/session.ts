/**
 * `session`: a conversation with an agent that lasts as long as people keep talking to it. A message
 * comes in by the `send` update (Update-with-Start makes the first one start the session) and the
 * reply is the update's result. Messages are answered one at a time, in order, by the same loop as
 * agent steps (agent-loop.ts). The last `keep` messages stay in context; older ones are folded into a
 * summary by the model (an offline model cannot summarise: they are dropped, with a note). The
 * session continues as new every `continueEvery` messages or when Temporal suggests it, carrying
 * its state, so it can run for thousands of turns without nearing Temporal's history limits.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { DEFAULT_AGENT_TURNS, DEFAULT_APPROVAL_TIMEOUT } from '../../plan-format/types';
import { AgentLoop, asFailure } from '../agent/agent-loop';
import { answerUpdate, moveHostUpdate } from '../../protocol/definitions';
import { WorkspaceHostBinding } from '../plan/workspace-host';
import { type SendResult, type SessionDiagnostics, type SessionInput, type SessionState, endSessionSignal, sendUpdate, sessionDiagnosticsQuery } from '../../protocol/session';
import { sessionForkSourceQuery } from '../../protocol/forks';
import { SUMMARY_SYSTEM, nextUser, summaryRequest, validateMessage } from '../../protocol/session-messages';
import { sizeOf } from '../common/sizes';
import { checkInput, count, flag, listOf, map, oneOf, optional, shape, text } from '../../protocol/input-checks';
import { DEFAULT_WARN_AT } from '../../protocol/budget';
import { type OwnEvent, RunStream } from '../common/run-stream';
import { RunLimits, onSignal, onUpdate } from '../common/run-limits';
import { SHED_SHARE, StreamBudget } from '../agent/stream-budget';
import { PATCH_SESSION_EVENTS, PATCH_SESSION_HOSTS, SESSION_BASELINES } from '../../protocol/patches';
import { PatchBaselines } from '../patch-baselines';

export const SESSION_DEFAULTS = { keep: 50, continueEvery: 100 };
/** Messages beyond `keep` are folded this many at a time, so summaries are not made every turn. */
const FOLD_BATCH = 20;
/** What the kept messages may weigh: continue-as-new carries them, and its input has Temporal's 2 MB limit. */
const MAX_CONTEXT_BYTES = 1024 * 1024;

const SESSION_INPUT = shape({
  tools: listOf(text),
  approvals: map,
  workspace: text,
  model: optional(text),
  system: optional(text),
  maxTurns: optional(count),
  keep: optional(count),
  continueEvery: optional(count),
  state: optional(map),
  streamState: optional(map),
  streamFollowed: optional(flag),
  limits: optional(map),
  budget: optional(shape({ tokens: optional(count), toolCalls: optional(count), cost: optional(count), warnAt: optional(count), onBudget: optional(oneOf('ask', 'stop')) })),
  host: optional(shape({ host: text, taskQueue: text })),
  hostMoves: optional(listOf(shape({ from: text, to: text, at: text }))),
});

export async function session(input: SessionInput): Promise<SessionDiagnostics> {
  checkInput('session', input, SESSION_INPUT);
  return new Session(input).run();
}

interface Pending {
  id: number;
  text: string;
}

class Session {
  private readonly state: SessionState;
  /** What earlier runs of the session counted; this run's loop counts from zero. */
  private readonly before: Pick<SessionState, 'turns' | 'toolCalls' | 'usage'>;
  /** Made once the session knows where its workspace is: its model turns and tools go to that host. */
  private loop?: AgentLoop;
  private readonly makeLoop: () => AgentLoop;
  /** The host the workspace is bound to, in a fleet (plan/workspace-host.ts). */
  private readonly host = new WorkspaceHostBinding(() => this.publish());
  /** A new session with tools, on this code: it binds its workspace before its first reply. */
  private readonly binds: boolean;
  private readonly inbox: Pending[] = [];
  private readonly replies = new Map<number, SendResult | { error: ApplicationFailure }>();
  private received = 0;
  private answeredThisRun = 0;
  private ending = false;
  /** The session's stream: its agent's turns as they are written, its waits and replies. */
  private readonly stream: RunStream;
  private readonly limits: RunLimits;
  /** Runs since patch session-own-events: see PATCH_SESSION_EVENTS. */
  private readonly ownEvents: boolean;

  constructor(private readonly input: SessionInput) {
    // First: a new run records its baseline's marker before any patch is asked (protocol/patches.ts).
    const patches = new PatchBaselines(SESSION_BASELINES);
    // The stream is part of what a session replays (readers' long polls return when it grows): runs recorded earlier publish as they did.
    const ownEvents = (this.ownEvents = patches.has(PATCH_SESSION_EVENTS));
    this.limits = new RunLimits(input.limits, (warning) => ownEvents && this.stream.publish({ type: 'limits_warning', step: 'session', ...warning }));
    this.stream = new RunStream(input.streamState, this.limits, input.streamFollowed === true);
    const budget = new StreamBudget(this.limits, (reason) => this.stream.publish({ type: 'stream_shed', step: 'session', reason }));
    const streamHooks = ownEvents ? { publish: (event: OwnEvent) => this.stream.publish(event), streamBudget: () => budget.nextTurn() } : {};
    this.state = input.state ?? { messages: [], dropped: 0, summarised: 0, answered: 0, runs: 0, turns: 0, toolCalls: 0, usage: { inputTokens: 0, outputTokens: 0 } };
    this.state.runs += 1;
    this.before = { turns: this.state.turns, toolCalls: this.state.toolCalls, usage: { ...this.state.usage } };
    this.makeLoop = () => new AgentLoop(
      {
        label: 'session',
        ...(input.model !== undefined && { model: input.model }),
        tools: input.tools,
        approvals: input.approvals,
        approvalTimeout: input.approvalTimeout ?? DEFAULT_APPROVAL_TIMEOUT,
        maxTurns: input.maxTurns ?? DEFAULT_AGENT_TURNS,
        workspace: input.workspace,
        stream: { workflowId: workflowInfo().workflowId, turnBase: this.before.turns },
        // Any client may send a budget without warnAt or onBudget: the defaults a plan's agent gets.
        ...(input.budget && { budget: { warnAt: DEFAULT_WARN_AT, onBudget: 'ask' as const, ...input.budget }, ...(this.state.budget && { budgetCarried: this.state.budget }) }),
        ...(this.host.route && { route: this.host.route }),
      },
      { changed: () => this.publish(), waitsChanged: () => this.publish(), ...streamHooks },
      patches,
    );
    // Where its tools run (docs/operations.md, A fleet): a continued session is where it was; a new one
    // with tools binds its workspace as a plan run does. Sessions recorded before made their loop here,
    // and its patch markers must come before the first message's acceptance as they did.
    if (input.host) {
      this.host.restore(input.host);
      this.host.moves.push(...(input.hostMoves ?? []));
    }
    this.binds = input.host === undefined && input.tools.length > 0 && patches.has(PATCH_SESSION_HOSTS);
    if (!this.binds) this.loop = this.makeLoop();
    onUpdate(
      this.limits,
      sendUpdate,
      async ({ text }) => {
        const id = ++this.received;
        this.inbox.push({ id, text });
        await condition(() => this.replies.has(id));
        const reply = this.replies.get(id) as SendResult | { error: ApplicationFailure };
        this.replies.delete(id);
        if ('error' in reply) throw reply.error;
        return reply;
      },
      { validator: (message) => validateMessage(message?.text, this.ending) },
    );
    onUpdate(this.limits, answerUpdate, ({ waitId, value }) => (this.agent.waits.accept(waitId, value), { accepted: true as const }), {
      validator: (answer) => {
        if (!this.loop) throw ApplicationFailure.nonRetryable('the session is starting: nothing waits for an answer yet', 'AnswerRejected');
        this.loop.waits.validate(answer?.waitId, answer?.value);
      },
    });
    onUpdate(this.limits, moveHostUpdate, ({ to }) => this.host.moveTo(to, input.workspace), { validator: (move) => this.host.checkMove(move?.to) });
    onSignal(this.limits, endSessionSignal, () => {
      this.ending = true;
    });
    setHandler(sessionDiagnosticsQuery, () => this.diagnostics());
    setHandler(sessionForkSourceQuery, () => {
      const started = { ...this.input };
      delete started.state;
      delete started.streamState;
      delete started.streamFollowed;
      // A fork binds its workspace itself.
      delete started.host;
      delete started.hostMoves;
      return { input: started, state: this.state };
    });
  }

  async run(): Promise<SessionDiagnostics> {
    if (this.binds) await this.bind();
    this.publish();
    for (;;) {
      await condition(() => this.inbox.length > 0 || this.ending);
      const next = this.inbox.shift();
      if (next) {
        await this.answer(next);
        continue;
      }
      // Ending: every accepted message has its reply; let the handlers return them.
      await condition(allHandlersFinished);
      if (this.inbox.length === 0) {
        this.stream.publish({ type: 'run_completed', status: 'completed' });
        await this.stream.drain();
        return this.diagnostics();
      }
    }
  }

  /** Binds the workspace to the host that holds it, then makes the loop whose activities go there. */
  private async bind(): Promise<void> {
    try {
      await this.host.bind(this.input.workspace);
    } catch (err) {
      if (!(err instanceof ApplicationFailure)) throw err;
      // No host holds the workspace: each message sent so far gets the reason as its reply, and the session fails with it.
      this.ending = true;
      for (const { id } of this.inbox.splice(0)) this.replies.set(id, { error: err });
      await condition(allHandlersFinished);
      throw err;
    }
    this.loop = this.makeLoop();
  }

  private get agent(): AgentLoop {
    if (!this.loop) throw new Error('the session has no agent loop before it starts');
    return this.loop;
  }

  private async answer({ id, text }: Pending): Promise<void> {
    this.agent.record({ event: 'message.received', chars: text.length });
    const messages = this.state.messages;
    messages.push({ role: 'user', content: text });
    try {
      const output = await this.agent.respond(messages, this.system());
      this.state.answered += 1;
      this.replies.set(id, { reply: typeof output === 'string' ? output : JSON.stringify(output), message: this.state.answered, inContext: messages.length, run: this.state.runs, offset: this.stream.offset });
    } catch (err) {
      if (isCancellation(err)) throw err;
      const failure = asFailure(err);
      // The session goes on: the sender learns why this message got no answer.
      this.replies.set(id, { error: ApplicationFailure.create({ type: failure.type ?? 'SessionTurnFailed', message: failure.message, nonRetryable: true }) });
    }
    // Where each exchange ends, for a fork that holds the first N (client/session-fork.ts); folding ends that.
    if (this.state.summarised + this.state.dropped === 0) (this.state.exchanges ??= []).push(messages.length);
    this.answeredThisRun += 1;
    this.syncCounts();
    await this.fold();
    this.publish();
    // Temporal's suggestion (history, updates), half of any limit (signals too), or every `continueEvery` messages.
    const nearLimits = this.ownEvents && this.limits.over(SHED_SHARE) !== undefined;
    const due = workflowInfo().continueAsNewSuggested || nearLimits || this.answeredThisRun >= (this.input.continueEvery ?? SESSION_DEFAULTS.continueEvery);
    if (this.inbox.length === 0 && due) {
      await this.continueAsNew();
    }
  }

  /** Continues as new once every reply has gone out; a message that arrives meanwhile is answered first. */
  private async continueAsNew(): Promise<void> {
    await condition(() => allHandlersFinished() || this.inbox.length > 0);
    if (this.inbox.length > 0 || this.ending) return;
    // Readers' long polls return first; they find the stream again on the next run.
    this.stream.detach();
    await condition(() => allHandlersFinished() || this.inbox.length > 0);
    if (this.inbox.length > 0) return this.stream.resume();
    await continueAsNew<typeof session>({ ...this.input, state: this.state, streamState: this.stream.carried(), ...(this.stream.followed && { streamFollowed: true }), ...this.host.carried(false) });
  }

  /** Keeps the last `keep` messages (whole exchanges: a tool result stays with its call) and folds the rest. */
  private async fold(): Promise<void> {
    const messages = this.state.messages;
    const keep = this.input.keep ?? SESSION_DEFAULTS.keep;
    if (messages.length <= keep + FOLD_BATCH && sizeOf(messages) <= MAX_CONTEXT_BYTES) return;
    let cut = nextUser(messages, messages.length - keep);
    while (cut < messages.length - 1 && sizeOf(messages.slice(cut)) > MAX_CONTEXT_BYTES) cut = nextUser(messages, cut + 1);
    if (cut <= 0 || cut >= messages.length) return;
    // Removed only once summarised, so what a query sees always adds up.
    const folded = messages.slice(0, cut);
    if (this.input.model?.startsWith('scripted:')) {
      messages.splice(0, cut);
      this.state.dropped += folded.length;
      delete this.state.exchanges;
      return;
    }
    try {
      const turn = await this.agent.complete([{ role: 'user', content: summaryRequest(this.state.summary, folded) }], SUMMARY_SYSTEM);
      this.state.summary = turn.text ?? this.state.summary;
      this.state.summarised += folded.length;
    } catch (err) {
      if (isCancellation(err)) throw err;
      // No summary (the model refused, or cannot): the messages go, and the context says so.
      this.state.dropped += folded.length;
    }
    messages.splice(0, cut);
    delete this.state.exchanges;
    this.syncCounts();
  }

  private system(): string | undefined {
    const notes = [
      this.state.summary && `Summary of the earlier conversation (${this.state.summarised} messages): ${this.state.summary}`,
      this.state.dropped > 0 && `(${this.state.dropped} earlier messages are no longer in this conversation.)`,
    ].filter(Boolean);
    if (notes.length === 0) return this.input.system;
    return [this.input.system, ...notes].filter(Boolean).join('\n\n');
  }

  private syncCounts(): void {
    const { turns, toolCalls, usage } = this.before;
    const loop = this.agent;
    this.state.turns = turns + loop.turns;
    this.state.toolCalls = toolCalls + loop.toolCalls;
    this.state.usage = { inputTokens: usage.inputTokens + loop.usage.inputTokens, outputTokens: usage.outputTokens + loop.usage.outputTokens };
    // The ledger goes with the state: into the next run (continue-as-new), and into a fork of the session.
    if (loop.ledger) this.state.budget = loop.ledger.summary();
  }

  private diagnostics(): SessionDiagnostics {
    return {
      answered: this.state.answered,
      inContext: this.state.messages.length,
      summarised: this.state.summarised,
      dropped: this.state.dropped,
      run: this.state.runs,
      turns: this.state.turns,
      toolCalls: this.state.toolCalls,
      usage: { ...this.state.usage },
      queued: this.inbox.length,
      waiting: this.loop?.waiting() ?? [],
      ending: this.ending,
      limits: this.limits.usage(),
      ...(this.loop?.ledger && { budget: this.loop.ledger.summary() }),
      ...(this.host.host && { host: this.host.host.host }),
      ...(this.host.moves.length > 0 && { hostMoves: [...this.host.moves] }),
    };
  }

  private publish(): void {
    const d = this.diagnostics();
    this.stream.announceWaits(d.waiting);
    const lines = [
      `**session**: ${d.answered} messages answered${d.queued ? `, ${d.queued} queued` : ''}`,
      '',
      `- in context: ${d.inContext} messages${d.summarised ? `, ${d.summarised} summarised` : ''}${d.dropped ? `, ${d.dropped} dropped` : ''}`,
      `- run ${d.run} of the session (it continues as new to keep history short)`,
      `- ${d.turns} model turns, ${d.toolCalls} tool calls, ${d.usage.inputTokens + d.usage.outputTokens} tokens`,
      ...(d.host ? [`- on host ${d.host}${d.hostMoves ? ` (moved from ${d.hostMoves.map((m) => m.from).join(', ')})` : ''}`] : []),
      ...d.waiting.map((w) => (w.kind === 'host' ? `- ${w.prompt}` : `- waiting for approval \`${w.id}\`: \`cadre approve ${workflowInfo().workflowId} ${w.id}\``)),
    ];
    setCurrentDetails(lines.join('\n'));
  }
}
