/**
 * The code tools' walk (confined-tree.ts) holds to what it opened, as fs.* do (fs-confinement.test.ts):
 * a file swapped for a symlink or a hard link to an outside file after the walk saw it, and a
 * directory swapped for a symlink to an outside one before it is entered, give nothing of outside.
 * The swaps happen inside the visitor's callbacks, between the walk's look and its open: the race,
 * made to happen every time.
 */
import { linkSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openBoundary, PROTECTED_PATHS } from '../../src/activities/confinement';
import { type TreeVisitor, walkTree } from '../../src/activities/confined-tree';

const SECRET = 'outside secret\n';

function workspace() {
  const home = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'cadre-tree-')));
  const ws = path.join(home, 'ws');
  const outside = path.join(home, 'outside');
  mkdirSync(path.join(ws, 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.ts'), SECRET);
  writeFileSync(path.join(ws, 'a.ts'), 'inside a\n');
  writeFileSync(path.join(ws, 'sub', 'b.ts'), 'inside b\n');
  return { ws, outside, secret: path.join(outside, 'secret.ts') };
}

/** Walks the whole tree, calling `swap` at each file's look (before its read) and each directory's; returns what was read. */
async function walk(ws: string, viaProcFd: boolean, swap: { file?(file: string): void; enter?(relative: string): void }): Promise<Record<string, string | undefined>> {
  const boundary = await openBoundary(ws, { name: 'workspace', deny: PROTECTED_PATHS, viaProcFd });
  const read: Record<string, string | undefined> = {};
  const visitor: TreeVisitor = {
    enter: (_name, relative) => {
      swap.enter?.(relative);
      return true;
    },
    file: (file) => {
      swap.file?.(file);
      return true;
    },
    read: (file, content) => {
      read[path.relative(ws, file)] = content?.text;
    },
  };
  walkTree(boundary, [], visitor);
  return read;
}

describe.each([true, false])('the walk with /proc/self/fd %s', (viaProcFd) => {
  test('the control: an untouched tree is read whole', async () => {
    const { ws } = workspace();
    expect(await walk(ws, viaProcFd, {})).toEqual({ 'a.ts': 'inside a\n', 'sub/b.ts': 'inside b\n' });
  });

  test.each([
    ['a symlink', (secret: string, at: string) => symlinkSync(secret, at)],
    ['a hard link', (secret: string, at: string) => linkSync(secret, at)],
  ])('a file swapped for %s to an outside file after the look is not read', async (_what, link) => {
    const { ws, secret } = workspace();
    const swapped: string[] = [];
    const read = await walk(ws, viaProcFd, {
      file: (file) => {
        if (path.basename(file) !== 'a.ts') return;
        rmSync(file);
        link(secret, file);
        swapped.push(file);
      },
    });
    // The swap was live: the path now leads to the secret.
    expect(swapped).toHaveLength(1);
    expect(readFileSync(swapped[0], 'utf8')).toBe(SECRET);
    expect(read['a.ts']).toBeUndefined();
    expect(read['sub/b.ts']).toBe('inside b\n');
    expect(Object.values(read)).not.toContain(SECRET);
  });
});

test('a directory swapped for a symlink to an outside one before it is entered is not walked (through /proc/self/fd)', async () => {
  const { ws, outside } = workspace();
  const read = await walk(ws, true, {
    enter: (relative) => {
      if (relative !== 'sub') return;
      rmSync(path.join(ws, 'sub'), { recursive: true });
      symlinkSync(outside, path.join(ws, 'sub'));
    },
  });
  expect(readFileSync(path.join(ws, 'sub', 'secret.ts'), 'utf8')).toBe(SECRET);
  expect(read).toEqual({ 'a.ts': 'inside a\n' });
});
