/**
 * Resource abuse under small limits (the plan's `sandbox.limits`): a fork bomb, threads, memory
 * hogs (heap, and tmpfs pages outside /tmp), a disk filler in the workspace (write, fallocate,
 * truncate), /tmp and $HOME fillers, descriptors, core dumps, raising limits. Each may only fail
 * its own call; the test runs another plan meanwhile and checks it completes.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { processesRunning, untilProcesses } from '../../support/processes';
import { type Case, type ToolOutcome, attackOutput, marker, reasons, shellCase } from '../cases';
import { exists } from '../host';

export const LIMITS = { processes: 64, memory: '256MiB', fileSize: '16MiB', tmp: '16MiB', openFiles: 256 };
const MiB = 1024 * 1024;
const FILE_SIZE = 16 * MiB;

/** A number the attack printed as `name=<n>`. */
const printed = (out: string, name: string) => {
  const found = new RegExp(`${name}=(\\d+)`).exec(out);
  return found ? Number(found[1]) : undefined;
};

/** The whole call was killed (the memory cgroup's OOM killer): its own call failed, nothing else. */
const killed = (o: ToolOutcome) => /ShellExit: command exited with code (12[89]|13\d|14\d)\b/.test(o.text);

export interface ResourceTargets {
  /** The most processes the host had at once during the batch, above what it had before. */
  hostProcessesAdded(): number;
}

export function resourceCases(t: ResourceTargets): Case[] {
  /**
   * The marker goes to stderr too: a call the OOM killer ends comes back as an error whose message
   * holds stderr's last lines, and that counts as having run (and as contained).
   */
  const c = (id: string, title: string, attack: string, escapes: Case['escapes']) => {
    const base = shellCase('resources', id, title, attack, escapes, { markStderr: true });
    return { ...base, ran: (o: ToolOutcome) => base.ran(o) || (killed(o) && o.text.includes(marker(id))) };
  };
  /** `name=<n>` printed and at most `max`, or the call killed; missing counts as an escape (the attack could not tell). */
  const atMost = (name: string, max: number, what: string) => (ctx: Parameters<Case['escapes']>[0]) => {
    if (killed(ctx.outcome)) return [];
    const n = printed(attackOutput(ctx.outcome), name);
    return reasons([n === undefined, `it did not print ${name}=`], [n !== undefined && n > max, `${what}: ${n} (the limit is ${max})`]);
  };
  const fileAtMost = (file: string, max: number) => ({ workspace }: { workspace: string }) => {
    const at = path.join(workspace, file);
    return reasons([exists(at) && statSync(at).size > max, `${file} is ${exists(at) ? statSync(at).size : 0} bytes on the host (fileSize is ${max})`]);
  };
  return [
    // Its processes churn too fast to count from inside: the host counts its own.
    c('res-fork-bomb', 'a fork bomb (for 3 s)', "timeout -s KILL 3 sh -c 'f() { f | f & }; f' 2>/dev/null; echo bomb-over", () =>
      reasons([t.hostProcessesAdded() > 1000, `the host had ${t.hostProcessesAdded()} more processes at once`])),
    // Processes that stay: counted by globbing /proc (no fork needed to count).
    c('res-processes', '200 sleeping processes', "python3 -c '\nimport os, subprocess\nfor i in range(200):\n    try:\n        subprocess.Popen([\"sleep\", \"4\"])\n    except OSError as e:\n        print(e); break\nprint(\"procs=%d\" % sum(1 for p in os.listdir(\"/proc\") if p.isdigit()))'", atMost('procs', LIMITS.processes, 'processes at once')),
    c('res-threads', 'a thousand threads', "python3 -c '\nimport threading, time\nn = 0\ntry:\n    for i in range(1000):\n        threading.Thread(target=time.sleep, args=(3,), daemon=True).start(); n += 1\nexcept Exception as e:\n    print(type(e).__name__)\nprint(\"threads=%d\" % n)'", atMost('threads', LIMITS.processes, 'threads started')),
    c('res-memory-heap', 'allocate 1 GiB', "python3 -c '\ntry:\n    b = bytearray(1 << 30); print(\"allocated=%d\" % len(b))\nexcept MemoryError:\n    print(\"allocated=0\")'", atMost('allocated', 256 * MiB, 'bytes allocated')),
    c('res-memory-grow', 'grow the heap 16 MiB at a time', "python3 -c '\nchunks = []\ntry:\n    while len(chunks) < 64: chunks.append(bytearray(16 << 20))\nexcept MemoryError:\n    pass\nprint(\"allocated=%d\" % (len(chunks) * (16 << 20)))'", atMost('allocated', 256 * MiB, 'bytes allocated')),
    // tmpfs outside /tmp and $HOME has no size of its own: its pages are memory, in files under fileSize.
    c('res-memory-shm', 'fill /dev/shm (memory) past the memory limit, 15 MiB a file', 'for i in $(seq 30); do head -c 15728640 /dev/zero > /dev/shm/f$i || break; done; echo "shm=$(cat /dev/shm/f* | wc -c)"', atMost('shm', 256 * MiB, 'bytes held in /dev/shm')),
    c('res-memory-rootfs', "fill the sandbox's root (memory) past the memory limit", 'mkdir -p /fill && for i in $(seq 30); do head -c 15728640 /dev/zero > /fill/f$i || break; done; echo "root=$(cat /fill/f* | wc -c)"', atMost('root', 256 * MiB, 'bytes held in the root tmpfs')),
    c('res-disk-dd', 'write 64 MiB into the workspace', 'dd if=/dev/zero of=big-dd bs=1M count=64 2>&1 | tail -1', fileAtMost('big-dd', FILE_SIZE)),
    c('res-disk-fallocate', 'fallocate 1 GiB in the workspace', 'fallocate -l 1G big-falloc; ls -l big-falloc', fileAtMost('big-falloc', FILE_SIZE)),
    c('res-disk-truncate', 'truncate a file to 1 TiB', 'truncate -s 1T big-sparse; ls -l big-sparse', fileAtMost('big-sparse', FILE_SIZE)),
    c('res-disk-append', 'append past the file size limit in many writes', "for i in $(seq 40); do head -c 1048576 /dev/zero >> big-append || break; done; ls -l big-append", fileAtMost('big-append', FILE_SIZE)),
    c('res-tmp-fill', 'fill /tmp', 'for i in 1 2 3 4 5 6; do head -c 8388608 /dev/zero > /tmp/fill-$i || break; done; echo "tmp=$(cat /tmp/fill-* | wc -c)"', atMost('tmp', 17 * MiB, 'bytes in /tmp')),
    c('res-home-fill', 'fill $HOME', 'for i in 1 2 3 4 5 6; do head -c 8388608 /dev/zero > $HOME/fill-$i || break; done; echo "home=$(cat $HOME/fill-* | wc -c)"', atMost('home', 17 * MiB, 'bytes in /home')),
    c('res-open-files', 'open files until it cannot', "python3 -c '\nfs = []\ntry:\n    while len(fs) < 5000: fs.append(open(\"/dev/null\"))\nexcept OSError:\n    pass\nprint(\"open=%d\" % len(fs))'", atMost('open', LIMITS.openFiles, 'files open at once')),
    c('res-raise-limits', 'raise its own limits', `bash -c 'ulimit -n 100000; ulimit -u 100000; ulimit -v unlimited; prlimit --pid $$ --nofile=100000:100000 --nproc=unlimited; echo "nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)"'`, (ctx) => [
      ...atMost('nofile', LIMITS.openFiles, 'descriptors allowed')(ctx),
      ...atMost('nproc', LIMITS.processes, 'processes allowed')(ctx),
    ]),
    c('res-core-dump', 'dump a core into the workspace', "ulimit -c unlimited; sh -c 'kill -SEGV $$'; ls core* 2>&1", ({ workspace }) => reasons([exists(path.join(workspace, 'core')), 'a core file was written'])),
    c('res-nice', 'raise its own priority', 'renice -n -20 -p $$; nice -n -20 true; echo "nice=$(( $(cut -d" " -f19 /proc/self/stat) + 20 ))"', (ctx) => reasons([(printed(attackOutput(ctx.outcome), 'nice') ?? 20) < 20, 'it raised its priority'])),
  ];
}

/**
 * A CPU spin in a step with a short timeout: it never returns, so it is proven to run by being
 * seen from outside (its arguments are unique), and contained by being gone soon after the step
 * timed out. `stop` ends the watch and kills what is left.
 */
export function spinCase(tag: string): { spin: Case; stop(): void } {
  const argv = ['perl', '-e', 'while (1) {}', `rt-spin-${tag}`];
  let seen = false;
  const watch = setInterval(() => (seen ||= processesRunning(argv).length > 0), 100);
  const spin: Case = {
    id: 'res-cpu-spin',
    category: 'resources',
    title: 'a CPU spin past the step timeout',
    call: { name: 'shell', args: { command: `echo ${marker('res-cpu-spin')}; exec perl -e 'while (1) {}' rt-spin-${tag}` } },
    ran: () => seen,
    escapes: async () => {
      try {
        await untilProcesses(argv, (pids) => pids.length === 0, 20_000);
        return [];
      } catch {
        return ['the spin outlived its step by 20 s'];
      }
    },
  };
  return {
    spin,
    stop: () => {
      clearInterval(watch);
      for (const pid of processesRunning(argv)) process.kill(pid, 'SIGKILL');
    },
  };
}
