/**
 * RunStream (src/workflows/common/run-stream.ts) reads and wraps members of the library's
 * WorkflowStream that are not its public API: its log for the `stream` query, `draining` to take
 * polls again, and the signal and update handlers it guards. An upgrade that renames them must
 * fail here, not in a run (test/streaming.test.ts checks the behaviour on a server).
 */
import { readFileSync } from 'node:fs';
import { WorkflowStream } from '@temporalio/workflow-streams/workflow';

const source = readFileSync(require.resolve('@temporalio/workflow-streams/workflow'), 'utf8');

test('the members RunStream relies on are where it looks for them', () => {
  expect(typeof WorkflowStream.prototype['onPublish' as keyof WorkflowStream]).toBe('function');
  expect(typeof WorkflowStream.prototype['onPoll' as keyof WorkflowStream]).toBe('function');
  for (const field of ['this.log =', 'this.baseOffset =', 'this.draining =']) expect(source).toContain(field);
  // The log's items are { topic, payload }, read by the `stream` query.
  expect(source).toMatch(/this\.log\.push\(\{ topic[^}]*payload/);
});
