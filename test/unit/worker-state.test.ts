/**
 * The worker state machine over all 81 (from, to) pairs, against a grid written out here on its
 * own (not read from the module), so a changed table fails until this grid says so too.
 */
import { TeamBoard } from '../../src/protocol/team-board';
import { WORKER_STATES, type WorkerState, WorkerStateMachine, canTransition } from '../../src/protocol/worker-state';
import type { WorkerStateSignal } from '../../src/protocol/definitions';

// Columns in WORKER_STATES order: init run wait_in wait_sub blocked completing completed error cancelled
const GRID: Record<WorkerState, string> = {
  initializing: /*       */ '. x . . . . . x x',
  running: /*            */ '. . x x x x . x x',
  waiting_for_input: /*  */ '. x . . . . . x x',
  waiting_for_subtask: /**/ '. x . . . . . x x',
  blocked: /*            */ '. x x . . . . x x',
  completing: /*         */ '. x . . . . x x x',
  completed: /*          */ '. . . . . . . . .',
  error: /*              */ '. x . . . . . . x',
  cancelled: /*          */ '. . . . . . . . .',
};

const pairs = WORKER_STATES.flatMap((from) => WORKER_STATES.map((to, column) => ({ from, to, allowed: GRID[from].split(' ')[column] === 'x' })));

test('the grid covers 81 pairs', () => {
  expect(pairs).toHaveLength(81);
  expect(pairs.filter((p) => p.allowed)).toHaveLength(25);
});

test.each(pairs)('$from → $to allowed: $allowed', ({ from, to, allowed }) => {
  expect(canTransition(from, to)).toBe(allowed);
  const machine = machineIn(from);
  const moved = machine.move(to, 'test', '2026-01-01T00:00:00.000Z');
  if (allowed) {
    expect(moved).toMatchObject({ from, to, reason: 'test' });
    expect(machine.state).toBe(to);
  } else {
    expect(moved).toMatch(new RegExp(`cannot go from ${from} to ${to}`));
    expect(machine.state).toBe(from);
  }
});

test('moves are numbered, kept with their reasons, and fingerprinted in order', () => {
  const machine = new WorkerStateMachine();
  const at = '2026-01-01T00:00:00.000Z';
  for (const to of ['running', 'waiting_for_input', 'running', 'completing', 'completed'] as const) machine.move(to, `to ${to}`, at);
  expect(machine.transitions().map((t) => [t.seq, t.from, t.to, t.reason])).toEqual([
    [1, 'initializing', 'running', 'to running'],
    [2, 'running', 'waiting_for_input', 'to waiting_for_input'],
    [3, 'waiting_for_input', 'running', 'to running'],
    [4, 'running', 'completing', 'to completing'],
    [5, 'completing', 'completed', 'to completed'],
  ]);
  const other = new WorkerStateMachine();
  for (const to of ['running', 'completing', 'running', 'waiting_for_input', 'running'] as const) other.move(to, '', at);
  expect(other.fingerprint).not.toBe(machine.fingerprint);
});

test('the team board applies each move once and in order, whatever order the signals come in', () => {
  const machine = new WorkerStateMachine();
  const signals: WorkerStateSignal[] = [];
  const cycle = ['running', 'blocked', 'running', 'waiting_for_input', 'running', 'completing', 'completed'] as const;
  for (const to of cycle) signals.push({ workflowId: 'w', ...(machine.move(to, to, 't') as Exclude<ReturnType<typeof machine.move>, string>) });
  const board = new TeamBoard(() => undefined);
  board.add('w', 'step', {});
  // Reversed, with every signal sent twice.
  for (const signal of [...signals].reverse().flatMap((s) => [s, s])) board.apply(signal, 't');
  const [record] = board.records();
  expect(record).toMatchObject({ state: 'completed', seq: 7, fingerprint: machine.fingerprint, duplicates: 7, early: 6 });
  expect(board.apply({ ...signals[0], workflowId: 'stranger' }, 't')).toBe(false);
});

function machineIn(state: WorkerState): WorkerStateMachine {
  const path: Record<WorkerState, WorkerState[]> = {
    initializing: [],
    running: ['running'],
    waiting_for_input: ['running', 'waiting_for_input'],
    waiting_for_subtask: ['running', 'waiting_for_subtask'],
    blocked: ['running', 'blocked'],
    completing: ['running', 'completing'],
    completed: ['running', 'completing', 'completed'],
    error: ['running', 'error'],
    cancelled: ['cancelled'],
  };
  const machine = new WorkerStateMachine();
  for (const to of path[state]) {
    if (typeof machine.move(to, 'setup', 't') === 'string') throw new Error(`setup could not reach ${state}`);
  }
  return machine;
}
