/**
 * A cgroup per sandboxed call, where the worker may make one: it caps the call's processes and
 * memory as a whole. rlimits cannot do that for a worker running as root (the kernel exempts
 * root's processes from RLIMIT_NPROC, whatever namespace they are in), so a fork bomb would
 * otherwise reach the whole machine.
 *
 * cgroup v1 (a hierarchy per controller) and v2 (one unified hierarchy, controllers enabled for
 * the worker's own cgroup's children) are both read from /proc/self/mountinfo and /proc/self/cgroup.
 * Anything that fails here means "no cgroup": the call runs with rlimits only.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ResourceLimits } from './profile';

interface Hierarchy {
  /** Where the cgroups of this controller (or of all, on v2) are made: the worker's own cgroup. */
  dir: string;
  version: 1 | 2;
  controllers: ('pids' | 'memory')[];
}

export interface CallCgroup {
  /** Moves a process (before it starts anything) into the call's cgroups. */
  join(pid: number): Promise<void>;
  /** Removes the cgroups once their processes are gone. */
  remove(): Promise<void>;
  /** Whether processes and memory are capped for the whole call. */
  readonly controllers: string[];
}

let hierarchies: Hierarchy[] | undefined;
let counter = 0;

/** The call's cgroups with the limits set, or undefined when none can be made here. */
export async function callCgroup(limits: ResourceLimits): Promise<CallCgroup | undefined> {
  hierarchies ??= findHierarchies();
  const made: { dir: string; hierarchy: Hierarchy }[] = [];
  const name = `cadre-sandbox-${process.pid}-${++counter}`;
  for (const hierarchy of hierarchies) {
    const dir = path.join(hierarchy.dir, name);
    try {
      await mkdir(dir);
      made.push({ dir, hierarchy });
      await setLimits(dir, hierarchy, limits);
    } catch {
      // This hierarchy is not ours to use (read-only, not delegated): the others may be.
    }
  }
  const usable = made.filter((m) => m.hierarchy.controllers.length > 0);
  if (usable.length === 0) {
    await Promise.all(made.map((m) => rmdir(m.dir).catch(() => undefined)));
    return undefined;
  }
  return {
    controllers: [...new Set(usable.flatMap((m) => m.hierarchy.controllers))],
    join: async (pid) => {
      for (const m of usable) await writeFile(path.join(m.dir, 'cgroup.procs'), String(pid));
    },
    remove: async () => {
      await Promise.all(made.map((m) => removeWhenEmpty(m.dir)));
    },
  };
}

async function setLimits(dir: string, hierarchy: Hierarchy, limits: ResourceLimits): Promise<void> {
  const write = (file: string, value: number) => writeFile(path.join(dir, file), String(value));
  for (const controller of hierarchy.controllers) {
    if (controller === 'pids') await write('pids.max', limits.processes);
    else if (hierarchy.version === 2) {
      await write('memory.max', limits.memoryBytes);
      await write('memory.swap.max', 0).catch(() => undefined);
    } else {
      await write('memory.limit_in_bytes', limits.memoryBytes);
      await write('memory.memsw.limit_in_bytes', limits.memoryBytes).catch(() => undefined);
    }
  }
}

/** A cgroup whose last process just died may still be busy for a moment. */
async function removeWhenEmpty(dir: string): Promise<void> {
  for (let tries = 0; tries < 20; tries++) {
    const procs = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
    if (procs.trim() === '' && (await rmdir(dir).then(() => true, () => false))) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function findHierarchies(): Hierarchy[] {
  let mountinfo: string;
  let own: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    own = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return [];
  }
  const ownPath = (match: (controllers: string[]) => boolean) =>
    own
      .split('\n')
      .map((line) => line.split(':'))
      .find(([, list]) => list !== undefined && match(list.split(',')))?.[2];
  const found: Hierarchy[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!after) continue;
    const mountPoint = before.split(' ')[4];
    const [fsType, , superOptions = ''] = after.split(' ');
    if (fsType === 'cgroup') {
      const controllers = superOptions.split(',').filter((o): o is 'pids' | 'memory' => o === 'pids' || o === 'memory');
      const at = controllers.length > 0 ? ownPath((list) => list.includes(controllers[0])) : undefined;
      if (at !== undefined) found.push({ dir: path.join(mountPoint, at), version: 1, controllers });
    } else if (fsType === 'cgroup2') {
      const at = ownPath((list) => list.length === 1 && list[0] === '');
      const v2 = at === undefined ? undefined : unifiedHierarchy(path.join(mountPoint, at));
      if (v2) found.push(v2);
    }
  }
  // With v1 controllers mounted, a unified hierarchy beside them has none of its own to offer.
  return found.some((h) => h.version === 1) ? found.filter((h) => h.version === 1) : found;
}

/** v2: the controllers the worker's cgroup hands to its children (it cannot enable them itself while it holds processes). */
function unifiedHierarchy(dir: string): Hierarchy | undefined {
  try {
    const enabled = readFileSync(path.join(dir, 'cgroup.subtree_control'), 'utf8').split(/\s+/);
    const controllers = (['pids', 'memory'] as const).filter((c) => enabled.includes(c));
    return controllers.length > 0 ? { dir, version: 2, controllers: [...controllers] } : undefined;
  } catch {
    return undefined;
  }
}
