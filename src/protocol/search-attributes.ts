/** Search attributes cadre registers on the namespace (see `cadre setup`): its runs' own index. */
// The module itself, not the package's index: that loads the whole of @temporalio/common (~30 ms),
// and every `cadre` command, `--version` included, reads these keys as it starts.
import { defineSearchAttributeKey } from '@temporalio/common/lib/search-attributes';

export const CadreStatus = defineSearchAttributeKey('CadreStatus', 'KEYWORD');
export const CadrePlan = defineSearchAttributeKey('CadrePlan', 'KEYWORD');
/** A team worker's state (`agentTask`): `CadreWorkerState = "blocked"` finds the stuck ones. */
export const CadreWorkerState = defineSearchAttributeKey('CadreWorkerState', 'KEYWORD');
/** The host a run's workspace is bound to in a fleet: `CadreHost = "build-1"` finds its runs. */
export const CadreHost = defineSearchAttributeKey('CadreHost', 'KEYWORD');
/** The run a fork was forked from: `CadreForkedFrom = "<run>"` lists its forks. */
export const CadreForkedFrom = defineSearchAttributeKey('CadreForkedFrom', 'KEYWORD');
export const SEARCH_ATTRIBUTES = [CadreStatus, CadrePlan, CadreWorkerState, CadreHost, CadreForkedFrom];
