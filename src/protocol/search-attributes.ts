/** Search attributes cadre registers on the namespace (see `cadre setup`): its runs' own index. */
import { defineSearchAttributeKey } from '@temporalio/common';

export const CadreStatus = defineSearchAttributeKey('CadreStatus', 'KEYWORD');
export const CadrePlan = defineSearchAttributeKey('CadrePlan', 'KEYWORD');
/** A team worker's state (`agentTask`): `CadreWorkerState = "blocked"` finds the stuck ones. */
export const CadreWorkerState = defineSearchAttributeKey('CadreWorkerState', 'KEYWORD');
/** The host a run's workspace is bound to in a fleet: `CadreHost = "build-1"` finds its runs. */
export const CadreHost = defineSearchAttributeKey('CadreHost', 'KEYWORD');
/** The run a fork was forked from: `CadreForkedFrom = "<run>"` lists its forks. */
export const CadreForkedFrom = defineSearchAttributeKey('CadreForkedFrom', 'KEYWORD');
export const SEARCH_ATTRIBUTES = [CadreStatus, CadrePlan, CadreWorkerState, CadreHost, CadreForkedFrom];
