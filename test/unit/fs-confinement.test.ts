/**
 * fs.read and fs.write refuse git's and cadre's own directories (`.git`, `.cadre`) in a plain
 * workspace as in a worktree, however they are reached, and refuse any file with more than one
 * hard link: a hard link is the file itself, so no path check can tell whether its other name is
 * outside. Every refusal leaves the files involved exactly as they were.
 */
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openBoundary, openResolved, PROTECTED_PATHS, resolveInside } from '../../src/activities/confinement';
import { createWorktree } from '../../src/git';
import { defaultToolSandbox, INLINE_OUTPUT_LIMITS } from '../../src/activities/tools/context';
import { runTool } from '../../src/activities/tools/run-tool';
import { applicationFailure } from '../support/failures';
import { tempRepository } from '../support/git-repo';

const tool = (workspace: string, name: string, params: Record<string, unknown>, worktree = false) =>
  runTool(name, params, { workspace, worktree, stepId: 's', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() });

/** A workspace with a `.git` (config, HEAD, a hook) and a `.cadre` of its own, and a directory beside it for outside files. */
function workspace() {
  const home = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'cadre-fs-')));
  const ws = path.join(home, 'ws');
  const outside = path.join(home, 'outside');
  for (const dir of [path.join(ws, '.git', 'hooks'), path.join(ws, '.cadre', 'blobs'), path.join(ws, 'sub'), outside]) mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(ws, '.git', 'config'), '[core]\n');
  writeFileSync(path.join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(path.join(ws, '.cadre', 'x'), 'cadre\n');
  writeFileSync(path.join(ws, 'normal.txt'), 'normal\n');
  return { home, ws, outside };
}

/** Every file's content and modification time under `dir`, to show a refusal changed nothing. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, name.name);
      if (name.isDirectory()) walk(full);
      else if (name.isFile()) out[path.relative(dir, full)] = `${readFileSync(full, 'utf8')}@${statSync(full).mtimeMs}`;
    }
  };
  walk(dir);
  return out;
}

describe('fs tools and protected paths', () => {
  test('.git and .cadre are refused in a plain workspace, however the path reaches them, for reading and writing', async () => {
    const { home, ws } = workspace();
    symlinkSync('.git', path.join(ws, 'link'));
    const before = contents(home);
    const targets: [string, string][] = [
      ['.git/config', '.git'],
      ['.git/hooks/x', '.git'],
      ['.git', '.git'],
      ['sub/../.git/HEAD', '.git'],
      ['link/config', '.git'],
      [path.join(ws, '.git', 'config'), '.git'],
      ['.cadre/x', '.cadre'],
      ['.cadre/blobs/new.json', '.cadre'],
    ];
    for (const [target, protectedPath] of targets) {
      for (const [name, params] of [
        ['fs.read', { path: target }],
        ['fs.write', { path: target, content: 'planted' }],
        ['fs.write', { path: target, content: 'planted', append: true }],
        ['fs.edit', { path: target, old_text: 'core', new_text: 'planted' }],
      ] as const) {
        const refused = await applicationFailure(tool(ws, name, params));
        expect({ name, target, type: refused.type, nonRetryable: refused.nonRetryable }).toEqual({ name, target, type: 'OutsideWorkspace', nonRetryable: true });
        const reason = PROTECTED_PATHS.find((p) => p.path === protectedPath)?.reason as string;
        expect(refused.message).toBe(`path ${JSON.stringify(target)} is in ${protectedPath}, which the workspace ${ws} does not allow: ${reason}`);
      }
    }
    expect(contents(home)).toEqual(before);
    expect(existsSync(path.join(ws, '.git', 'hooks', 'x'))).toBe(false);
  });

  test('a case variant (.GIT) is refused too: the same directory on a case-insensitive file system, a harmless other one here', async () => {
    const { ws } = workspace();
    // This file system is case-sensitive (Linux): .GIT is a directory of its own, not .git.
    mkdirSync(path.join(ws, '.GIT'));
    writeFileSync(path.join(ws, '.GIT', 'config'), 'other\n');
    expect(readFileSync(path.join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
    for (const target of ['.GIT/config', '.Git/config', '.CADRE/x']) {
      const refused = await applicationFailure(tool(ws, 'fs.read', { path: target }));
      expect(refused).toMatchObject({ type: 'OutsideWorkspace', message: expect.stringContaining(`is in .${target.slice(1, target.indexOf('/')).toLowerCase()}, which the workspace`) });
    }
    // Names that only begin like them are not protected.
    writeFileSync(path.join(ws, '.gitignore'), 'x\n');
    expect(await tool(ws, 'fs.read', { path: '.gitignore' })).toMatchObject({ content: 'x\n' });
    expect(await tool(ws, 'fs.write', { path: '.cadre-notes', content: 'n' })).toMatchObject({ bytes: 1 });
  });

  test('in a worktree, its .git file and a .cadre are refused the same way', async () => {
    const { repo } = tempRepository('cadre-fs-');
    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    const link = readFileSync(path.join(w.path, '.git'), 'utf8');
    for (const [name, params] of [
      ['fs.read', { path: '.git' }],
      ['fs.write', { path: '.git', content: 'gitdir: /tmp\n' }],
      ['fs.write', { path: '.cadre/x', content: 'x' }],
    ] as const) {
      const refused = await applicationFailure(tool(w.path, name, params, true));
      expect(refused).toMatchObject({ type: 'OutsideWorkspace', message: expect.stringContaining(`which the worktree ${w.path} does not allow: `) });
    }
    expect(readFileSync(path.join(w.path, '.git'), 'utf8')).toBe(link);
    expect(existsSync(path.join(w.path, '.cadre'))).toBe(false);
    expect(await tool(w.path, 'fs.read', { path: 'app.txt' }, true)).toMatchObject({ content: 'line 1\nline 2\nline 3\n' });
  });

  test('other tools are held to the same boundary: code.search and shell refuse .git and .cadre as their directory', async () => {
    const { ws } = workspace();
    await expect(tool(ws, 'code.search', { text: 'core', dir: '.git' })).rejects.toMatchObject({ type: 'OutsideWorkspace' });
    await expect(tool(ws, 'code.search', { text: 'cadre', dir: '.cadre' })).rejects.toMatchObject({ type: 'OutsideWorkspace' });
    await expect(tool(ws, 'shell', { command: 'touch planted', cwd: '.git/hooks' })).rejects.toMatchObject({ type: 'OutsideWorkspace' });
    expect(existsSync(path.join(ws, '.git', 'hooks', 'planted'))).toBe(false);
  });
});

describe('fs tools and hard links', () => {
  test('a hard link to a file outside is refused for reading, writing and appending, and the outside file is untouched', async () => {
    const { home, ws, outside } = workspace();
    const secret = path.join(outside, 'secret.txt');
    writeFileSync(secret, 'secret\n');
    linkSync(secret, path.join(ws, 'innocent.txt'));
    const before = contents(home);
    for (const [name, params] of [
      ['fs.read', { path: 'innocent.txt' }],
      ['fs.write', { path: 'innocent.txt', content: 'overwritten' }],
      ['fs.write', { path: 'innocent.txt', content: 'appended', append: true }],
      ['fs.edit', { path: 'innocent.txt', old_text: 'secret', new_text: 'edited' }],
    ] as const) {
      const refused = await applicationFailure(tool(ws, name, params));
      expect(refused).toMatchObject({ type: 'OutsideWorkspace', nonRetryable: true });
      expect(refused.message).toBe(
        `path "innocent.txt" is a file with 2 hard links: cadre cannot tell whether another of them is outside the workspace ${ws}, so it neither reads nor writes it (a link between two files inside is refused too; a copy of the file has one link)`,
      );
    }
    expect(contents(home)).toEqual(before);
    expect(readFileSync(secret, 'utf8')).toBe('secret\n');
  });

  test('a hard link between two files inside is refused too (a false positive the message owns up to); one link again, and it is a file like any', async () => {
    const { ws } = workspace();
    writeFileSync(path.join(ws, 'a.txt'), 'a\n');
    linkSync(path.join(ws, 'a.txt'), path.join(ws, 'sub', 'b.txt'));
    for (const target of ['a.txt', 'sub/b.txt']) {
      const refused = await applicationFailure(tool(ws, 'fs.read', { path: target }));
      expect(refused.message).toContain(`path ${JSON.stringify(target)} is a file with 2 hard links`);
      expect(refused.message).toContain('a link between two files inside is refused too');
    }
    unlinkSync(path.join(ws, 'sub', 'b.txt'));
    expect(await tool(ws, 'fs.read', { path: 'a.txt' })).toMatchObject({ content: 'a\n' });
    expect(await tool(ws, 'fs.write', { path: 'a.txt', content: 'b\n' })).toMatchObject({ bytes: 2 });
  });

  test('the check is on the opened file: a link swapped in after the path was checked is refused all the same', async () => {
    const { ws, outside } = workspace();
    const secret = path.join(outside, 'secret.txt');
    writeFileSync(secret, 'secret\n');
    for (const viaProcFd of [true, false]) {
      writeFileSync(path.join(ws, 'swap.txt'), 'harmless\n');
      const resolved = await resolveInside(await openBoundary(ws, { name: 'workspace', deny: PROTECTED_PATHS, viaProcFd }), 'swap.txt');
      rmSync(path.join(ws, 'swap.txt'));
      linkSync(secret, path.join(ws, 'swap.txt'));
      for (const mode of ['read', 'write', 'append'] as const) {
        await expect(openResolved(resolved, mode)).rejects.toMatchObject({ type: 'OutsideWorkspace', message: expect.stringContaining('hard links') });
      }
      rmSync(path.join(ws, 'swap.txt'));
    }
    expect(readFileSync(secret, 'utf8')).toBe('secret\n');
  });

  test('normal files still read and write, new ones too', async () => {
    const { ws } = workspace();
    expect(await tool(ws, 'fs.read', { path: 'normal.txt' })).toEqual({ path: 'normal.txt', content: 'normal\n' });
    expect(await tool(ws, 'fs.write', { path: 'sub/new.json', content: { a: 1 } })).toMatchObject({ path: 'sub/new.json' });
    expect(await tool(ws, 'fs.write', { path: 'normal.txt', content: 'more\n', append: true })).toMatchObject({ bytes: 5 });
    expect(await tool(ws, 'fs.read', { path: 'sub/new.json' })).toMatchObject({ json: { a: 1 } });
    expect(readFileSync(path.join(ws, 'normal.txt'), 'utf8')).toBe('normal\nmore\n');
  });
});
