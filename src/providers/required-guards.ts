/**
 * The guards of `toolCalls: required` that keep a small model moving, each a call sent back unrun
 * with what to do instead (model-turn.ts), so each is decided from the conversation alone:
 *  - a repeated call: Qwen2.5-Coder 1.5B read the same file four times in a row, each time saying it
 *    had the answer (the agent loop's own guard, a note at the third identical turn and a failure
 *    at the fourth, still stands behind it);
 *  - a finish too soon, once: before any tool ran, or, when tools that change the workspace were
 *    offered, before one of them worked (it answered "0" to "count the files and write the number
 *    to count.txt"). A second finish is taken: some tasks need no tool, or no change.
 */
import { canonical } from '../protocol/canonical-json';
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
      return `not run: you have read ${path} already (its lines are above) and nothing has changed it since. Use what you read: do the next thing the task asks for.`;
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

/** Why a `finish` now is too soon (said once), or undefined. `offered`: the names of the step's tools. */
export function finishTooSoon(messages: Message[], offered: string[]): string | undefined {
  if (offered.length === 0) return undefined;
  const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
  if (calls.some((c) => c.name === FINISH_TOOL)) return undefined;
  const worked = workedCalls(messages);
  if (worked.length === 0) {
    const what = calls.length === 0 ? 'you have not called any tool yet' : 'none of your tool calls has worked yet';
    return `not finished: ${what}, so nothing has been done. Do the task with the tools first, then call finish.`;
  }
  if (offered.some((name) => CHANGES.has(name)) && !worked.some((c) => CHANGES.has(c.name))) {
    return 'not finished: you have only read so far, and nothing in the workspace has changed. If the task asks for a file to be written or changed, or a command to be run, do that now, then call finish.';
  }
  return undefined;
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
