/**
 * A reply's events as the AI SDK's UI message stream (what `useChat` reads, `ai` v6): text as text
 * parts, tool calls and results as dynamic tool parts (the browser knows no cadre tool), waits as
 * `data-approval` / `data-question` parts. Pure: src/client/serve.ts writes what this returns.
 */
import type { UIMessageChunk } from 'ai';
import type { StreamEventAt } from './events';

/** The data parts cadre adds, for `UIMessage<unknown, CadreDataTypes>` in a typed `useChat`. */
export type CadreDataTypes = {
  /** A tool call waits for a person: answer it at `POST /api/chat/:id/answer`. */
  approval: { waitId: string; prompt: string; choices?: string[] };
  question: { waitId: string; prompt: string; choices?: string[] };
  /** The model turn is being tried again: the text of the abandoned attempt is superseded. */
  retry: { turn?: number; attempt: number };
  /** A model call failed; `retryable` ones are tried again and the reply goes on. */
  error: { errorType: string; message: string; retryable: boolean };
  /** Something to know about the stream itself: it stopped showing text (the reply comes whole at its end), or its session nears Temporal's limits. */
  notice: { kind: 'stream_shed' | 'limits_warning' | 'budget_warning'; message: string };
};

export type CadreUiChunk = UIMessageChunk<unknown, CadreDataTypes>;
type FinishReason = NonNullable<Extract<CadreUiChunk, { type: 'finish' }>['finishReason']>;

const FINISH_REASONS: readonly string[] = ['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other'] satisfies FinishReason[];

/**
 * Translates the events of one reply, in order, into chunks. It keeps what the protocol needs
 * matched (a text part opened before its deltas, a step closed before the next, a tool call before
 * its result), so a reader that resumes mid-reply still gets a well-formed message.
 */
export class UiMessageStream {
  private started = false;
  private stepOpen = false;
  /** The id of the text part being written. */
  private text: string | undefined;
  private readonly calls = new Set<string>();
  private finishReason: FinishReason | undefined;
  /** The stream stopped showing the reply's text: its end sends the reply whole. */
  shed = false;

  constructor(private readonly messageId?: string) {}

  /** The chunks an event adds (the first call also opens the message). */
  push(event: StreamEventAt): CadreUiChunk[] {
    const out = this.open();
    switch (event.type) {
      case 'message_start':
        this.closeStep(out);
        if ((event.attempt ?? 1) > 1) out.push({ type: 'data-retry', id: `retry-${event.offset}`, data: { ...(event.turn !== undefined && { turn: event.turn }), attempt: event.attempt ?? 1 } });
        this.openStep(out);
        break;
      case 'text_delta':
        if (event.text === '') break;
        this.openStep(out);
        if (this.text === undefined) {
          this.text = `text-${event.offset}`;
          out.push({ type: 'text-start', id: this.text });
        }
        out.push({ type: 'text-delta', id: this.text, delta: event.text });
        break;
      case 'tool_call':
        this.openStep(out);
        this.closeText(out);
        this.calls.add(event.callId);
        out.push({ type: 'tool-input-available', toolCallId: event.callId, toolName: event.tool, input: event.args, dynamic: true });
        break;
      case 'tool_result':
        // A result belongs to the step of its call, which may have closed: it opens none.
        this.closeText(out);
        // Read from mid-reply, the call may lie before `from`: the protocol needs it before its result.
        if (!this.calls.has(event.callId)) out.push({ type: 'tool-input-available', toolCallId: event.callId, toolName: event.tool, input: {}, dynamic: true });
        this.calls.add(event.callId);
        out.push(
          event.isError
            ? { type: 'tool-output-error', toolCallId: event.callId, errorText: event.preview, dynamic: true }
            : { type: 'tool-output-available', toolCallId: event.callId, output: previewValue(event.preview, event.truncatedFrom), dynamic: true },
        );
        break;
      case 'message_complete':
        this.finishReason = FINISH_REASONS.includes(event.finishReason) ? (event.finishReason as FinishReason) : 'other';
        this.closeStep(out);
        break;
      case 'approval_requested':
      case 'question_asked': {
        const data = { waitId: event.waitId, prompt: event.prompt, ...(event.choices && { choices: event.choices }) };
        out.push(event.type === 'approval_requested' ? { type: 'data-approval', id: event.waitId, data } : { type: 'data-question', id: event.waitId, data });
        break;
      }
      case 'error':
        out.push({ type: 'data-error', id: `error-${event.offset}`, data: { errorType: event.errorType, message: event.message, retryable: event.retryable } });
        break;
      case 'stream_shed':
        this.shed = true;
        out.push({ type: 'data-notice', id: `notice-${event.offset}`, data: { kind: 'stream_shed', message: event.reason } });
        break;
      case 'limits_warning':
      case 'budget_warning':
        out.push({ type: 'data-notice', id: `notice-${event.offset}`, data: { kind: event.type, message: event.message } });
        break;
      // Steps and the run's end belong to a plan run, not to a reply.
    }
    return out;
  }

  /** A reply's text at once, for a session whose stream could not be read, or stopped showing text. */
  whole(text: string): CadreUiChunk[] {
    const out = this.open();
    this.closeStep(out);
    const id = 'text-whole';
    out.push({ type: 'start-step' }, { type: 'text-start', id }, { type: 'text-delta', id, delta: text }, { type: 'text-end', id }, { type: 'finish-step' });
    return out;
  }

  /** Closes what is open and ends the message; `error`: why the reply failed. */
  finish(error?: string): CadreUiChunk[] {
    const out = this.open();
    this.closeStep(out);
    if (error !== undefined) out.push({ type: 'error', errorText: error });
    out.push({ type: 'finish', finishReason: error !== undefined ? 'error' : (this.finishReason ?? 'stop') });
    return out;
  }

  private open(): CadreUiChunk[] {
    if (this.started) return [];
    this.started = true;
    return [{ type: 'start', ...(this.messageId !== undefined && { messageId: this.messageId }) }];
  }

  private openStep(out: CadreUiChunk[]): void {
    if (this.stepOpen) return;
    this.stepOpen = true;
    out.push({ type: 'start-step' });
  }

  private closeText(out: CadreUiChunk[]): void {
    if (this.text === undefined) return;
    out.push({ type: 'text-end', id: this.text });
    this.text = undefined;
  }

  private closeStep(out: CadreUiChunk[]): void {
    this.closeText(out);
    if (!this.stepOpen) return;
    this.stepOpen = false;
    out.push({ type: 'finish-step' });
  }
}

/** A tool result's preview as a value when it is whole JSON; a cut preview stays text. */
function previewValue(preview: string, truncatedFrom?: number): unknown {
  if (truncatedFrom !== undefined) return preview;
  try {
    return JSON.parse(preview) as unknown;
  } catch {
    return preview;
  }
}
