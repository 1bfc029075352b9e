/**
 * A stock Workflow Streams reader: this SDK's `subscribe`, the poll update Python's client uses
 * (their accepted polls are in the history), for the recorded histories and the benchmarks.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';

/** Reads a stream by poll updates, once its workflow has started, until an event of type `last`; resolves with the items read. */
export async function followByPolls(client: Client, workflowId: string, last: string): Promise<number> {
  for (;;) {
    try {
      await client.workflow.getHandle(workflowId).describe();
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  let items = 0;
  for await (const item of WorkflowStreamClient.create(client, workflowId).subscribe(['events'], 0)) {
    items++;
    if ((defaultPayloadConverter.fromPayload(item.data) as { type?: string }).type === last) break;
  }
  return items;
}
