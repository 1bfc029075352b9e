/**
 * The sandbox's seccomp filter lives in a folder of the process that wrote it, removed as it exits;
 * one killed with SIGKILL leaves its folder, which the next process to write a filter removes.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { removeOrphanedFolders } from '../../src/sandbox/seccomp';

/** The pid of a process that has ended. */
function endedPid(): number {
  const ended = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(ended.stdout);
}

test("the folders of ended processes are removed; those of running ones, other names, links and others' files are kept", () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'seccomp-folders-'));
  try {
    const dead = endedPid();
    const folder = (name: string) => {
      mkdirSync(path.join(tmp, name));
      writeFileSync(path.join(tmp, name, 'filter.bpf'), 'x');
      return name;
    };
    const orphaned = folder(`cadre-seccomp-${dead}-AbC123`);
    const own = folder(`cadre-seccomp-${process.pid}-AbC123`);
    // pid 1 runs as long as the machine does.
    const running = folder('cadre-seccomp-1-AbC123');
    const unnamed = folder('cadre-seccomp-AbC123');
    const other = folder(`something-${dead}-AbC123`);
    // A link named as a folder of an ended process: the link may go, never what it points at.
    const target = folder('kept-target');
    symlinkSync(path.join(tmp, target), path.join(tmp, `cadre-seccomp-${dead}-link`));

    removeOrphanedFolders(tmp);

    expect(existsSync(path.join(tmp, orphaned))).toBe(false);
    expect(readdirSync(tmp).sort()).toEqual([own, running, unnamed, other, target, `cadre-seccomp-${dead}-link`].sort());
    expect(existsSync(path.join(tmp, target, 'filter.bpf'))).toBe(true);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a folder that cannot be read is no error', () => {
  expect(() => removeOrphanedFolders(path.join(os.tmpdir(), 'no-such-folder-for-seccomp'))).not.toThrow();
});
