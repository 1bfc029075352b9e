/**
 * With payload encryption on, failure messages and stack traces go into the failure's encoded
 * attributes, so the codec encrypts them too (Temporal keeps them in clear text otherwise). Loaded
 * by path: the worker runs it in the workflow sandbox as well.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
