/**
 * What people see of a run's stream at a terminal (`cadre watch`, `cadre send`, `cadre chat`): an
 * agent's text as it is written, its tool calls and results as one-line summaries, a retried turn
 * marked as such. Steps and waits are `ProgressPrinter`'s (format.ts) when it runs beside this.
 */
import type { StreamEventAt } from '../streaming/events';

export interface EventPrinterOptions {
  /** Writes text as it comes (no newline added). */
  write: (text: string) => void;
  /** Show the step's name before each answer (a plan has several agents; a session has one). */
  labelSteps?: boolean;
  /** Also print step, wait and end events (when no ProgressPrinter runs beside this). */
  runEvents?: boolean;
}

const SUMMARY_CHARS = 120;

export class EventPrinter {
  /** Whether the last thing written ended a line. */
  private atLineStart = true;
  /** Each step's last turn whose text has been shown: only a retry of that turn supersedes something. */
  private readonly shown = new Map<string, number | undefined>();

  constructor(private readonly options: EventPrinterOptions) {}

  print(event: StreamEventAt): void {
    const who = this.options.labelSteps && event.step ? `[${event.step}] ` : '';
    switch (event.type) {
      case 'message_start':
        // A retried turn whose failed attempt showed nothing needs no word: the reader saw nothing to take back.
        if (event.attempt && event.attempt > 1 && this.shown.has(event.step ?? '') && this.shown.get(event.step ?? '') === event.turn) this.line(`${who}(turn ${event.turn} again, attempt ${event.attempt}: the text above is superseded)`);
        return;
      case 'text_delta':
        this.shown.set(event.step ?? '', event.turn);
        if (this.atLineStart && who) this.options.write(who);
        this.options.write(event.text);
        this.atLineStart = event.text.endsWith('\n');
        return;
      case 'message_complete':
        this.endLine();
        return;
      case 'tool_call':
        return this.line(`${who}→ ${event.tool}(${clip(JSON.stringify(event.args))})`);
      case 'tool_result':
        return this.line(`${who}← ${event.tool}${event.isError ? ' failed' : ''}: ${clip(event.preview.replace(/\s+/g, ' '))}`);
      case 'error':
        return this.line(`${who}! ${event.errorType}: ${clip(event.message)}${event.retryable ? ' (retrying)' : ''}`);
      case 'stream_shed':
        return this.line(`${who}~ ${event.reason}`);
      case 'limits_warning':
      case 'budget_warning':
        return this.line(`! ${event.message}`);
    }
    if (!this.options.runEvents) return;
    switch (event.type) {
      case 'step_started':
        return this.line(`▶ ${event.step} (${event.kind})`);
      case 'step_completed':
        return this.line(`${event.status === 'completed' ? '✓' : '-'} ${event.step} ${event.status}${event.note ? `: ${event.note}` : ''}`);
      case 'step_failed':
        return this.line(`✗ ${event.step} failed: ${clip(event.error)}`);
      case 'approval_requested':
      case 'question_asked':
        return this.line(`? ${event.prompt} (answer ${event.waitId}${event.choices ? `: ${event.choices.join('|')}` : ''})`);
      case 'host_unreachable':
        return this.line(`! ${event.prompt}`);
      case 'budget_spent':
        return this.line(`$ budget: ${event.used} used`);
      case 'run_completed':
        return this.line(`run ${event.status}${event.error ? `: ${event.error}` : ''}`);
    }
  }

  /** Ends a line of streamed text that is still open. */
  endLine(): void {
    if (!this.atLineStart) this.options.write('\n');
    this.atLineStart = true;
  }

  private line(text: string): void {
    this.endLine();
    this.options.write(`${text}\n`);
  }
}

function clip(text: string): string {
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS)}…` : text;
}
