/**
 * A small seccomp filter for the sandbox (bubblewrap's --seccomp), for what namespaces and dropped
 * capabilities leave open when the worker runs as root, whose uid the sandbox keeps:
 *  - setuid and setgid bits: a file the sandbox makes setuid in the workspace would be a setuid-root
 *    program on the host, so chmod and creating files with those bits fail (EPERM);
 *  - kernel interfaces a tool has no business with and whose bugs are the usual way out of a
 *    sandbox: io_uring, bpf, perf events, userfaultfd, keyrings, modules, kexec, ptrace and
 *    process_vm_*, mount and namespace calls, the system clock, syslog, swap, reboot.
 * Anything else the kernel allows is allowed. x86-64 and arm64; elsewhere no filter (the sandbox
 * runs without it, and says so in its containment).
 */
import { lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { leftByEndedProcess } from '../process-alive';

const EPERM = 1;
const ENOSYS = 38;

const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const retErrno = (errno: number) => 0x00050000 | errno;

/** seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8i (their low 32 bits, little-endian). */
const NR = 0;
const ARCH = 4;
const arg = (i: number) => 16 + 8 * i;

const SETID_BITS = 0o6000;
const O_CREAT = 0o100;
const O_TMPFILE = 0o20000000;

interface Table {
  audit: number;
  /** x86-64's x32 ABI: syscall numbers with this bit set would bypass the table. */
  x32Bit?: number;
  denied: number[];
  /** Calls whose argument `mode` must not set setuid or setgid; `flags` (when given) must hold O_CREAT for it to matter. */
  modes: { nr: number; mode: number; flags?: number }[];
  /** Calls that take their mode in a struct the filter cannot read: ENOSYS, so libc falls back. */
  unsupported: number[];
}

/** Calls numbered from 424 up are the same on every architecture. */
const COMMON = [425, 426, 427, 428, 429, 430, 431, 432, 433];

const TABLES: Record<string, Table> = {
  x64: {
    audit: 0xc000003e,
    x32Bit: 0x40000000,
    // ptrace, syslog, adjtimex, pivot_root, acct, settimeofday, mount, umount2, swapon, swapoff, reboot, init_module,
    // delete_module, quotactl, clock_settime, kexec_load, add_key, request_key, keyctl, unshare, perf_event_open,
    // name_to_handle_at, open_by_handle_at, clock_adjtime, setns, process_vm_readv/writev, finit_module,
    // kexec_file_load, bpf, userfaultfd
    denied: [101, 103, 159, 155, 163, 164, 165, 166, 167, 168, 169, 175, 176, 179, 227, 246, 248, 249, 250, 272, 298, 303, 304, 305, 308, 310, 311, 313, 320, 321, 323, ...COMMON],
    // chmod, fchmod, fchmodat, fchmodat2, creat, open, openat
    modes: [
      { nr: 90, mode: 1 },
      { nr: 91, mode: 1 },
      { nr: 268, mode: 2 },
      { nr: 452, mode: 2 },
      { nr: 85, mode: 1 },
      { nr: 2, mode: 2, flags: 1 },
      { nr: 257, mode: 3, flags: 2 },
    ],
    unsupported: [437], // openat2
  },
  arm64: {
    audit: 0xc00000b7,
    // ptrace, syslog, adjtimex, pivot_root, acct, settimeofday, mount, umount2, swapon, swapoff, reboot, init_module,
    // delete_module, quotactl, clock_settime, kexec_load, add_key, request_key, keyctl, unshare, perf_event_open,
    // name_to_handle_at, open_by_handle_at, clock_adjtime, setns, process_vm_readv/writev, finit_module,
    // kexec_file_load, bpf, userfaultfd
    denied: [117, 116, 171, 41, 89, 170, 40, 39, 224, 225, 142, 105, 106, 60, 112, 104, 217, 218, 219, 97, 241, 264, 265, 266, 268, 270, 271, 273, 294, 280, 282, ...COMMON],
    // fchmod, fchmodat, fchmodat2, openat
    modes: [
      { nr: 52, mode: 1 },
      { nr: 53, mode: 2 },
      { nr: 452, mode: 2 },
      { nr: 56, mode: 3, flags: 2 },
    ],
    unsupported: [437],
  },
};

type Instruction = [code: number, jt: number, jf: number, k: number];

/** The filter for this machine's architecture, as bytes (struct sock_filter[]), or undefined where there is no table. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  const table = TABLES[arch];
  if (!table) return undefined;
  const program: Instruction[] = [
    [LD_W_ABS, 0, 0, ARCH],
    // Another ABI (i386 through int 0x80 on x86-64) would number calls differently: refused.
    [JEQ_K, 1, 0, table.audit],
    [RET_K, 0, 0, retErrno(ENOSYS)],
    [LD_W_ABS, 0, 0, NR],
  ];
  if (table.x32Bit !== undefined) program.push([JGE_K, 0, 1, table.x32Bit], [RET_K, 0, 0, retErrno(ENOSYS)]);
  for (const nr of table.denied) program.push([JEQ_K, 0, 1, nr], [RET_K, 0, 0, retErrno(EPERM)]);
  for (const nr of table.unsupported) program.push([JEQ_K, 0, 1, nr], [RET_K, 0, 0, retErrno(ENOSYS)]);
  for (const call of table.modes) {
    // Each block starts with the call number loaded, and ends by loading it again.
    if (call.flags === undefined) {
      program.push([JEQ_K, 0, 3, call.nr], [LD_W_ABS, 0, 0, arg(call.mode)], [JSET_K, 0, 1, SETID_BITS], [RET_K, 0, 0, retErrno(EPERM)]);
    } else {
      program.push(
        [JEQ_K, 0, 5, call.nr],
        [LD_W_ABS, 0, 0, arg(call.flags)],
        [JSET_K, 0, 3, O_CREAT | O_TMPFILE],
        [LD_W_ABS, 0, 0, arg(call.mode)],
        [JSET_K, 0, 1, SETID_BITS],
        [RET_K, 0, 0, retErrno(EPERM)],
      );
    }
    program.push([LD_W_ABS, 0, 0, NR]);
  }
  program.push([RET_K, 0, 0, RET_ALLOW]);
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return bytes;
}

let file: string | null | undefined;

/** A filter folder's name: this, the pid of the process that wrote it, `-` and mkdtemp's six characters. */
const FOLDER_PREFIX = 'cadre-seccomp-';

/** The filter written once to a file of this process (bwrap reads it from an fd the launcher opens), or undefined. */
export function seccompFile(): string | undefined {
  if (file === undefined) {
    const program = seccompProgram();
    if (!program) file = null;
    else {
      removeOrphanedFolders(os.tmpdir());
      // A folder of this process's own (mkdtemp: 0700), so no one else can swap the filter for a looser one.
      const dir = mkdtempSync(path.join(os.tmpdir(), `${FOLDER_PREFIX}${process.pid}-`));
      file = path.join(dir, 'filter.bpf');
      writeFileSync(file, program, { mode: 0o600 });
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    }
  }
  return file ?? undefined;
}

/**
 * Removes the filter folders of this user's processes that ended without their exit handler (killed
 * with SIGKILL, or crashed): each folder names its process, and one that no longer runs needs none.
 */
export function removeOrphanedFolders(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!leftByEndedProcess(name, FOLDER_PREFIX)) continue;
    const folder = path.join(dir, name);
    try {
      const stat = lstatSync(folder);
      if (stat.isDirectory() && stat.uid === process.getuid?.()) rmSync(folder, { recursive: true, force: true });
    } catch {
      // Gone meanwhile, or not ours to remove.
    }
  }
}
