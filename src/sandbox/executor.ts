/**
 * The one way a tool starts a process: `prepareSandbox` turns what should run, where, with which
 * environment and profile, into the bubblewrap command that runs it contained (or, for a profile
 * of `none`, into nothing: the caller runs it as before). Shell commands and MCP stdio servers
 * both come through here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BRIDGE_SCRIPT, type EgressLookup, proxyEnv, startEgressProxy } from '../egress';
import { hasEgress } from '../egress/policy';
import { type Availability, bubblewrapAvailability, bwrapArgs } from './bubblewrap';
import { type CallCgroup, callCgroup } from './cgroups';
import { type Mount, type Placeholders, readMounts, releasePlaceholders, systemMounts, writableRoot } from './mounts';
import { seccompFile } from './seccomp';
import type { SandboxProfile } from './profile';

export interface SandboxRequest {
  /** The program and its arguments, as run inside. */
  argv: string[];
  /** Absolute; inside one of `writable` (or a read-only path). */
  cwd: string;
  /** The call's workspace or worktree (symlinks resolved): the only paths it may write. */
  writable: string[];
  profile: SandboxProfile;
  /** The tool's whole environment (toolEnvironment): nothing else of the worker's reaches it. */
  env: Record<string, string>;
  log?: (line: string) => void;
  /** How the egress proxy resolves names, instead of the system's (tests). */
  lookup?: EgressLookup;
}

export interface PreparedSandbox {
  file: string;
  args: string[];
  /** For the host-side processes (bwrap itself): just enough to run, nothing of the tool's. */
  env: Record<string, string>;
  /** Whole-call caps in force: `cgroup(pids,memory)` or `rlimits`. */
  readonly containment: string;
  /** Stops the egress proxy, removes placeholders and the cgroup: after the process is gone. */
  release(): Promise<void>;
}

/** Raised when the profile asks for bubblewrap and this machine cannot give it. */
export class SandboxUnavailable extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'SandboxUnavailable';
  }
}

/** Inside the sandbox, programs find the proxy at this loopback port (the sandbox's own loopback). */
const PROXY_PORT = 3128;
const PROXY_DIR = '/run/cadre';
/**
 * Starts bwrap: opens the seccomp filter on fd 9 for it (bwrap reads it from an fd); with
 * `join=<n>`, first moves itself into the n cgroups whose directories follow (a failed join fails
 * the call, exit 125); and raises its OOM score (a memory hog goes first, not the worker). The
 * launcher joins, not the worker: moving a process between cgroups can wait out an RCU grace
 * period (10-30 ms here), which would stall the worker's event loop on every call.
 */
const LAUNCHER = [
  'if [ -n "$1" ]; then exec 9<"$1" || exit 125; fi',
  'mode=$2; shift 2',
  'case "$mode" in',
  '  join=*) n=${mode#join=}; while [ "$n" -gt 0 ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; n=$((n - 1)); done;;',
  'esac',
  'echo 1000 > /proc/self/oom_score_adj || true',
  'exec "$@"',
].join('\n');
const SECCOMP_FD = 9;

let system: Mount[] | undefined;

export async function prepareSandbox(request: SandboxRequest): Promise<PreparedSandbox> {
  const available: Availability = bubblewrapAvailability();
  if (!available.ok) throw new SandboxUnavailable(available.reason);
  system ??= systemMounts();
  const placeholders: Placeholders = { made: [] };
  const cleanups: (() => Promise<void>)[] = [() => releasePlaceholders(placeholders)];
  const release = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const mounts: Mount[] = [...system, ...readMounts(request.profile.read)];
    for (const root of request.writable) mounts.push(...(await writableRoot(root, placeholders)));
    let argv = request.argv;
    let env = request.env;
    if (hasEgress(request.profile.egress)) {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'cadre-egress-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const proxy = await startEgressProxy(request.profile.egress, { socketPath: path.join(dir, 'egress.sock'), ...(request.log && { log: request.log }), ...(request.lookup && { lookup: request.lookup }) });
      cleanups.push(() => proxy.close());
      mounts.push({ kind: 'bind', source: dir, target: PROXY_DIR });
      argv = behindBridge(argv);
      env = { ...env, ...proxyEnv(PROXY_PORT) };
    }
    const cgroup: CallCgroup | undefined = callCgroup(request.profile.limits);
    if (cgroup) cleanups.push(async () => cgroup.release());
    const filter = seccompFile();
    const bwrap = bwrapArgs({
      mounts,
      cwd: request.cwd,
      env,
      limits: request.profile.limits,
      argv,
      ...(available.prlimit && { prlimit: available.prlimit }),
      ...(filter && { seccompFd: SECCOMP_FD }),
    });
    const hostEnv = { PATH: '/usr/local/bin:/usr/bin:/bin' };
    return {
      file: '/bin/sh',
      args: ['-c', LAUNCHER, 'cadre-sandbox', filter ?? '', ...(cgroup ? [`join=${cgroup.dirs.length}`, ...cgroup.dirs] : ['go']), available.bwrap, ...bwrap],
      env: hostEnv,
      containment: `${cgroup ? `cgroup(${cgroup.controllers.join(',')})` : 'rlimits'}${filter ? '+seccomp' : ''}`,
      release,
    };
  } catch (err) {
    await release();
    throw err;
  }
}

/** The command behind the egress bridge: it listens on the sandbox's loopback and forwards to the proxy's socket. */
function behindBridge(argv: string[]): string[] {
  const script = [
    'ready=/tmp/.cadre-egress-ready',
    'mkfifo "$ready" || exit 125',
    `"$1" -e "$2" ${PROXY_DIR}/egress.sock ${PROXY_PORT} >"$ready" &`,
    'read -r port <"$ready" || { echo "cadre: the egress proxy did not start" >&2; exit 125; }',
    'rm -f "$ready"; shift 2; exec "$@"',
  ].join('\n');
  return ['/bin/sh', '-c', script, 'cadre-egress', process.execPath, BRIDGE_SCRIPT, ...argv];
}
