/**
 * The step graph: cycles, what is upstream of a step, and which steps can run together.
 * Iterative throughout, so a 10,000-step chain or cycle is no deeper for the stack than one step.
 */

export type Needs = ReadonlyMap<string, readonly string[]>;

/** At most this many cycles are named: one fix often breaks several. */
const MAX_CYCLES = 10;

/** Cycles found by a depth-first walk in `order`, each as `[a, b, ..., a]`, where `a -> b` means b waits for a. */
export function findCycles(order: Iterable<string>, needs: Needs): string[][] {
  const state = new Map<string, 'visiting' | 'done'>();
  const onStack = new Map<string, number>();
  const path: string[] = [];
  const cycles: string[][] = [];
  const seen = new Set<string>();
  for (const start of order) {
    if (state.has(start)) continue;
    const frames: { id: string; next: number }[] = [{ id: start, next: 0 }];
    state.set(start, 'visiting');
    onStack.set(start, 0);
    path.push(start);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1];
      const deps = needs.get(frame.id) ?? [];
      if (frame.next < deps.length) {
        const dep = deps[frame.next++];
        if (state.get(dep) === 'visiting') {
          if (cycles.length < MAX_CYCLES) {
            const cycle = [...path.slice(onStack.get(dep)), dep].reverse();
            const key = cycle.slice(0, -1).sort().join('\u0000');
            if (!seen.has(key)) {
              seen.add(key);
              cycles.push(cycle);
            }
          }
        } else if (!state.has(dep)) {
          state.set(dep, 'visiting');
          onStack.set(dep, path.length);
          path.push(dep);
          frames.push({ id: dep, next: 0 });
        }
        continue;
      }
      frames.pop();
      path.pop();
      onStack.delete(frame.id);
      state.set(frame.id, 'done');
    }
  }
  return cycles;
}

/** Every step `id` waits for, directly or not. */
export function upstreamOf(id: string, needs: Needs): Set<string> {
  const seen = new Set<string>();
  const todo = [...(needs.get(id) ?? [])];
  while (todo.length > 0) {
    const dep = todo.pop() as string;
    if (seen.has(dep)) continue;
    seen.add(dep);
    for (const next of needs.get(dep) ?? []) todo.push(next);
  }
  return seen;
}

/**
 * Each step's level: the length of the longest chain of steps it waits for. Steps on one level
 * never wait for each other, so they can all be running at once. Undefined when there is a cycle.
 */
export function levels(ids: readonly string[], needs: Needs): Map<string, number> | undefined {
  const waitingOn = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const id of ids) {
    const deps = needs.get(id) ?? [];
    waitingOn.set(id, deps.length);
    for (const dep of deps) {
      const list = dependents.get(dep);
      if (list) list.push(id);
      else dependents.set(dep, [id]);
    }
  }
  const level = new Map<string, number>();
  const ready = ids.filter((id) => waitingOn.get(id) === 0);
  for (const id of ready) level.set(id, 0);
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i];
    for (const next of dependents.get(id) ?? []) {
      level.set(next, Math.max(level.get(next) ?? 0, (level.get(id) as number) + 1));
      const left = (waitingOn.get(next) as number) - 1;
      waitingOn.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  return ready.length === ids.length ? level : undefined;
}
