/**
 * The bare baseline of bench/plan-overhead: what a user of plain Temporal would write. `Worker.create`
 * with the hand-written workflow alone in its bundle and one plain activity that reads the file,
 * on a task queue of its own: no interceptors, no sinks, no data converter, none of cadre's
 * activities or its `runTool` wrapper (parameter checks, confinement, redaction, blob store).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import type { ToolRequest, ToolResult } from '../src/activities';

/** The plain activity's name: the baseline workflow calls it by this name on the bare worker. */
export const BARE_ACTIVITY = 'readFile';

/** The same tool call `runTool` gets (`{ path }` in the workspace), done the plain way. */
async function readWorkspaceFile(request: ToolRequest): Promise<ToolResult> {
  const file = (request.params as { path: string }).path;
  const content = await readFile(path.join(request.workspace, file), 'utf8');
  return { output: { path: file, content }, attempt: 1 };
}

export async function createBareWorker(options: { address: string; namespace: string; taskQueue: string; logger: Parameters<typeof bundleWorkflowCode>[0]['logger'] }) {
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('./bare-workflows'), logger: options.logger });
  const connection = await NativeConnection.connect({ address: options.address });
  try {
    const worker = await Worker.create({
      connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      workflowBundle: { code },
      activities: { [BARE_ACTIVITY]: readWorkspaceFile },
    });
    return { worker, connection };
  } catch (err) {
    await connection.close();
    throw err;
  }
}
