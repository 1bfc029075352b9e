/**
 * A call's cgroups are made under the worker's own, named for its process: a second copy of the
 * module in the same process (a test runner loads modules anew for each file) still gets them,
 * past the names the first copy's pooled cgroups hold.
 */
import { existsSync } from 'node:fs';
import type * as Cgroups from '../../src/sandbox/cgroups';
import { DEFAULT_LIMITS } from '../../src/sandbox/profile';

function freshCopy(): typeof Cgroups {
  let copy: typeof Cgroups | undefined;
  jest.isolateModules(() => {
    copy = jest.requireActual<typeof Cgroups>('../../src/sandbox/cgroups');
  });
  return copy as typeof Cgroups;
}

test('a second copy of the module in one process gets a cgroup where the first did', () => {
  const first = freshCopy().callCgroup(DEFAULT_LIMITS);
  // Given back to the first copy's pool: its directories stay, under the names the next copy counts from.
  first?.release();
  const second = freshCopy().callCgroup(DEFAULT_LIMITS);
  try {
    expect(second?.controllers).toEqual(first?.controllers);
    if (first && second) {
      expect(second.dirs).not.toEqual(first.dirs);
      for (const dir of [...first.dirs, ...second.dirs]) expect(existsSync(dir)).toBe(true);
    }
  } finally {
    second?.release();
  }
});
