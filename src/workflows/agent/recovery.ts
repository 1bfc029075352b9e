/** How a team worker recovers from a failed model turn or tool call, by the failure's class (src/errors/error-classes.ts). */
import { type HostRoute, hostActivities } from '../common/host-route';
import type { TeamWorkerContext } from '../team/team-tools';
import { type AgentLoop, asFailure } from './agent-loop';
import type { AgentTaskInput } from '../../protocol/agent-task';
import { classifyError } from '../../errors/error-classes';
import type { WorkerReporter } from './worker-reporter';

/** Rounds of a team worker's model-turn retries for a transient failure, when no fallback model helps. */
const TRANSIENT_ROUNDS = 3;

const REPAIR_OPTIONS = { startToCloseTimeout: '1m', heartbeatTimeout: '10s', retry: { maximumAttempts: 3 }, summary: 'repair the worktree' } as const;

/** The repair activity, on the queue of the host that holds the worktree when there is one. */
function repairs(route: HostRoute | undefined) {
  return hostActivities(REPAIR_OPTIONS, route);
}

export class WorkerRecovery {
  private onFallback = false;
  private transientRounds = 0;
  /** MCP tools whose server was started afresh once already. */
  private readonly restarted = new Set<string>();
  private fixes = 0;

  constructor(
    private readonly input: AgentTaskInput,
    private readonly loop: () => AgentLoop,
    private readonly reporter: () => WorkerReporter,
  ) {}

  /**
   * A team worker recovers by the failure's class: a transient one (already retried with backoff)
   * switches to the fallback model after rate limits; an infrastructure one repairs the worktree and
   * runs the call again; a user-resolvable one waits, blocked, for a person to fix it; a permanent one fails.
   */
  async recover(ctx: TeamWorkerContext, err: unknown, where: 'model' | 'tool', tool?: string): Promise<{ retry: true; model?: string } | undefined> {
    const failure = asFailure(err);
    const { class: errorClass, actions } = classifyError({ message: failure.message, ...(failure.type && { type: failure.type }) });
    const record = (recovery: string) => this.loop().record({ event: 'worker.recovery', errorClass, errorType: failure.type ?? 'Error', recovery });
    const fallback = ctx.team.fallbackModel;
    if (where === 'model' && errorClass === 'transient' && failure.type === 'ModelRateLimited' && fallback !== undefined && !this.onFallback) {
      this.onFallback = true;
      record('fallback_model');
      return { retry: true, model: fallback };
    }
    // Each round is TEAM_MODEL_ATTEMPTS tries with backoff: about as many in all as a lone agent's.
    if (where === 'model' && errorClass === 'transient' && ++this.transientRounds < TRANSIENT_ROUNDS) {
      record('retried');
      return { retry: true };
    }
    if (where === 'tool' && errorClass === 'infrastructure' && tool?.startsWith('mcp:') && !this.restarted.has(tool)) {
      // The failed calls dropped the server's client: the next call starts (or reconnects to) the server afresh.
      this.restarted.add(tool);
      record('restarted_server');
      return { retry: true };
    }
    if (where === 'tool' && errorClass === 'infrastructure' && this.input.worktree) {
      const { removed } = await repairs(this.loop().route).repairWorktree({ worktree: this.input.workspace });
      record(removed.length > 0 ? 'repaired_worktree' : 'nothing_to_repair');
      return removed.length > 0 ? { retry: true } : undefined;
    }
    if (where === 'model' && errorClass === 'user_resolvable') {
      record('asked_a_person');
      this.reporter().move('blocked', failure.message);
      const id = `${this.input.step}/fix-${this.loop().turns}-${++this.fixes}`;
      const answer = await ctx.askWhileBlocked(id, `${this.input.step} needs a person: ${failure.message}. Suggested: ${actions.join('; ')}. Answer retry once it is fixed, or abort.`, ['retry', 'abort']);
      return answer === 'retry' ? { retry: true } : undefined;
    }
    record('none');
    return undefined;
  }
}
