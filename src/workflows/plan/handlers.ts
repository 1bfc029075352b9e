/** What clients reach of a plan run: its query, its updates, and (in runs that take them) the same as signals. */
import { setHandler } from '@temporalio/workflow';
import type { WorkspaceHostBinding } from './workspace-host';
import { isHostWait } from '../../protocol/host-liveness';
import {
  answerSignal,
  answerUpdate,
  approveSignal,
  diagnosticsQuery,
  moveHostUpdate,
  pauseSignal,
  pauseUpdate,
  resumeSignal,
  resumeUpdate,
  type Diagnostics,
} from '../../protocol/definitions';
import { type ForkSource, forkSourceQuery } from '../../protocol/forks';
import type { AgentSteps } from './agent-steps';
import { type HumanWaits, rejected } from './waits';
import { PATCH_SIGNALS } from '../../protocol/patches';
import type { PlanPatches } from './plan-patches';
import { type RunLimits, onSignal, onUpdate } from '../common/run-limits';

export interface PlanHandlersHost {
  readonly patches: PlanPatches;
  readonly limits: RunLimits;
  readonly agents: AgentSteps;
  readonly waits: HumanWaits;
  diagnostics(): Diagnostics;
  forkSource(): ForkSource;
  setPaused(paused: boolean): { paused: boolean };
  /** The host its workspace is bound to, which `cadre move` changes. */
  readonly host: WorkspaceHostBinding;
  readonly plan: { workspace: string };
  /** A signal that could not apply: recorded, never thrown (a signal has no one to answer). */
  signalError(name: string, waitId: unknown, err: unknown): void;
}

export function installPlanHandlers(host: PlanHandlersHost): void {
  const { limits } = host;
  setHandler(diagnosticsQuery, () => host.diagnostics());
  setHandler(forkSourceQuery, () => host.forkSource());
  onUpdate(
    limits,
    answerUpdate,
    async ({ waitId, value }) => {
      if (host.agents.knows(waitId)) await host.agents.forward(waitId, value);
      else host.waits.accept(waitId, value);
      return { accepted: true as const };
    },
    {
      validator: (answer) => {
        if (isHostWait(answer?.waitId)) throw rejected(`${String(answer.waitId)} ends when the host comes back, or with \`cadre move <run> --to <host>\`: it takes no answer`);
        if (host.agents.knows(answer?.waitId)) host.agents.validate(answer?.waitId, answer?.value);
        else host.waits.validate(answer?.waitId, answer?.value);
      },
    },
  );
  onUpdate(limits, moveHostUpdate, ({ to }) => host.host.moveTo(to, host.plan.workspace), { validator: (move) => host.host.checkMove(move?.to) });
  onUpdate(limits, pauseUpdate, () => host.setPaused(true));
  onUpdate(limits, resumeUpdate, () => host.setPaused(false));
  if (host.patches.has(PATCH_SIGNALS)) takeSignals(host);
}

/** The updates' effects by signal; what cannot apply is recorded, never thrown (a signal has no one to answer). */
function takeSignals(host: PlanHandlersHost): void {
  const attempt = (name: string, waitId: unknown, apply: () => void | Promise<void>) => {
    try {
      const done = apply();
      if (done) done.catch((err: unknown) => host.signalError(name, waitId, err));
    } catch (err) {
      host.signalError(name, waitId, err);
    }
  };
  const answer = (name: string, waitId: unknown, value: unknown) =>
    attempt(name, waitId, () => {
      if (host.agents.knows(waitId)) {
        host.agents.validate(waitId, value);
        return host.agents.forward(waitId as string, value as string);
      }
      host.waits.validate(waitId, value);
      host.waits.accept(waitId as string, value as string);
    });
  const { limits } = host;
  onSignal(limits, answerSignal, (a) => answer('answer', a?.waitId, a?.value));
  onSignal(limits, approveSignal, (a) => {
    const reason = typeof a?.reason === 'string' && a.reason.trim() ? `:${a.reason}` : '';
    answer('approve', a?.waitId, a?.approve === false ? `deny${reason}` : 'approve');
  });
  onSignal(limits, pauseSignal, () => attempt('pause', undefined, () => void host.setPaused(true)));
  onSignal(limits, resumeSignal, () => attempt('resume', undefined, () => void host.setPaused(false)));
}
