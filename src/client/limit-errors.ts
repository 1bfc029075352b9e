/**
 * A request Temporal refused because the run has reached one of its per-run limits
 * (docs/streaming.md, "What a run can take"): said as such, naming the limit, never as a bare gRPC
 * error. cadre's own workflows keep well inside these; a run another client flooded, or a cluster
 * with lower limits, can still reach them.
 */
import { CadreError } from '../errors/cadre-error';
import { errorChain } from './error-chain';

export type RunLimit = 'signals' | 'updates' | 'updates in flight';

export class RunLimitReached extends CadreError {
  constructor(
    readonly limit: RunLimit,
    message: string,
  ) {
    super(message);
    this.name = 'RunLimitReached';
  }
}

/** The limit an error of the server's names, as a RunLimitReached for `workflowId`; undefined for any other error. */
export function runLimitReached(err: unknown, workflowId: string): RunLimitReached | undefined {
  const text = errorChain(err);
  if (/exceeded workflow execution limit for signal events/i.test(text)) {
    return new RunLimitReached('signals', `run ${workflowId} takes no more signals: it has had as many as Temporal lets a run take (history.maximumSignalsPerExecution, 10,000 by default); answer it with the update (\`cadre answer\`), or see docs/streaming.md`);
  }
  const total = /limit on the total number of distinct updates in this workflow has been reached \((\d+)\)/i.exec(text);
  if (total) {
    return new RunLimitReached('updates', `run ${workflowId} takes no more updates: it has had ${total[1]}, as many as Temporal lets a run take (history.maxTotalUpdates); it takes signals still (\`temporal workflow signal --name answer\`), see docs/streaming.md`);
  }
  const inFlight = /limit on number of concurrent in-flight updates has been reached \((\d+)\)/i.exec(text);
  if (inFlight) {
    return new RunLimitReached('updates in flight', `run ${workflowId} holds ${inFlight[1]} updates at once, as many as Temporal lets a run hold (history.maxInFlightUpdates): try again in a moment`);
  }
  return undefined;
}
