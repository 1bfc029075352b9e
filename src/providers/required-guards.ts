/**
 * The guards of `toolCalls: required` that keep a small model moving, each a call sent back unrun
 * with what to do instead (model-turn.ts), so each is decided from the conversation alone:
 *  - a repeated call: Qwen2.5-Coder 1.5B read the same file four times in a row, each time saying it
 *    had the answer (the agent loop's own guard, a note at the third identical turn and a failure
 *    at the fourth, still stands behind it);
 *  - a finish too soon, twice at most, quoting the task: before any tool ran, or, when tools that
 *    change the workspace were offered, before one of them worked (it answered "0" to "count the
 *    files and write the number to count.txt"). A third finish is taken: some tasks need no tool,
 *    or no change, unless the step says its task is a change (`mustChange`), which fails instead;
 *  - the first finish after the workspace changed, once, with the changes listed beside the task.
 */
import path from 'node:path';
import { canonical } from '../protocol/canonical-json';
import { type MustChange, listed, stillToChange } from '../protocol/made-no-change';
import { FINISH_TOOL } from './finish-tool';

/** fs.read's window for a model (activities/tools/text-views.ts): the providers layer does not import the activities'. */
const WINDOW_LINES = 100;

/** A call as the conversation holds it (model-turn.ts's ToolCall). */
export interface Call {
  id: string;
  name: string;
  args: Record<string, unknown>;
  error?: string;
}

/** The parts of a message the guards read (model-turn.ts's messages have them). */
export interface Message {
  role: string;
  content?: unknown;
  toolCalls?: Call[];
  toolCallId?: string;
  isError?: boolean;
}

/** Tools whose calls change the workspace, after which a file may read differently. */
const CHANGES = new Set(['fs_write', 'fs_edit', 'shell']);

/** Why `call` is not worth running given the conversation so far, or undefined. */
export function repeated(call: Call, messages: Message[]): string | undefined {
  const earlier = workedCalls(messages);
  const last = earlier.at(-1);
  if (call.name === 'fs_read' && typeof call.args.path === 'string') {
    const path = call.args.path;
    const wanted = window(call.args);
    const readAt = lastIndex(earlier, (c) => c.name === 'fs_read' && c.args.path === path && covers(window(c.args), wanted));
    const changedAt = lastIndex(earlier, (c) => CHANGES.has(c.name));
    if (readAt >= 0 && readAt > changedAt) {
      return `not run: ${path} as you read it is above, the same as it is now.${theTask(messages)} Go on with its next step using what you read.`;
    }
  }
  if (last && last.name === call.name && canonical(last.args) === canonical(call.args)) {
    return `not run: this is the same ${call.name} call as your last one, whose result is above. Do the next step of the task instead, or finish with your answer.`;
  }
  return undefined;
}

/** The lines an fs_read call asks for, as fs.read's window takes them (100 from `from` unless `to` says). */
function window(args: Record<string, unknown>): { from: number; to: number } {
  const from = typeof args.from === 'number' ? args.from : 1;
  return { from, to: typeof args.to === 'number' ? args.to : from + WINDOW_LINES - 1 };
}

function covers(read: { from: number; to: number }, wanted: { from: number; to: number }): boolean {
  return read.from <= wanted.from && wanted.to <= read.to;
}

/** How many finishes too soon are sent back: the third is taken (some tasks need no tool, or no change). */
const FINISH_REFUSALS = 2;
/** How much of the task a refused finish quotes back. */
const TASK_QUOTED = 400;

/**
 * What a `mustChange` step has still to change, or undefined when it is done: none listed when
 * nothing has changed at all. A file counts as changed by an fs_write or fs_edit of it that worked,
 * or by a command that worked and names it (cadre does not trace what a command writes).
 */
export function notChanged(messages: Message[], mustChange: MustChange): string[] | undefined {
  const changes = workedCalls(messages).filter((c) => CHANGES.has(c.name));
  if (mustChange === true) return changes.length > 0 ? undefined : [];
  const written = new Set(changes.flatMap((c) => (c.name !== 'shell' && typeof c.args.path === 'string' ? [normal(c.args.path)] : [])));
  const commands = changes.flatMap((c) => (c.name === 'shell' && typeof c.args.command === 'string' ? [c.args.command] : []));
  const missing = mustChange.filter((file) => !written.has(normal(file)) && !commands.some((command) => command.includes(file) || command.includes(normal(file))));
  return missing.length > 0 ? missing : undefined;
}

/** A workspace path as calls name it in many ways: `./a//b.txt` is `a/b.txt`. */
function normal(file: string): string {
  return path.posix.normalize(file.replace(/\\/g, '/')).replace(/^(\.\/)+/, '');
}

/**
 * Why a `finish` now is too soon (said twice at most), or undefined. `offered`: the names of the
 * step's tools; `mustChange`: the step says what its task changes, so a finish before that is never taken (required-turn.ts).
 */
export function finishTooSoon(messages: Message[], offered: string[], mustChange?: MustChange): string | undefined {
  if (offered.length === 0) return undefined;
  const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
  if (calls.filter((c) => c.name === FINISH_TOOL).length >= FINISH_REFUSALS) return undefined;
  const worked = workedCalls(messages);
  if (worked.length === 0) {
    const what = calls.length === 0 ? 'you have not called any tool yet' : 'none of your tool calls has worked yet';
    return `not finished: ${what}, so nothing has been done.${theTask(messages)} Do it with the tools first, then call finish.`;
  }
  const changers = offered.filter((name) => CHANGES.has(name));
  const missing = mustChange && notChanged(messages, mustChange);
  if (missing) {
    const todo = missing.length === 0 ? 'Write or edit the files it names, or run the command it asks for' : `Write or change ${listed(missing)}`;
    const using = changers.length > 0 ? ` (${changers.join(', ')})` : '';
    return `not finished: this task is done only when the workspace has changed, and ${stillToChange(missing)}.${theTask(messages)} ${todo}${using}, then call finish.`;
  }
  if (changers.length > 0 && !worked.some((c) => CHANGES.has(c.name))) {
    return `not finished: you have only read so far.${theTask(messages)} If it asks for a file to be written or changed, or a command to be run, do that now (${changers.join(', ')}), then call finish.`;
  }
  return review(worked, calls, messages);
}

const REVIEW = 'not finished: check your work against the task first.';

/**
 * The first finish after the workspace changed is sent back once with what changed, next to the
 * task, as SWE-agent reviews a submission: Qwen2.5-Coder 1.5B renamed a function in one file of
 * two and said both were done. The next finish is taken.
 */
function review(worked: Call[], calls: Call[], messages: Message[]): string | undefined {
  if (calls.some((c) => c.name === FINISH_TOOL && c.error?.startsWith(REVIEW))) return undefined;
  const changes = [...new Set(worked.filter((c) => CHANGES.has(c.name)).map(describeChange))];
  if (changes.length === 0) return undefined;
  return `${REVIEW} What you changed: ${changes.join('; ')}.${theTask(messages)} If any part of it is not done yet (a file not written or changed, a command not run), do that now; if all of it is done, call finish again with your answer.`;
}

function describeChange(call: Call): string {
  const text = (value: unknown, max: number) => {
    const s = typeof value === 'string' ? value : String(JSON.stringify(value));
    return s.length > max ? `${s.slice(0, max)}…` : s;
  };
  if (call.name === 'shell') return `ran "${text(call.args.command, 80)}"`;
  return `${call.name === 'fs_write' ? 'wrote' : 'edited'} ${text(call.args.path, 120)}`;
}

/**
 * The task, quoted back: in a long conversation a small model loses it (Qwen2.5-Coder 1.5B, told
 * only that nothing had changed, answered "8443" again instead of writing it to port.txt, and took
 * "nothing has changed" for a reason the task could not be done).
 */
function theTask(messages: Message[]): string {
  const task = messages.find((m) => m.role === 'user')?.content;
  if (typeof task !== 'string' || task.trim() === '') return '';
  const text = task.trim();
  return ` The task was: "${text.length > TASK_QUOTED ? `${text.slice(0, TASK_QUOTED)}…` : text}"`;
}

/** The calls that ran and worked: one sent back unrun, or whose tool failed, taught the model nothing to reuse. */
function workedCalls(messages: Message[]): Call[] {
  const failed = new Set(messages.flatMap((m) => (m.role === 'tool' && m.isError ? [m.toolCallId] : [])));
  return messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : [])).filter((c) => c.error === undefined && !failed.has(c.id));
}

/** The index of the last item that matches, or -1 (Array.prototype.findLastIndex is ES2023). */
function lastIndex<T>(items: T[], matches: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (matches(items[i])) return i;
  return -1;
}
