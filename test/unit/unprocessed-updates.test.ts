import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { retryUnprocessed, wasUnprocessed } from '../../src/client/unprocessed-updates';

const failed = (type: string) => new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ message: `${type} failure`, type, nonRetryable: true }));

describe('updates no worker processed', () => {
  test('only the server\'s UnprocessedUpdate counts, not the workflow\'s own rejections', () => {
    expect(wasUnprocessed(failed('UnprocessedUpdate'))).toBe(true);
    expect(wasUnprocessed(failed('AnswerRejected'))).toBe(false);
    expect(wasUnprocessed(new Error('UnprocessedUpdate'))).toBe(false);
  });

  test('sent again until a worker takes it', async () => {
    let calls = 0;
    const send = async () => {
      calls += 1;
      if (calls < 3) throw failed('UnprocessedUpdate');
      return 'reply';
    };
    await expect(retryUnprocessed(send, [1, 1, 1])).resolves.toBe('reply');
    expect(calls).toBe(3);
  });

  test('a rejection by the workflow is not sent again', async () => {
    let calls = 0;
    const send = async () => {
      calls += 1;
      throw failed('AnswerRejected');
    };
    await expect(retryUnprocessed(send, [1, 1, 1])).rejects.toMatchObject({ cause: { type: 'AnswerRejected' } });
    expect(calls).toBe(1);
  });

  test('after the last pause the failure is the caller\'s', async () => {
    let calls = 0;
    const send = async () => {
      calls += 1;
      throw failed('UnprocessedUpdate');
    };
    await expect(retryUnprocessed(send, [1, 1])).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    expect(calls).toBe(3);
  });
});
