/**
 * What a run waits on a human for, and the answers. An answer closes its wait at once, in
 * the update handler, so the first valid answer wins and every later one is rejected by the
 * validator before it reaches history ("already answered with ...").
 */
import { ApplicationFailure, condition } from '@temporalio/workflow';
import { durationMs } from '../../plan-format/duration';
import { isoAt, nowMs } from '../common/clock';
import { humanWaited } from './metrics';
import type { ApprovalDetail, WaitKind, Waiting } from '../../protocol/definitions';
import type { HumanWaitOutcome } from '../../analytics/types';
import { answerProblem, answerTextProblem, shorten } from '../../protocol/answers';
import { PATCH_VISIBLE_WAITS } from '../../protocol/patches';
import type { Patches } from '../patch-baselines';

export { MAX_ANSWER_CHARS, splitAnswer } from '../../protocol/answers';

/** A rejected answer: final, so clients (the `temporal` CLI, other SDKs) do not offer to retry it. */
export function rejected(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'AnswerRejected');
}

const NO_TIMEOUT_RENEWAL_MS = 365 * 24 * 60 * 60 * 1000;

export interface WaitRequest {
  id: string;
  kind: WaitKind;
  prompt: string;
  choices?: string[];
  timeout?: string;
  detail?: ApprovalDetail;
}

export class HumanWaits {
  private readonly open = new Map<string, Waiting>();
  private readonly answers = new Map<string, string>();
  private readonly lastAnswer = new Map<string, string>();
  /** Every wait that ended, in order, for run analytics. */
  readonly ended: HumanWaitOutcome[] = [];

  /**
   * @param firstAnswerWins false only while replaying runs recorded before answers closed their
   *   wait in the handler: those applied every accepted answer, the last one winning.
   */
  constructor(
    private readonly firstAnswerWins: boolean,
    private readonly onAnswer: () => void,
    /** The workflow's patches (visible-waits: in runPlan's newest baseline, asked by itself elsewhere). */
    private readonly patches: Patches,
  ) {}

  list(): Waiting[] {
    return [...this.open.values()];
  }

  get size(): number {
    return this.open.size;
  }

  clear(): void {
    this.open.clear();
  }

  /** Whether `id` waits or was answered: this set of waits is the one to validate an answer to it. */
  knows(id: string): boolean {
    return this.open.has(id) || this.lastAnswer.has(id);
  }

  /** Closes a wait without an answer (another workflow that waited has moved on). */
  close(id: string): void {
    this.open.delete(id);
  }

  /**
   * Waits for an answer to `id`; undefined when `timeout` passes first. `hooks` run right after
   * the wait opens and right after it closes (the run shows its status there).
   */
  async wait(request: WaitRequest, hooks: { opened(): void; closed(): void }): Promise<string | undefined> {
    const { id, timeout } = request;
    this.openWait(request);
    hooks.opened();
    const openedMs = nowMs();
    try {
      const answered = timeout
        ? await condition(() => this.answers.has(id), durationMs(timeout), { summary: `${id}: waiting for a human` })
        : await this.untilAnswered(id);
      const outcome = answered ? 'answered' : 'timed_out';
      const waitedMs = nowMs() - openedMs;
      humanWaited(request.kind, outcome, waitedMs);
      this.ended.push({ step: id, kind: request.kind, outcome, waitedMs });
      return answered ? this.answers.get(id) : undefined;
    } finally {
      this.open.delete(id);
      this.answers.delete(id);
      hooks.closed();
    }
  }

  private async untilAnswered(id: string): Promise<true> {
    if (!this.patches.has(PATCH_VISIBLE_WAITS)) {
      await condition(() => this.answers.has(id));
      return true;
    }
    const summary = `${id}: waiting for a human (no timeout)`;
    while (!(await condition(() => this.answers.has(id), NO_TIMEOUT_RENEWAL_MS, { summary }))) {
      // A year passed unanswered: wait on, with a new timer the timeline shows.
    }
    return true;
  }

  /** Opens a wait without waiting on it (the workflow waits in `wait`; tests drive it directly). */
  openWait({ id, kind, prompt, choices, detail }: WaitRequest, since = isoAt(nowMs())): void {
    this.answers.delete(id);
    this.open.set(id, { id, kind, prompt, ...(choices && { choices }), since, ...(detail && { detail }) });
  }

  /** The `answer` update's handler: runs only for answers its validator accepted. */
  accept(waitId: string, value: string): void {
    if (this.firstAnswerWins) {
      if (!this.open.has(waitId)) return;
      this.open.delete(waitId);
    }
    this.answers.set(waitId, value);
    this.lastAnswer.set(waitId, value);
    this.onAnswer();
  }

  /** The `answer` update's validator: throws to reject an answer before it reaches history (protocol/answers.ts). */
  validate(waitId: unknown, value: unknown): void {
    if (typeof waitId !== 'string' || waitId.length === 0) throw rejected('the answer needs the id of what waits (waitId)');
    const noText = answerTextProblem(value);
    if (noText) throw rejected(noText);
    const waiting = this.open.get(waitId);
    if (!waiting) {
      const previous = this.lastAnswer.get(waitId);
      if (previous !== undefined) throw rejected(`"${waitId}" was already answered with ${JSON.stringify(shorten(previous))}`);
      const open = [...this.open.keys()];
      throw rejected(`nothing waits for "${waitId}"${open.length ? ` (waiting: ${open.join(', ')})` : ' (nothing is waiting)'}`);
    }
    const problem = answerProblem(waiting, value as string);
    if (problem) throw rejected(problem);
  }
}
