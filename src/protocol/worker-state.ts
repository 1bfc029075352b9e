/**
 * A team worker's state machine, as a table: which states a worker may move to from each state.
 * Pure (no Temporal imports), so the table is tested on its own and workflow code applies it.
 * A worker is `completed` only when it said so: silence moves it to `blocked`, never to done.
 */
export const WORKER_STATES = [
  'initializing',
  'running',
  'waiting_for_input',
  'waiting_for_subtask',
  'blocked',
  'completing',
  'completed',
  'error',
  'cancelled',
] as const;
export type WorkerState = (typeof WORKER_STATES)[number];

/** Allowed moves; every pair not listed (a state to itself included) is refused. */
export const WORKER_TRANSITIONS: Readonly<Record<WorkerState, readonly WorkerState[]>> = {
  initializing: ['running', 'error', 'cancelled'],
  running: ['waiting_for_input', 'waiting_for_subtask', 'blocked', 'completing', 'error', 'cancelled'],
  // An answer (or the escalation's default) resumes the worker; a timeout without a default is an error.
  waiting_for_input: ['running', 'error', 'cancelled'],
  waiting_for_subtask: ['running', 'error', 'cancelled'],
  // A blocked worker resumes on progress or a person's word, or gives up.
  blocked: ['running', 'waiting_for_input', 'error', 'cancelled'],
  // Checks on the way out may send the worker back to work.
  completing: ['completed', 'running', 'error', 'cancelled'],
  completed: [],
  // A retry.
  error: ['running', 'cancelled'],
  cancelled: [],
};

export function canTransition(from: WorkerState, to: WorkerState): boolean {
  return WORKER_TRANSITIONS[from].includes(to);
}

export interface WorkerTransition {
  /** 1 for the first move, then one more per move: the team applies them in this order. */
  seq: number;
  from: WorkerState;
  to: WorkerState;
  reason: string;
  at: string;
}

/** Transitions kept for diagnostics; the count and the fingerprint cover all of them. */
const KEPT_TRANSITIONS = 50;
/** Reasons are for people; a model's long one is cut here (the worker's history keeps its words). */
const MAX_REASON_CHARS = 500;

export class WorkerStateMachine {
  private current: WorkerState = 'initializing';
  private seq = 0;
  private readonly recent: WorkerTransition[] = [];
  private trail = FINGERPRINT_SEED;

  get state(): WorkerState {
    return this.current;
  }

  /** Moves made so far (the last one's `seq`). */
  get count(): number {
    return this.seq;
  }

  /** A hash of every move in order: the team's copy equals it when it applied each move once, in order. */
  get fingerprint(): string {
    return fingerprintText(this.trail);
  }

  transitions(): WorkerTransition[] {
    return [...this.recent];
  }

  /** The move, or why it is refused (the caller decides whether that is a bug or a model's mistake). */
  move(to: WorkerState, reason: string, at: string): WorkerTransition | string {
    const from = this.current;
    if (!canTransition(from, to)) {
      const allowed = WORKER_TRANSITIONS[from];
      return `a worker cannot go from ${from} to ${to}${allowed.length ? ` (from ${from}: ${allowed.join(', ')})` : ` (${from} is final)`}`;
    }
    this.current = to;
    const transition: WorkerTransition = { seq: ++this.seq, from, to, reason: clip(reason), at };
    this.trail = extendFingerprint(this.trail, transition);
    this.recent.push(transition);
    if (this.recent.length > KEPT_TRANSITIONS) this.recent.shift();
    return transition;
  }
}

const FINGERPRINT_SEED = 0x811c9dc5;

/** FNV-1a over `seq:to;` of each move: cheap, deterministic, order-sensitive. */
export function extendFingerprint(hash: number, move: { seq: number; to: WorkerState }): number {
  let h = hash;
  for (const char of `${move.seq}:${move.to};`) {
    h ^= char.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function fingerprintText(hash: number): string {
  return hash.toString(16).padStart(8, '0');
}

export function newFingerprint(): number {
  return FINGERPRINT_SEED;
}

function clip(text: string): string {
  return text.length > MAX_REASON_CHARS ? `${text.slice(0, MAX_REASON_CHARS)}…` : text;
}

/** A worker's reports of its moves to its team run: the first two at once (one in flight at a time)... */
const PROMPT_REPORTS = 2;
/** ...then spaced out, a second at first, doubling every five reports, up to fifteen minutes. */
const FIRST_SPACING_MS = 1000;
const DOUBLING_EVERY = 5;
const MAX_SPACING_MS = 15 * 60_000;

/**
 * How long after its last report a worker that has sent `reports` waits before the next: a worker
 * that moves all day sends its team run a number of signals that grows with the log of how long it
 * runs, not with its moves (workflows/agent/worker-reporter.ts).
 */
export function reportSpacing(reports: number): number {
  if (reports < PROMPT_REPORTS) return 0;
  return Math.min(MAX_SPACING_MS, FIRST_SPACING_MS * 2 ** Math.floor((reports - PROMPT_REPORTS) / DOUBLING_EVERY));
}
