/**
 * The team run's side of questions: a worker's `ask_question` comes here as a signal. The same
 * question asked before is answered from memory; otherwise a specialist role (routed from the
 * question, or the one the asker named) answers it as a child `agentTask` with a confidence. A sure
 * answer goes back to the asker; an unsure one, or none, sends the asker to a person. Consultations
 * are bounded in depth, and a loop (A asks B asks A) is cut with a note. Event-driven: nothing polls.
 */
import type { SandboxSpec } from '../../sandbox/profile';
import { type HostRoute, hostActivities } from '../common/host-route';
import { executeChild, getExternalWorkflowHandle, workflowInfo } from '@temporalio/workflow';
import type { TeamRole } from '../../activities/roles';
import { suggestRole } from '../../roles/router';
import { DEFAULT_AGENT_TURNS, type TeamSpec } from '../../plan-format/types';
import { AGENT_TASK_WORKFLOW, type AgentTaskInput, type AgentTaskWorkflow, type TeamWorker } from '../../protocol/agent-task';
import { type ConsultationRecord, type TeamQuestion, type TeamReply, type WorkerRecord, teamLearnedSignal, teamQuestionSignal, teamReplySignal } from '../../protocol/definitions';
import { describeFailure } from '../common/failures';
import { withRole } from '../../roles/team-roles';
import { type RunLimits, onSignal } from '../common/run-limits';

const KEPT_CONSULTATIONS = 200;

/** The team's memory, carried across continue-as-new. */
export interface CarriedTeam {
  answers: [string, { answer: string; by: string }][];
  consultations: ConsultationRecord[];
  escalated: string[];
  consulted: number;
}
const MAX_NOTE_CHARS = 1000;

const ROLE_FILE_OPTIONS = { startToCloseTimeout: '30s', heartbeatTimeout: '10s', retry: { maximumAttempts: 3 }, summary: 'team roles' } as const;

export class Team {
  private roleList?: Promise<TeamRole[]>;
  /** Answers by question, as normalised by `questionKey`. */
  private readonly answers = new Map<string, { answer: string; by: string }>();
  private readonly consultations: ConsultationRecord[] = [];
  /** Questions sent on to a person, whose answers the run may remember. */
  private readonly escalated = new Set<string>();
  private consulted = 0;
  private inFlight = 0;

  constructor(
    private readonly spec: TeamSpec,
    /** The run's workspace: a clone's folder changes when the run moves to another host. */
    private readonly workspace: () => string,
    private readonly sandbox: SandboxSpec | undefined,
    private readonly track: (workflowId: string, step: string, role: string) => void,
    private readonly changed: () => void,
    limits: RunLimits,
    /** What specialists are told of streams and limits, as the run's other agents. */
    private readonly childInput: () => Pick<AgentTaskInput, 'ownStream' | 'limits' | 'hostQueue' | 'hostLostAfterMs' | 'runBudget'>,
    /** The host the run's workspace is bound to: its roles/ folder is read there. */
    private readonly route: () => HostRoute | undefined = () => undefined,
  ) {
    onSignal(limits, teamQuestionSignal, (question) => {
      void this.consult(question);
    });
    // A person's answer to a question this run sent to a person (anyone can send signals).
    onSignal(limits, teamLearnedSignal, (learned) => {
      const { question, answer } = learned ?? {};
      if (typeof question !== 'string' || typeof answer !== 'string' || answer.trim() === '') return;
      const key = questionKey(question);
      if (this.escalated.delete(key)) this.answers.set(key, { answer, by: 'a person' });
    });
  }

  /** The roles, read once per run (history keeps them, so a replay sees the same). */
  roles(): Promise<TeamRole[]> {
    // The workspace's roles/ folder is read on the host that holds it (a fleet).
    this.roleList ??= hostActivities(ROLE_FILE_OPTIONS, this.route()).teamRoles({ workspace: this.workspace() });
    return this.roleList;
  }

  /** The team part of a worker's input. */
  async worker(role: string | undefined, chain: string[], depth: number): Promise<TeamWorker> {
    return { ...this.spec, runId: workflowInfo().workflowId, roles: await this.roles(), ...(role !== undefined && { role }), chain, depth };
  }

  records(): ConsultationRecord[] {
    return this.consultations.map((c) => ({ ...c }));
  }

  /** Questions being answered now: a run does not continue as new under them (their specialists are its children). */
  get consulting(): number {
    return this.inFlight;
  }

  /** What the team learnt, for a run that continues as new. */
  carried(): CarriedTeam {
    return { answers: [...this.answers], consultations: this.records(), escalated: [...this.escalated], consulted: this.consulted };
  }

  restore(team: CarriedTeam): void {
    for (const [key, answer] of team.answers) this.answers.set(key, answer);
    this.consultations.push(...team.consultations);
    for (const key of team.escalated) this.escalated.add(key);
    this.consulted = team.consulted;
  }

  /** A specialist's first state signal: when it started on the question. */
  workerChanged(record: WorkerRecord): void {
    const consultation = this.consultations.find((c) => c.specialist === record.workflowId);
    if (consultation && consultation.specialistStartedAt === undefined) consultation.specialistStartedAt = record.since;
  }

  private async consult(q: TeamQuestion): Promise<void> {
    if (!isQuestion(q)) return; // anyone can send signals; only a worker's well-formed question is taken
    const record: ConsultationRecord = { id: q.id, from: q.step, question: clip(q.question, 300), outcome: 'consulting', askedAt: q.at };
    this.consultations.push(record);
    if (this.consultations.length > KEPT_CONSULTATIONS) this.consultations.shift();
    this.changed();
    this.inFlight++;
    try {
      const reply = await this.answer(q, record);
      if (reply.outcome === 'escalate') this.escalated.add(questionKey(q.question));
      record.outcome = reply.outcome === 'escalate' ? 'escalated' : reply.outcome;
      if (reply.confidence !== undefined) record.confidence = reply.confidence;
      if (reply.note !== undefined) record.note = reply.note;
      this.changed();
      await getExternalWorkflowHandle(q.from).signal(teamReplySignal, reply);
    } catch {
      // The asker ended (cancelled, failed): nobody waits for the reply.
    } finally {
      this.inFlight--;
    }
  }

  private async answer(q: TeamQuestion, record: ConsultationRecord): Promise<TeamReply> {
    const known = this.answers.get(questionKey(q.question));
    if (known) return { id: q.id, outcome: 'cached', answer: known.answer, by: known.by };
    const roles = await this.roles();
    const asker = q.chain[q.chain.length - 1];
    const named = q.canBeAnsweredBy !== undefined && roles.some((r) => r.name === q.canBeAnsweredBy) ? q.canBeAnsweredBy : undefined;
    const target = named ?? suggestRole(q.question, roles.filter((r) => r.name !== asker))[0]?.role;
    if (target === undefined) return { id: q.id, outcome: 'escalate', note: 'no specialist role fits the question' };
    record.to = target;
    if (q.chain.includes(target)) {
      return { id: q.id, outcome: 'cut', note: `consultation loop cut: ${[...q.chain, target].join(' → ')} would ask the ${target} again. Decide yourself, or signal blocked for a person.` };
    }
    if (q.chain.length > this.spec.maxConsultDepth) {
      return { id: q.id, outcome: 'cut', note: `consultation depth ${this.spec.maxConsultDepth} reached (${q.chain.join(' → ')}): decide yourself, or signal blocked for a person.` };
    }
    const label = `consult-${++this.consulted}`;
    const workflowId = `${workflowInfo().workflowId}/${label}`;
    const agent = withRole({ role: target, prompt: q.question, tools: [], maxTurns: DEFAULT_AGENT_TURNS, approvals: {}, approvalTimeout: this.spec.escalationTimeout }, roles, this.spec.model);
    if (typeof agent === 'string') return { id: q.id, outcome: 'escalate', note: agent };
    const prompt = specialistPrompt(q, asker, target, this.spec.confidence);
    record.specialist = workflowId;
    this.track(workflowId, label, target);
    try {
      const result = await executeChild<AgentTaskWorkflow>(AGENT_TASK_WORKFLOW, {
        workflowId,
        args: [
          {
            step: label,
            action: { kind: 'agent', agent },
            prompt,
            workspace: this.workspace(),
            team: await this.worker(target, [...q.chain, target], 0),
            ...(this.sandbox && { sandbox: this.sandbox }),
            ...this.childInput(),
          },
        ],
      });
      const said = specialistAnswer(result.output);
      if (!said) return { id: q.id, outcome: 'escalate', note: `the ${target} gave no answer with a confidence: ${clip(JSON.stringify(result.output) ?? 'nothing', MAX_NOTE_CHARS)}` };
      if (said.confidence >= this.spec.confidence) {
        this.answers.set(questionKey(q.question), { answer: said.answer, by: target });
        return { id: q.id, outcome: 'answered', answer: said.answer, by: target, confidence: said.confidence };
      }
      return { id: q.id, outcome: 'escalate', confidence: said.confidence, note: `the ${target} was not sure (confidence ${said.confidence}): ${clip(said.answer, MAX_NOTE_CHARS)}` };
    } catch (err) {
      return { id: q.id, outcome: 'escalate', note: `the ${target} could not answer: ${clip(describeFailure(err).message, MAX_NOTE_CHARS)}` };
    }
  }
}

function specialistPrompt(q: TeamQuestion, asker: string | undefined, target: string, confidence: number): string {
  return [
    `A teammate (${asker ? `the ${asker}, ` : ''}working on ${q.step}) asks you, the ${target}:`,
    '',
    q.question,
    '',
    'Answer from what you know and what your tools show. Finish with signal_state: state completing, and as result',
    `{ "answer": "...", "confidence": 0.0 to 1.0 } saying how sure you are; below ${confidence} the question goes to a person.`,
  ].join('\n');
}

/** `{ answer, confidence }`, also when the model sent it as JSON text. */
function specialistAnswer(output: unknown): { answer: string; confidence: number } | undefined {
  let value = output;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { answer, confidence } = value as { answer?: unknown; confidence?: unknown };
  if (typeof answer !== 'string' || answer.trim() === '' || typeof confidence !== 'number' || !(confidence >= 0 && confidence <= 1)) return undefined;
  return { answer, confidence };
}

/** The same question: case, spacing and a trailing question mark aside. */
function questionKey(question: string): string {
  return question.trim().toLowerCase().replace(/\s+/g, ' ').replace(/\?+$/, '');
}

function isQuestion(q: TeamQuestion): boolean {
  return (
    typeof q?.from === 'string' &&
    typeof q.id === 'string' &&
    typeof q.step === 'string' &&
    typeof q.question === 'string' &&
    q.question.trim() !== '' &&
    Array.isArray(q.chain) &&
    q.chain.every((r) => typeof r === 'string')
  );
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
