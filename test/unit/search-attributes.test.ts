import { status } from '@grpc/grpc-js';
import type { Connection } from '@temporalio/client';
import { SetupPermissionError, ensureSearchAttributes } from '../../src/worker/search-attributes';

/** A connection whose operator service answers like a server where we lack admin rights (unit test of one module). */
function connectionDenyingAdds(existing: Record<string, number>): Connection {
  return {
    operatorService: {
      listSearchAttributes: async () => ({ systemAttributes: { WorkflowType: 2 }, customAttributes: existing }),
      addSearchAttributes: async () => {
        throw Object.assign(new Error('Request unauthorized.'), { code: status.PERMISSION_DENIED });
      },
    },
  } as unknown as Connection;
}

describe('ensureSearchAttributes', () => {
  test('says which command to ask an operator for when it lacks the rights', async () => {
    const err = await ensureSearchAttributes(connectionDenyingAdds({ CadrePlan: 2, CadreWorkerState: 2, CadreHost: 2, CadreForkedFrom: 2 }), 'prod').catch((e) => e);
    expect(err).toBeInstanceOf(SetupPermissionError);
    expect(err.message).toBe(
      'cannot register search attributes CadreStatus on namespace "prod": permission denied. ' +
        'Ask an operator to run: temporal operator search-attribute create --namespace prod --name CadreStatus --type Keyword',
    );
  });

  test('does nothing when the attributes are there', async () => {
    expect(await ensureSearchAttributes(connectionDenyingAdds({ CadrePlan: 2, CadreStatus: 2, CadreWorkerState: 2, CadreHost: 2, CadreForkedFrom: 2 }), 'prod')).toEqual({
      added: [],
      present: ['CadreStatus', 'CadrePlan', 'CadreWorkerState', 'CadreHost', 'CadreForkedFrom'],
    });
  });
});
