/**
 * A cgroup per sandboxed call, where the worker may make one: it caps the call's processes and
 * memory as a whole. rlimits cannot do that for a worker running as root (the kernel exempts
 * root's processes from RLIMIT_NPROC, whatever namespace they are in), so a fork bomb would
 * otherwise reach the whole machine.
 *
 * cgroup v1 (a hierarchy per controller) and v2 (one unified hierarchy, controllers enabled for
 * the worker's own cgroup's children) are both read from /proc/self/mountinfo and /proc/self/cgroup.
 * Anything that fails here means "no cgroup": the call runs with rlimits only.
 *
 * A call's cgroups go back to a pool when its processes are gone (its PID namespace ended with it),
 * so a call costs two small writes, not the making and removing of cgroups.
 */
import { readFileSync, readdirSync, rmdirSync } from 'node:fs';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ResourceLimits } from './profile';
import { leftByEndedProcess } from '../process-alive';

interface Hierarchy {
  /** Where the cgroups of this controller (or of all, on v2) are made: the worker's own cgroup. */
  dir: string;
  version: 1 | 2;
  controllers: ('pids' | 'memory')[];
}

export interface CallCgroup {
  /** The cgroups' directories: the call's launcher writes its own pid to each one's cgroup.procs to join (sandbox/executor.ts). */
  readonly dirs: string[];
  /** Gives the cgroups back once their processes are gone. */
  release(): void;
  /** Whether processes and memory are capped for the whole call. */
  readonly controllers: string[];
}

/** A set of cgroups, one per hierarchy, with the same limits. */
type Slot = string[];

const PREFIX = `cadre-sandbox-${process.pid}-`;
const MAX_FREE_PER_LIMITS = 16;

let hierarchies: Hierarchy[] | undefined;
let counter = 0;
const free = new Map<string, Slot[]>();

/** The call's cgroups with the limits set, or undefined when none can be made here. */
export function callCgroup(limits: ResourceLimits): CallCgroup | undefined {
  if (hierarchies === undefined) {
    hierarchies = findHierarchies().filter(usable);
    if (hierarchies.length > 0) process.once('exit', removeAll);
  }
  if (hierarchies.length === 0) return undefined;
  const key = `${limits.processes}:${limits.memoryBytes}`;
  const slot = free.get(key)?.pop() ?? makeSlot(limits);
  if (!slot) return undefined;
  return {
    controllers: [...new Set(hierarchies.flatMap((h) => h.controllers))],
    dirs: slot,
    release: () => {
      const list = free.get(key) ?? [];
      if (slot.every(isEmpty) && list.length < MAX_FREE_PER_LIMITS) {
        list.push(slot);
        free.set(key, list);
      } else removeWhenEmpty(slot);
    },
  };
}

/** Names tried past ones taken before a slot is given up. */
const NAME_TRIES = 1000;

function makeSlot(limits: ResourceLimits): Slot | undefined {
  const slot: Slot = [];
  try {
    for (const hierarchy of hierarchies ?? []) {
      const dir = path.join(hierarchy.dir, freshName(hierarchy.dir));
      slot.push(dir);
      setLimits(dir, hierarchy, limits);
    }
    return slot;
  } catch {
    for (const dir of slot) tryRmdir(dir);
    return undefined;
  }
}

/**
 * A cgroup name made for this slot, in `dir`, skipping names another copy of this module in the
 * same process already took (a test runner loads modules anew for each file, counting from 0 again,
 * while the cgroups the last copy pooled stay until the process exits).
 */
function freshName(dir: string): string {
  for (let tries = 0; ; tries++) {
    const name = `${PREFIX}${++counter}`;
    try {
      mkdirSync(path.join(dir, name));
      return name;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= NAME_TRIES) throw err;
    }
  }
}

function setLimits(dir: string, hierarchy: Hierarchy, limits: ResourceLimits): void {
  const write = (file: string, value: number) => writeFileSync(path.join(dir, file), String(value));
  const optional = (file: string, value: number) => {
    try {
      write(file, value);
    } catch {
      // not offered here (no swap accounting)
    }
  };
  for (const controller of hierarchy.controllers) {
    if (controller === 'pids') write('pids.max', limits.processes);
    else if (hierarchy.version === 2) {
      write('memory.max', limits.memoryBytes);
      optional('memory.swap.max', 0);
    } else {
      write('memory.limit_in_bytes', limits.memoryBytes);
      optional('memory.memsw.limit_in_bytes', limits.memoryBytes);
    }
  }
}

function isEmpty(dir: string): boolean {
  try {
    return readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim() === '';
  } catch {
    return false;
  }
}

/** A cgroup whose last process just died may still be busy for a moment: tried again a few times, in the background. */
function removeWhenEmpty(slot: Slot, tries = 20): void {
  const left = slot.filter((dir) => !(isEmpty(dir) && tryRmdir(dir)));
  if (left.length > 0 && tries > 0) setTimeout(() => removeWhenEmpty(left, tries - 1), 50).unref();
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/** This worker's pooled cgroups, and those a worker that died left behind (its pid is in the name). */
function removeAll(): void {
  for (const slots of free.values()) for (const slot of slots) for (const dir of slot) tryRmdir(dir);
}

function removeLeftovers(dir: string): void {
  for (const name of safeReaddir(dir)) {
    if (leftByEndedProcess(name, 'cadre-sandbox-')) tryRmdir(path.join(dir, name));
  }
}


function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** A hierarchy the worker may make cgroups in: it tries one. */
function usable(hierarchy: Hierarchy): boolean {
  removeLeftovers(hierarchy.dir);
  const probe = path.join(hierarchy.dir, `${PREFIX}probe`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
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
