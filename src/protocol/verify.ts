/**
 * An agent step's `verify`: a command of the plan's (its tests, a lint, a `grep`) that must pass
 * before the agent's answer is taken, as Aider's `--auto-test` runs the tests after each change.
 * A failing check goes back to the model with the command's exit code and the end of its output;
 * after `attempts` failures the step fails AgentVerifyFailed. The command runs like a `shell`
 * call, in the sandbox and the step's workspace or worktree, but it is the plan's, not the model's:
 * no approval asks for it and the model cannot change it. Pure, for the workflow.
 */

export interface Verify {
  command: string;
  /** Failures sent back to the model; the next one fails the step. */
  attempts: number;
  /** How long one run of the command may take (a Temporal duration). */
  timeout: string;
}

export const DEFAULT_VERIFY_ATTEMPTS = 3;
export const MAX_VERIFY_ATTEMPTS = 20;
export const DEFAULT_VERIFY_TIMEOUT = '10m';

/** Characters of each output stream the model is shown (the end, where a test runner says what failed). */
const OUTPUT_SHOWN = 1500;
/** Characters of the check's output the step's failure quotes (the model saw more). */
const FAILURE_SHOWN = 500;
/** Characters of the command quoted back. */
const COMMAND_QUOTED = 200;

/** What a failed run of the check left: its exit code (none when it could not say) and its output. */
export interface VerifyRun {
  exitCode?: number;
  stdout?: string;
  stderr?: string;
  /** The failure's own summary, when the output did not come back whole (stored outside history). */
  message: string;
}

/** The message the model gets after the check's `failures`-th failure. */
export function verifyCorrection(verify: Verify, run: VerifyRun, failures: number): string {
  const left = verify.attempts - failures;
  return (
    `Not finished: the check ${quoteCommand(verify.command)} failed${exitCode(run)}, so the task is not done yet.\n${shown(run)}\n` +
    `Fix it with your tools so that the check passes, then give your final answer again (${left} more ${left === 1 ? 'failure is' : 'failures are'} sent back; the next fails the step).`
  );
}

/** The failure's message once the check has failed `attempts + 1` times. */
export function verifyFailedMessage(verify: Verify, run: VerifyRun): string {
  const told = verify.attempts === 0 ? 'with no failure sent back (verify.attempts: 0)' : `after the agent was told ${verify.attempts} ${verify.attempts === 1 ? 'time' : 'times'}`;
  return `the check ${quoteCommand(verify.command)} still failed${exitCode(run)} ${told}; it said: ${clipEnd(shown(run), FAILURE_SHOWN)}`;
}

function quoteCommand(command: string): string {
  return `\`${command.length > COMMAND_QUOTED ? `${command.slice(0, COMMAND_QUOTED)}…` : command}\``;
}

function exitCode(run: VerifyRun): string {
  return run.exitCode === undefined ? '' : ` (exit code ${run.exitCode})`;
}

/** The end of each stream that has text, or the failure's summary when neither came back. */
function shown(run: VerifyRun): string {
  const streams = (['stdout', 'stderr'] as const).flatMap((name) => {
    const text = run[name]?.trim();
    return text ? [`${name}:\n${clipEnd(text, OUTPUT_SHOWN)}`] : [];
  });
  if (streams.length > 0) return streams.join('\n');
  return run.exitCode === undefined ? run.message : 'It printed nothing.';
}

function clipEnd(text: string, max: number): string {
  return text.length > max ? `…${text.slice(text.length - max)}` : text;
}
