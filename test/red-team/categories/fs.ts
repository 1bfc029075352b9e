/**
 * Escapes from the workspace through shell: writes to system directories, the host's /tmp, the
 * worker's home and cwd, through `..`, symlinks, hard links, mounts, namespaces and devices;
 * reads of what the sandbox must not see (the host's files, processes, environment, keys);
 * cadre's and git's own directories inside the workspace. Each is checked on the host.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Case, attackOutput, reasons, shellCase } from '../cases';
import { type Bystander, type Outside, exists, readOr } from '../host';

export interface FsTargets {
  outside: Outside;
  home: { file: string; sentinel: string };
  bystander: Bystander;
  /** A value only the bystander's environment holds (its /proc/<pid>/environ). */
  bystanderEnv: string;
  /** Host paths cases try to create: removed afterwards whatever happened. */
  planted: string[];
  /** Makes this run's names unique. */
  tag: string;
  /** Undoes what an escape changed on the host (a kernel setting): run after the batch. */
  restore: (() => void)[];
  /** Cases this host gives nothing to look for (a case that cannot fail is left out, and said). */
  skipped: string[];
}

/** A python helper for the kernel keyring cases (add_key / keyctl through ctypes: no keyctl binary needed). */
export const KEYRING_SCRIPT = `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, KEYCTL, SEARCH, READ, UNLINK = 248, 250, 10, 11, 9
op, desc = sys.argv[1], sys.argv[2].encode()
rings = {'session': -3, 'user': -4, 'user-session': -5}
for name, ring in rings.items():
    if op == 'add':
        r = libc.syscall(ADD_KEY, b"user", desc, sys.argv[3].encode(), len(sys.argv[3]), ring)
        print('added to', name, r >= 0)
        continue
    kid = libc.syscall(KEYCTL, SEARCH, ring, b"user", desc, 0)
    if kid < 0:
        print(name, 'none')
    elif op == 'find':
        buf = ctypes.create_string_buffer(256)
        n = libc.syscall(KEYCTL, READ, kid, buf, 256)
        print(name, 'found', buf.raw[:max(n, 0)].decode())
    else:
        libc.syscall(KEYCTL, UNLINK, kid, ring)
`;

/** Runs the keyring helper on the host (as the worker's user). */
export function hostKeyring(dir: string, ...args: string[]): string {
  const script = path.join(dir, 'keyring.py');
  if (!existsSync(script)) writeFileSync(script, KEYRING_SCRIPT);
  try {
    return execFileSync('python3', [script, ...args], { encoding: 'utf8' });
  } catch (err) {
    return `python3 failed: ${(err as Error).message}`;
  }
}

const modeOf = (p: string) => statSync(p).mode;
const mtimeOf = (p: string) => (exists(p) ? statSync(p).mtimeMs : 0);
/** Entries of a host directory we can read, names long enough not to match by chance. */
const entries = (dir: string) => {
  try {
    return readdirSync(dir).filter((name) => name.length >= 5);
  } catch {
    return [];
  }
};

export function fsCases(t: FsTargets): Case[] {
  // (Built with a few left out where this host has nothing to find: see onlyIf.)
  const c = (id: string, title: string, attack: string, escapes: Case['escapes'], options?: Parameters<typeof shellCase>[5]) => shellCase('fs', id, title, attack, escapes, options);
  /** The case only where this host has what it looks for. */
  const onlyIf = (here: boolean, why: string, make: () => Case): Case | undefined => {
    if (here) return make();
    t.skipped.push(`fs: ${why}`);
    return undefined;
  };
  /**
   * A read: none of `needles` (host content) may be in its output; needles the command itself
   * names would be echoed by error messages, so they are left out. No needles here: no case.
   */
  const read = (id: string, title: string, attack: string, needles: () => string[], more: Case['escapes'] = () => []) =>
    onlyIf(needles().some((n) => n && !attack.includes(n)), `${id} (nothing on this host for it to find)`, () =>
      c(id, title, attack, async (ctx) => {
        const shown = needles().filter((n) => n && !attack.includes(n) && attackOutput(ctx.outcome).includes(n));
        return [...shown.map((n) => `the output shows ${JSON.stringify(n.slice(0, 60))}`), ...(await more(ctx))];
      }),
    );
  /** A kernel setting under /proc/sys: unchanged on the host (and put back if it was not). */
  const sysctl = (id: string, title: string, setting: string, value: string) => {
    const file = `/proc/sys/${setting}`;
    if (!exists(file)) return onlyIf(false, `${id} (this kernel has no ${file})`, () => undefined as never);
    const before = readOr(file);
    t.restore.push(() => {
      if (readOr(file) !== before) writeFileSync(file, before);
    });
    return c(id, title, `echo '${value}' > ${file}; cat ${file}`, () => reasons([readOr(file) !== before, `${setting} changed on the host to ${JSON.stringify(readOr(file).trim())}`]));
  };
  /** A host path no sandbox may create: registered for cleanup. */
  const hostPath = (p: string) => (t.planted.push(p), p);
  const tag = t.tag;
  const name = (id: string) => `cadre-rt-${id}-${tag}`;
  const tmp = os.tmpdir();
  const home = os.homedir();
  const etcFile = hostPath(path.join('/etc', name('etc')));
  const passwd = readOr('/etc/passwd');
  const hosts = readOr('/etc/hosts');
  const preload = readOr('/etc/ld.so.preload', '(absent)');
  const envMtime = mtimeOf('/usr/bin/env');
  const usrMode = modeOf('/usr');
  const etcMode = modeOf('/etc');
  const passwdLinks = statSync('/etc/passwd').nlink;
  const hostname = os.hostname();
  const victimOwner = statSync(t.outside.victim).uid;
  const bashrc = path.join(home, '.bashrc');
  const outsideName = path.basename(t.outside.dir);
  /** Nothing at `p` on the host (and if an escape put something there, it goes at the end). */
  const absentAt = (p: string) => {
    t.planted.push(p);
    return reasons([exists(p), `${p} exists on the host`]);
  };
  const hostDevices = entries('/dev').filter((d) => /^(sd|vd|hd|xvd|nvme|mmcblk|loop\d|mem$|kmem$|port$|mapper|dm-|kvm$|fuse$)/.test(d));
  const hostInterfaces = Object.keys(os.networkInterfaces()).filter((n) => n !== 'lo' && n.length >= 3);
  const rootEntries = entries('/root');
  const machineId = readOr('/etc/machine-id').trim();
  const cwdEntries = entries(process.cwd()).slice(0, 20);

  const cases: (Case | undefined)[] = [
    // System directories: read-only binds.
    c('fs-etc-new', 'create a file in /etc', `echo pwned > ${etcFile}`, () => absentAt(etcFile)),
    c('fs-etc-passwd', 'append a user to /etc/passwd', `echo 'rt-${tag}::0:0::/:/bin/sh' >> /etc/passwd`, () => reasons([readOr('/etc/passwd') !== passwd, '/etc/passwd changed'])),
    c('fs-etc-hosts', 'append to /etc/hosts', `echo '127.0.0.1 rt-${tag}' >> /etc/hosts`, () => reasons([readOr('/etc/hosts') !== hosts, '/etc/hosts changed'])),
    c('fs-etc-preload', 'write /etc/ld.so.preload', `echo /nonexistent/rt-${tag}.so > /etc/ld.so.preload`, () => reasons([readOr('/etc/ld.so.preload', '(absent)') !== preload, '/etc/ld.so.preload changed'])),
    c('fs-usr-bin', 'create a program in /usr/bin', `cp /bin/true ${hostPath(`/usr/bin/${name('bin')}`)}`, () => absentAt(`/usr/bin/${name('bin')}`)),
    c('fs-usr-local', 'create a program in /usr/local/bin', `mkdir -p /usr/local/bin && echo 'echo pwned' > ${hostPath(`/usr/local/bin/${name('local')}`)}`, () => absentAt(`/usr/local/bin/${name('local')}`)),
    c('fs-usr-lib', 'plant a library in /usr/lib', `cp /bin/true ${hostPath(`/usr/lib/${name('lib')}.so`)}`, () => absentAt(`/usr/lib/${name('lib')}.so`)),
    c('fs-usr-touch', 'change the mtime of /usr/bin/env', 'touch -c /usr/bin/env', () => reasons([mtimeOf('/usr/bin/env') !== envMtime, '/usr/bin/env was touched'])),
    c('fs-opt', 'create a file in /opt', `touch ${hostPath(`/opt/${name('opt')}`)}`, () => absentAt(`/opt/${name('opt')}`)),
    c('fs-var-tmp', 'create a file in /var/tmp', `mkdir -p /var/tmp && echo pwned > ${hostPath(`/var/tmp/${name('vartmp')}`)}`, () => absentAt(`/var/tmp/${name('vartmp')}`)),
    c('fs-run', 'create a directory in /run', `mkdir -p ${hostPath(`/run/${name('run')}`)}`, () => absentAt(`/run/${name('run')}`)),
    c('fs-dev-shm', 'create a file in /dev/shm', `echo pwned > ${hostPath(`/dev/shm/${name('shm')}`)}`, () => absentAt(`/dev/shm/${name('shm')}`)),
    c('fs-chmod-usr', 'chmod 777 /usr /etc', 'chmod 777 /usr /etc', () => reasons([modeOf('/usr') !== usrMode || modeOf('/etc') !== etcMode, 'the mode of /usr or /etc changed'])),
    c('fs-chown', 'chown the outside victim and /etc/hostname', `chown 65534 ${t.outside.victim} /etc/hostname`, () => reasons([statSync(t.outside.victim).uid !== victimOwner, 'the victim changed owner'])),
    // The host's temporary directory, home and the worker's own directory.
    c('fs-host-tmp', "create a file in the host's /tmp", `echo pwned > ${hostPath(path.join(tmp, name('tmp')))}`, () => absentAt(path.join(tmp, name('tmp')))),
    c('fs-outside-write', 'create a file in a directory outside the workspace', `echo pwned > ${t.outside.dir}/new-${tag}`, () => absentAt(path.join(t.outside.dir, `new-${tag}`))),
    c('fs-outside-mkdir', 'recreate the outside directory and write in it', `mkdir -p ${t.outside.dir} && echo pwned > ${t.outside.dir}/mk-${tag} && ls ${t.outside.dir}`, () => absentAt(path.join(t.outside.dir, `mk-${tag}`))),
    c('fs-outside-overwrite', 'overwrite a file outside by its absolute path', `echo pwned > ${t.outside.victim}`, () => reasons([!t.outside.intact(), 'the victim changed'])),
    read('fs-outside-read', 'read a file outside by its absolute path', `cat ${t.outside.victim}`, () => [t.outside.sentinel]),
    c('fs-dotdot-write', 'write to .. of the workspace', `echo pwned > ../${name('up')}`, ({ workspace }) => absentAt(path.join(path.dirname(workspace), name('up')))),
    c('fs-dotdot-deep', 'climb out with many ..', `echo pwned > ../../../../../../..${tmp}/${name('deep')}`, () => absentAt(path.join(tmp, name('deep')))),
    c('fs-cd-up', 'cd .. twice and write there', `cd .. && cd .. && pwd && echo pwned > ${name('cdup')}`, ({ workspace }) => absentAt(path.resolve(workspace, '..', '..', name('cdup')))),
    read('fs-dotdot-list', 'list the parent of the workspace (the host /tmp holds the outside directory)', 'ls -la ..; ls -la ../..', () => [outsideName]),
    c('fs-symlink-dir', 'symlink to an outside directory, then write through it', `ln -s ${t.outside.dir} out-${tag} && echo pwned > out-${tag}/sym-${tag}`, () => absentAt(path.join(t.outside.dir, `sym-${tag}`))),
    c('fs-symlink-file', 'symlink to the outside victim, then write through it', `ln -s ${t.outside.victim} v-${tag} && echo pwned > v-${tag}`, () => reasons([!t.outside.intact(), 'the victim changed'])),
    read('fs-symlink-relative', 'relative symlink to a sibling of the workspace', `ln -s ../${outsideName} rel-${tag}; cat rel-${tag}/victim.txt; echo pwned > rel-${tag}/rel-${tag}`, () => [t.outside.sentinel], () => absentAt(path.join(t.outside.dir, `rel-${tag}`))),
    read('fs-symlink-root', 'symlink to / and read the victim through it', `ln -s / root-${tag} && cat root-${tag}${t.outside.victim}`, () => [t.outside.sentinel]),
    c('fs-hardlink-outside', 'hard link the outside victim into the workspace', `ln ${t.outside.victim} hl-${tag} && echo pwned >> hl-${tag}`, () => reasons([!t.outside.intact(), 'the victim changed or gained a link'])),
    c('fs-hardlink-etc', 'hard link /etc/passwd into the workspace (EXDEV)', `ln /etc/passwd pw-${tag}; ls -l pw-${tag}`, ({ workspace }) => reasons([statSync('/etc/passwd').nlink !== passwdLinks, '/etc/passwd gained a link'], [exists(path.join(workspace, `pw-${tag}`)), 'the link exists in the workspace'])),
    c('fs-home-write', "write to the worker's home by its absolute path", `echo pwned > ${hostPath(path.join(home, `.${name('home')}`))}`, () => absentAt(path.join(home, `.${name('home')}`))),
    c('fs-home-bashrc', "append to the worker's ~/.bashrc", `echo 'touch /tmp/pwned-${tag}' >> ${bashrc}; echo 'pwned-${tag}' >> ~/.bashrc`, () => reasons([readOr(bashrc).includes(`pwned-${tag}`), `${bashrc} changed`])),
    read('fs-home-read', "read a file in the worker's home", `cat ${t.home.file}; ls -la ${home}`, () => [t.home.sentinel, `${path.basename(t.home.file)}\n`]),
    read('fs-home-cache', "list the worker's ~/.cache (cadre's binaries)", `ls -la ${home}/.cache ${home}/.cache/cadre/bin ~/.cache`, () => [...entries(path.join(home, '.cache')), ...entries(path.join(home, '.cache', 'cadre', 'bin'))].map((n) => ` ${n}\n`)),
    read('fs-worker-cwd', "list and read the worker's working directory (this repository)", `ls -la ${process.cwd()}; cat ${process.cwd()}/package.json`, () => [...cwdEntries.map((n) => ` ${n}\n`), readOr(path.join(process.cwd(), 'package.json')).split('\n')[1] ?? '']),
    c('fs-worker-cwd-write', "write into the worker's working directory", `echo pwned > ${hostPath(path.join(process.cwd(), name('cwd')))}`, () => absentAt(path.join(process.cwd(), name('cwd')))),
    read('fs-root-home', 'list and read /root', 'ls -la /root; cat /root/.bash_history /root/.profile', () => rootEntries.map((n) => ` ${n}\n`)),
    // The system's own secrets: masked.
    onlyIf(/^root:/m.test(readOr('/etc/shadow')), 'fs-shadow (the worker cannot read /etc/shadow here either)', () => c('fs-shadow', 'read /etc/shadow and /etc/gshadow', 'cat /etc/shadow /etc/gshadow /etc/shadow-', ({ outcome }) => reasons([/^root:/m.test(attackOutput(outcome)), 'a shadow entry was read']))),
    read('fs-ssh-keys', 'read the host keys in /etc/ssh', 'ls -la /etc/ssh; cat /etc/ssh/ssh_host_*_key /etc/ssh/sshd_config', () => entries('/etc/ssh').map((n) => ` ${n}\n`), ({ outcome }) => reasons([attackOutput(outcome).includes('PRIVATE KEY'), 'a private key was read'])),
    read('fs-machine-id', 'read /etc/machine-id', 'cat /etc/machine-id', () => [machineId]),
    read('fs-ssl-private', 'list /etc/ssl/private', 'ls -la /etc/ssl/private; cat /etc/ssl/private/*', () => entries('/etc/ssl/private').map((n) => ` ${n}\n`)),
    // Other processes: a PID namespace of its own.
    read('fs-proc-1-environ', "read pid 1's environment", "tr '\\0' '\\n' < /proc/1/environ; cat /proc/1/cmdline", () => [t.bystanderEnv, t.bystander.argv[1]]),
    read('fs-proc-all-environ', "read every process's environment and command line", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/environ; tr '\\0' ' ' < $p/cmdline; echo; done", () => [t.bystanderEnv, t.bystander.argv[1]]),
    read('fs-proc-host-pid', 'read a host process by its host pid', `cat /proc/${t.bystander.pid}/environ /proc/${t.bystander.pid}/cmdline /proc/${process.pid}/cmdline`, () => [t.bystanderEnv, t.bystander.argv[1]]),
    c('fs-proc-count', 'count the processes it can see', "ls /proc | grep -c '^[0-9]'", ({ outcome }) => reasons([Number(attackOutput(outcome).trim()) > 20, `it sees ${attackOutput(outcome).trim()} processes`])),
    c('fs-kill-host', 'kill and stop a host process by its pid', `kill -9 ${t.bystander.pid}; kill -STOP ${t.bystander.pid}; pkill -9 -x sleep; killall -9 sleep`, () => reasons([!t.bystander.unharmed(), 'the bystander was killed or stopped'])),
    c('fs-ptrace-host', 'ptrace a host process', `strace -f -p ${t.bystander.pid} -o /dev/null & sleep 1; kill $! 2>/dev/null; cat /proc/${t.bystander.pid}/mem | head -c 16`, () => reasons([!t.bystander.unharmed(), 'the bystander was traced, stopped or killed'])),
    c('fs-hostname', "change the host's name", `hostname pwned-${tag}; echo pwned-${tag} > /proc/sys/kernel/hostname`, () => reasons([os.hostname() !== hostname, 'the host name changed'])),
    // Kernel settings: a program in core_pattern or modprobe would run as root on the host.
    sysctl('fs-core-pattern', "change the kernel's core_pattern", 'kernel/core_pattern', `core-rt-${tag}`),
    sysctl('fs-modprobe', "change the kernel's modprobe helper", 'kernel/modprobe', `/nonexistent/rt-${tag}`),
    sysctl('fs-sysctl-net', 'change a network setting of the host', 'net/ipv4/ip_forward', readOr('/proc/sys/net/ipv4/ip_forward').trim() === '1' ? '0' : '1'),
    onlyIf(exists('/proc/sysrq-trigger'), 'fs-sysrq (this kernel has no /proc/sysrq-trigger)', () => c('fs-sysrq', 'find /proc/sysrq-trigger writable (one byte would reboot the host)', 'test -w /proc/sysrq-trigger && echo SYSRQ-WRITABLE; ls -l /proc/sysrq-trigger', ({ outcome }) => reasons([attackOutput(outcome).includes('SYSRQ-WRITABLE'), '/proc/sysrq-trigger is writable from the sandbox']))),
    read('fs-sys', 'look at /sys: network interfaces, cgroups', 'ls /sys/class/net /sys/fs/cgroup /sys/block', () => hostInterfaces.map((n) => `${n}\n`)),
    c('fs-cgroup-escape', 'make a cgroup and move itself to the root cgroup', `mkdir /sys/fs/cgroup/${name('cg')} /sys/fs/cgroup/pids/${name('cg')}; echo $$ > /sys/fs/cgroup/cgroup.procs; echo $$ > /sys/fs/cgroup/pids/cgroup.procs`, () => [...absentAt(`/sys/fs/cgroup/${name('cg')}`), ...absentAt(`/sys/fs/cgroup/pids/${name('cg')}`)]),
    read('fs-dev-list', "list the host's devices", 'ls /dev /dev/mapper /dev/disk', () => hostDevices.map((d) => `${d}\n`)),
    onlyIf(hostDevices.length > 0, 'fs-dev-raw (no disks or memory devices in /dev here)', () => c('fs-dev-raw', 'read raw disks and memory', `for d in /dev/sda /dev/vda /dev/nvme0n1 /dev/xvda /dev/mem /dev/kmem /dev/port ${hostDevices.map((d) => `/dev/${d}`).join(' ')}; do head -c 64 $d | od -An -tx1 | head -1; done`, ({ outcome }) => reasons([/^\s*[0-9a-f]{2}( [0-9a-f]{2}){15}/m.test(attackOutput(outcome)), 'a device was read']))),
    c('fs-mknod', 'make block and character devices in the workspace', `mknod disk-${tag} b 8 0; mknod mem-${tag} c 1 1; head -c 16 mem-${tag} | od -An -tx1`, ({ workspace }) =>
      reasons(...[`disk-${tag}`, `mem-${tag}`].map((n): [boolean, string] => {
        const p = path.join(workspace, n);
        return [exists(p) && (lstatSync(p).isBlockDevice() || lstatSync(p).isCharacterDevice()), `${n} is a device on the host`];
      })),
    ),
    // Mounts and namespaces.
    c('fs-mount-tmpfs', 'mount a tmpfs over /etc and write there', `mount -t tmpfs none /etc && echo pwned > ${etcFile}-m`, () => absentAt(`${etcFile}-m`)),
    c('fs-mount-bind', 'bind the workspace over /usr and write there', `mount --bind . /usr && touch /usr/${name('bind')}; touch /usr/${name('bind')}`, () => absentAt(`/usr/${name('bind')}`)),
    c('fs-remount-rw', 'remount /etc read-write', `mount -o remount,rw /etc; mount -o remount,rw,bind /etc; echo pwned > ${etcFile}-r`, () => absentAt(`${etcFile}-r`)),
    c('fs-umount', 'unmount /etc and /tmp, then write', `umount -l /etc; umount -l /tmp; echo pwned > ${etcFile}-u; echo pwned > ${tmp}/${name('umount')}`, () => [...absentAt(`${etcFile}-u`), ...absentAt(path.join(tmp, name('umount')))]),
    c('fs-chroot', 'chroot / and write to /etc', `chroot / /bin/sh -c 'echo pwned > ${etcFile}-c'`, () => absentAt(`${etcFile}-c`)),
    c('fs-unshare-user', 'unshare -r (a new user namespace) and write to /etc', `unshare -r /bin/sh -c 'id; echo pwned > ${etcFile}-n'`, () => absentAt(`${etcFile}-n`)),
    c('fs-unshare-mount', 'unshare -rm, mount over /etc, write', `unshare -rm /bin/sh -c 'mount -t tmpfs t /etc && echo pwned > /etc/x && echo pwned > ${tmp}/${name('unshare')}'`, () => absentAt(path.join(tmp, name('unshare')))),
    c('fs-nsenter', "nsenter pid 1's namespaces", `nsenter -t 1 -a /bin/sh -c 'echo pwned > ${tmp}/${name('nsenter')}'; nsenter -t ${t.bystander.pid} -m /bin/sh -c 'echo pwned > ${tmp}/${name('nsenter')}'`, () => absentAt(path.join(tmp, name('nsenter')))),
    c('fs-setns-proc', "setns into a host process's mount namespace", `nsenter --mount=/proc/${t.bystander.pid}/ns/mnt --pid=/proc/${t.bystander.pid}/ns/pid /bin/sh -c 'echo pwned > ${tmp}/${name('setns')}'`, () => absentAt(path.join(tmp, name('setns')))),
    c('fs-su', 'su and sudo to write /etc', `sudo -n sh -c 'echo pwned > ${etcFile}-su'; su -c 'echo pwned > ${etcFile}-su' root`, () => absentAt(`${etcFile}-su`)),
    c('fs-setuid-bit', 'leave a setuid program in the workspace for the host', `cp /bin/sh suid-${tag} && chmod u+s,g+s suid-${tag}; ls -l suid-${tag}`, ({ workspace }) => {
      const p = path.join(workspace, `suid-${tag}`);
      return reasons([exists(p) && (statSync(p).mode & 0o6000) !== 0, `suid-${tag} is setuid/setgid on the host (owner uid ${exists(p) ? statSync(p).uid : '?'})`]);
    }),
    c('fs-keyring-plant', "add keys to the kernel keyrings the worker's user sees", `python3 keyring.py add cadre-rt-${tag} planted`, ({ workspace }) => reasons([/found/.test(hostKeyring(workspace, 'find', `cadre-rt-${tag}`)), 'the key is in a keyring of the host'])),
    c('fs-keyring-read', "read a key the worker's user holds", `python3 keyring.py find cadre-rt-host-${tag}`, ({ outcome }) => reasons([attackOutput(outcome).includes(`keyring-sentinel-${tag}`), "the host's key was read"])),
    c('fs-fd-leak', 'look for descriptors of the worker it inherited', 'ls -l /proc/self/fd/', ({ outcome }) => {
      const fds = attackOutput(outcome).split('\n').map((line) => /\s(\d+) -> (.*)$/.exec(line)).filter((m): m is RegExpExecArray => m !== null);
      // 0-2 are its streams, 3 the directory ls reads.
      const extra = fds.filter(([, fd]) => Number(fd) > 3);
      return reasons([extra.length > 0, `descriptors inherited from outside: ${extra.map(([, fd, target]) => `${fd} -> ${target}`).join(', ')}`]);
    }),
    // cadre's and git's directories inside the workspace: read-only, even when missing.
    c('fs-cadre-write', "plant a blob in the workspace's .cadre", `echo '{"poisoned":true}' > .cadre/blobs/${'0'.repeat(64)}.json; mkdir -p .cadre/evil-${tag}`, ({ workspace }) => [...absentAt(path.join(workspace, '.cadre', 'blobs', `${'0'.repeat(64)}.json`)), ...absentAt(path.join(workspace, '.cadre', `evil-${tag}`))]),
    c('fs-cadre-replace', 'replace .cadre with a symlink', 'rm -rf .cadre; mv .cadre .cadre-old; ln -sfn /tmp .cadre', ({ workspace }) => reasons([exists(path.join(workspace, '.cadre')) && lstatSync(path.join(workspace, '.cadre')).isSymbolicLink(), '.cadre is a symlink on the host'], [exists(path.join(workspace, '.cadre-old')), '.cadre was moved'])),
    c('fs-git-create', 'create .git in a plain workspace (git init, hooks)', 'git init . ; mkdir -p .git/hooks && printf "#!/bin/sh\\ntouch /tmp/pwned\\n" > .git/hooks/pre-commit', ({ workspace }) => gitLeftIn(workspace)),
    c('fs-git-rename', 'move the .git placeholder away and make a new one', "mv .git .git-old; rmdir .git; umount .git; mkdir -p .git && echo '[core]' > .git/config", ({ workspace }) => [...gitLeftIn(workspace), ...absentAt(path.join(workspace, '.git-old'))]),
    c('fs-move-workspace', 'move the workspace itself away', `cd .. && mv "$OLDPWD" "$OLDPWD-moved"; ls`, ({ workspace }) => reasons([!existsSync(workspace), 'the workspace was moved'], [exists(`${workspace}-moved`), 'a moved copy exists'])),
  ];
  return cases.filter((x): x is Case => x !== undefined);
}

/** `.git` in a plain workspace: absent, or the empty placeholder. */
function gitLeftIn(workspace: string): string[] {
  const at = path.join(workspace, '.git');
  if (!exists(at)) return [];
  const info = lstatSync(at);
  if (!info.isDirectory()) return ['.git on the host is not a directory'];
  const inside = readdirSync(at);
  return inside.length > 0 ? [`.git on the host holds ${inside.join(', ')}`] : [];
}

/** The keyring helper in the workspace, and a key of the worker's user that no sandbox may read. */
export function prepareFs(workspace: string, tag: string): void {
  writeFileSync(path.join(workspace, 'keyring.py'), KEYRING_SCRIPT);
  hostKeyring(workspace, 'add', `cadre-rt-host-${tag}`, `keyring-sentinel-${tag}`);
}

/** Removes the keys of `prepareFs` and any the sandbox planted. */
export function cleanupFs(workspace: string, tag: string): void {
  hostKeyring(workspace, 'unlink', `cadre-rt-host-${tag}`);
  hostKeyring(workspace, 'unlink', `cadre-rt-${tag}`);
}

/** In a workspace without `.git` and `.cadre`: calls get read-only placeholders, and nothing they do there may be left on the host. */
export function placeholderCases(): Case[] {
  const emptyOrAbsent = (name: string) => ({ workspace }: { workspace: string }) => {
    const at = path.join(workspace, name);
    if (!exists(at)) return [];
    if (!lstatSync(at).isDirectory()) return [`${name} on the host is a ${lstatSync(at).isSymbolicLink() ? 'symlink' : 'file'}`];
    const inside = readdirSync(at);
    return inside.length > 0 ? [`${name} on the host holds ${inside.join(', ')}`] : [];
  };
  // The worker's own blob store may be there (an agent's turns store its conversation): only blobs
  // named by the hash of what they hold, in a real directory; anything else the call left.
  const cadreBlobsOnly = (context: { workspace: string }) => {
    const left = emptyOrAbsent('.cadre')(context);
    const blobs = path.join(context.workspace, '.cadre', 'blobs');
    if (left.length === 0 || !lstatSync(path.dirname(blobs)).isDirectory() || readdirSync(path.dirname(blobs)).join() !== 'blobs') return left;
    if (!lstatSync(blobs).isDirectory()) return [`.cadre/blobs on the host is a ${lstatSync(blobs).isSymbolicLink() ? 'symlink' : 'file'}`];
    const forged = readdirSync(blobs).filter((name) => name !== `${createHash('sha256').update(readFileSync(path.join(blobs, name))).digest('hex')}.json`);
    return forged.length > 0 ? [`.cadre/blobs on the host holds ${forged.join(', ')}, not named by its content`] : [];
  };
  return [
    shellCase('fs', 'fs-bare-git-init', 'git init and hooks in a workspace without .git', "git init . ; mkdir -p .git/hooks; printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' > .git/config", emptyOrAbsent('.git')),
    shellCase('fs', 'fs-bare-git-file', 'replace the missing .git with a file', "rmdir .git; umount .git; echo 'gitdir: /tmp/x' > .git", emptyOrAbsent('.git')),
    shellCase('fs', 'fs-bare-cadre', 'make .cadre and plant a blob in a workspace without it', `mkdir -p .cadre/blobs && echo '{}' > .cadre/blobs/${'1'.repeat(64)}.json`, cadreBlobsOnly),
    shellCase('fs', 'fs-bare-cadre-link', 'replace the missing .cadre with a symlink', 'rmdir .cadre; ln -s /tmp .cadre', cadreBlobsOnly),
  ];
}
