/** The ApplicationFailure a promise rejects with; the test fails if it resolves or rejects with anything else. */
import { ApplicationFailure } from '@temporalio/common';

export async function applicationFailure(run: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await run.then(
    () => new Error('expected a failure'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}
