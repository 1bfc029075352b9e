/**
 * Confinement: every path a tool touches stays inside a boundary (the plan's workspace, or a git
 * worktree), never in the sub-paths it denies (for tools: `.git` and `.cadre`, PROTECTED_PATHS).
 *
 * Two phases, so that races can be reasoned about and tested:
 *  1. `resolveInside` resolves a path as the kernel would, following symlinks name by name (a
 *     dangling link resolves to where it points), and refuses anything that ends outside the
 *     boundary or in a denied sub-path. Paths are compared after resolution, never as text.
 *  2. `openResolved` and `openDirectory` open what was checked without following any symlink
 *     that appeared since. On Linux each name is opened relative to its parent's descriptor
 *     (`/proc/self/fd/<fd>/<name>`, O_NOFOLLOW), starting from the root's: a final link or a
 *     directory swapped in after the check is refused, and a new file or directory can only be
 *     created inside. Elsewhere the final name is opened with O_NOFOLLOW and the opened file is
 *     compared with the checked path afterwards, which narrows the race without closing it.
 *
 * A hard link is the file itself, not a path to it: no check of paths can tell where its other
 * names are. So a regular file with more than one link is refused once opened (on the open
 * handle, so it cannot be swapped in after the check), whether the other link is outside or not.
 *
 * Denied sub-paths are compared without regard to case: on a case-insensitive file system
 * (macOS, Windows) `.GIT` is `.git`; on a case-sensitive one it is another, harmless name,
 * refused all the same.
 *
 * Not covered: anything done by processes the tools start (shell commands run in the sandbox,
 * src/sandbox, or, with `sandbox: none`, as the worker: `cwd` is confined, the command is not).
 */
import { constants, existsSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { isInside } from '../processes/path-inside';

/** A sub-path of the root refused with everything under it, and why (a few words, for the message). */
export interface DeniedPath {
  path: string;
  reason?: string;
}

/** Where git and cadre keep what they run or trust: denied to tools in every workspace and worktree. */
export const PROTECTED_PATHS: readonly DeniedPath[] = [
  { path: '.git', reason: "git's metadata: its configuration and hooks run programs as the worker" },
  { path: '.cadre', reason: "cadre's own state: stored values the worker trusts" },
];

export interface BoundaryOptions {
  /** What the boundary is called in messages: "workspace", "worktree". */
  name: string;
  /** Sub-paths of the root refused with everything under them. */
  deny?: readonly (string | DeniedPath)[];
  /** Open name by name through /proc/self/fd (Linux). Default: when /proc/self/fd exists; tests turn it off to cover other systems. */
  viaProcFd?: boolean;
}

export interface Boundary {
  /** The root with its symlinks resolved. */
  readonly root: string;
  readonly name: string;
  /** Denied sub-paths as names under the root, lower-cased, with their reasons. */
  readonly deny: readonly DeniedNames[];
  readonly viaProcFd: boolean;
  /** The root's identity when the boundary was made, to notice it being replaced. */
  readonly rootId: FileId;
}

/** A path checked by `resolveInside`, ready to be opened. */
export interface Resolved {
  readonly boundary: Boundary;
  /** The path as given, and the parameter it came from, for messages. */
  readonly target: string;
  readonly field: string;
  /** Absolute, with no symlinks, "." or "..". */
  readonly path: string;
  /** `path` as names under the root ([] for the root itself). */
  readonly names: readonly string[];
  /** A symlink on the way points at something missing (seen at check time). */
  readonly danglingLink: boolean;
}

export type OpenMode = 'read' | 'write' | 'append';

/** An open directory and a path to it that a child process can `chdir` to. */
export interface OpenDirectory {
  readonly path: string;
  close(): Promise<void>;
}

interface FileId {
  dev: number;
  ino: number;
}

export interface DeniedNames {
  /** As given, for messages. */
  path: string;
  names: readonly string[];
  reason?: string;
}

/** Linux's own limit on symlinks followed in one lookup (MAXSYMLINKS). */
const MAX_SYMLINK_HOPS = 40;
/** Where Linux shows a process's open descriptors: a path through one is a path from that directory (openat). */
export const PROC_FD = '/proc/self/fd';
/** Whether this system has PROC_FD: asked once (a boundary is opened for every tool call). */
let procFdExists: boolean | undefined;

export async function openBoundary(root: string, options: BoundaryOptions): Promise<Boundary> {
  const real = await realpath(root).catch(() => undefined);
  const info = real === undefined ? undefined : await stat(real).catch(() => undefined);
  if (real === undefined || !info?.isDirectory()) {
    throw permanent(ErrorTypes.WorkspaceMissing, `${options.name} ${root} is not a directory on worker ${hostname()}`);
  }
  const deny = (options.deny ?? []).map((entry): DeniedNames => {
    const { path: sub, reason } = typeof entry === 'string' ? { path: entry, reason: undefined } : entry;
    const names = splitNames(path.normalize(sub));
    if (path.isAbsolute(sub) || names.length === 0 || names.includes('..')) throw new Error(`denied sub-path "${sub}" must be a path under the root`);
    return { path: sub, names: names.map(folded), ...(reason && { reason }) };
  });
  return { root: real, name: options.name, deny, viaProcFd: options.viaProcFd ?? (procFdExists ??= existsSync(PROC_FD)), rootId: idOf(info) };
}

/** Phase 1: where `target` really leads, refused unless that is inside the boundary. */
export async function resolveInside(boundary: Boundary, target: string, field = 'path'): Promise<Resolved> {
  if (target.includes('\0')) throw permanent(ErrorTypes.BadToolInput, `${field} ${quote(target)} contains a NUL byte`);
  // Names still to walk; `fromLink` marks those that came from a symlink's target.
  const pending = splitNames(target).map((name) => ({ name, fromLink: false }));
  let current = path.isAbsolute(target) ? path.sep : boundary.root;
  let hops = 0;
  let danglingLink = false;
  while (pending.length > 0) {
    const { name, fromLink } = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, name);
    const info = await lstat(next).catch(ifMissing);
    if (!info?.isSymbolicLink()) {
      if (!info && fromLink) danglingLink = true;
      current = next;
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) {
      throw permanent(ErrorTypes.BadToolInput, `${field} ${quote(target)}: more than ${MAX_SYMLINK_HOPS} symlinks (a loop?)`);
    }
    const link = await readlink(next);
    pending.unshift(...splitNames(link).map((n) => ({ name: n, fromLink: true })));
    if (path.isAbsolute(link)) current = path.sep;
  }
  const relative = path.relative(boundary.root, current);
  if (relative.startsWith(`..${path.sep}`) || relative === '..' || path.isAbsolute(relative)) {
    throw permanent(ErrorTypes.OutsideWorkspace, `${field} ${quote(target)} is outside the ${boundary.name} ${boundary.root} (it leads to ${current})`);
  }
  const names = splitNames(relative);
  const denied = deniedSubPath(boundary, names);
  if (denied) {
    const reason = denied.reason ? `: ${denied.reason}` : '';
    throw permanent(ErrorTypes.OutsideWorkspace, `${field} ${quote(target)} is in ${denied.path}, which the ${boundary.name} ${boundary.root} does not allow${reason}`);
  }
  return { boundary, target, field, path: current, names, danglingLink };
}

/** The denied sub-path that `names` (a path as names under the root) is in, if any. */
export function deniedSubPath(boundary: Boundary, names: readonly string[]): DeniedNames | undefined {
  return boundary.deny.find((sub) => sub.names.every((n, i) => names[i] !== undefined && folded(names[i]) === n));
}

/** Phase 2 for files: opens what `resolveInside` checked. Writes create missing directories and the file; `write` truncates. */
export async function openResolved(resolved: Resolved, mode: OpenMode): Promise<FileHandle> {
  return (await openChecked(resolved, mode)).handle;
}

/** Both phases, to read: the file opened, and its size as the checks saw it on the handle. */
export async function openToRead(boundary: Boundary, target: string, field = 'path'): Promise<{ handle: FileHandle; size: number }> {
  return openChecked(await resolveInside(boundary, target, field), 'read');
}

async function openChecked(resolved: Resolved, mode: OpenMode): Promise<{ handle: FileHandle; size: number }> {
  if (mode !== 'read' && resolved.danglingLink) {
    throw permanent(ErrorTypes.BadToolInput, `${resolved.field} ${quote(resolved.target)} is a symlink to a missing file: cadre does not create files through symlinks`);
  }
  const create = mode !== 'read';
  // O_NONBLOCK: a FIFO in the workspace must not hang the open; it is refused below as not a regular file.
  const flags = constants.O_NOFOLLOW | constants.O_NONBLOCK | (create ? constants.O_WRONLY | constants.O_CREAT : constants.O_RDONLY) | (mode === 'append' ? constants.O_APPEND : 0);
  const handle = await (resolved.boundary.viaProcFd ? openBeneath(resolved, flags) : openByPath(resolved, flags));
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw permanent(ErrorTypes.BadToolInput, `${resolved.field} ${quote(resolved.target)} is not a regular file`);
    // Before anything is read or truncated: the opened file itself, whatever its path became since.
    if (info.nlink > 1) throw hardLinked(resolved, info.nlink);
    if (mode === 'write') await handle.truncate(0);
    return { handle, size: info.size };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** Phase 2 for directories: opens the checked directory and gives a path to it that cannot be swapped until `close`. */
export async function openDirectory(resolved: Resolved): Promise<OpenDirectory> {
  if (!resolved.boundary.viaProcFd) {
    const info = await stat(resolved.path).catch((err) => refusal(resolved, err, 'directory'));
    if (!info.isDirectory()) refusal(resolved, { code: 'ENOTDIR' }, 'directory');
    await requireUnchanged(resolved, info);
    return { path: resolved.path, close: async () => undefined };
  }
  const dir = await walkToDirectory(resolved, resolved.names.length, false);
  return { path: `${PROC_FD}/${dir.fd}`, close: () => dir.close() };
}

/** Both phases: a file inside the boundary, opened. */
export async function openInside(boundary: Boundary, target: string, mode: OpenMode, field = 'path'): Promise<FileHandle> {
  return openResolved(await resolveInside(boundary, target, field), mode);
}

/** Both phases: a directory inside the boundary, opened. */
export async function directoryInside(boundary: Boundary, target: string, field = 'cwd'): Promise<OpenDirectory> {
  return openDirectory(await resolveInside(boundary, target, field));
}

/** Linux: name by name from the root's descriptor, never following a symlink. */
async function openBeneath(resolved: Resolved, flags: number): Promise<FileHandle> {
  const depth = resolved.names.length - 1;
  if (depth < 0) refusal(resolved, { code: 'EISDIR' }, 'file');
  const dir = await walkToDirectory(resolved, depth, (flags & constants.O_CREAT) !== 0);
  try {
    return await openAt(resolved, dir, depth, flags);
  } finally {
    await dir.close();
  }
}

async function walkToDirectory(resolved: Resolved, depth: number, create: boolean): Promise<FileHandle> {
  let dir = await open(resolved.boundary.root, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    if (!sameFile(await dir.stat(), resolved.boundary.rootId)) changed(resolved, resolved.boundary.root);
    for (let index = 0; index < depth; index++) {
      // mkdir never follows a symlink at its final name: EEXIST, and the open below refuses it.
      if (create) await mkdir(beneath(dir, resolved.names[index])).catch((err) => ignoreCode(err, 'EEXIST'));
      const next = await openAt(resolved, dir, index, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (err) {
    await dir.close();
    throw err;
  }
}

/** Opens `resolved.names[index]` in `dir` (flags include O_NOFOLLOW), refusing a symlink found there. */
async function openAt(resolved: Resolved, dir: FileHandle, index: number, flags: number): Promise<FileHandle> {
  const at = beneath(dir, resolved.names[index]);
  const kind = flags & constants.O_DIRECTORY ? 'directory' : 'file';
  try {
    return await open(at, flags, 0o666);
  } catch (err) {
    // O_NOFOLLOW refuses a symlink with ELOOP, or with ENOTDIR together with O_DIRECTORY.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || (code === 'ENOTDIR' && (await lstat(at).catch(ifMissing))?.isSymbolicLink())) {
      changed(resolved, path.join(resolved.boundary.root, ...resolved.names.slice(0, index + 1)));
    }
    return refusal(resolved, err, kind, resolved.names.slice(0, index + 1).join('/'));
  }
}

/** `name` in the directory open as `dir`, whatever has been renamed or swapped since: Linux's openat() for Node. */
function beneath(dir: FileHandle, name: string): string {
  return `${PROC_FD}/${dir.fd}/${name}`;
}

/** Elsewhere: O_NOFOLLOW for the final name, then a check that the opened file is the checked path. */
async function openByPath(resolved: Resolved, flags: number): Promise<FileHandle> {
  if (flags & constants.O_CREAT) await mkdir(path.dirname(resolved.path), { recursive: true }).catch((err) => refusal(resolved, err, 'file'));
  const handle = await open(resolved.path, flags, 0o666).catch((err) => {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') changed(resolved, resolved.path);
    return refusal(resolved, err, 'file');
  });
  try {
    await requireUnchanged(resolved, await handle.stat());
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

async function requireUnchanged(resolved: Resolved, opened: Stats): Promise<void> {
  const [real, info] = await Promise.all([realpath(resolved.path).catch(() => undefined), stat(resolved.path).catch(() => undefined)]);
  if (real !== resolved.path || !info || !sameFile(info, idOf(opened))) changed(resolved, resolved.path);
}

function hardLinked(resolved: Resolved, links: number) {
  return permanent(
    ErrorTypes.OutsideWorkspace,
    `${resolved.field} ${quote(resolved.target)} is a file with ${links} hard links: cadre cannot tell whether another of them is outside the ${resolved.boundary.name} ${resolved.boundary.root}, so it neither reads nor writes it (a link between two files inside is refused too; a copy of the file has one link)`,
  );
}

function changed(resolved: Resolved, where: string): never {
  throw permanent(
    ErrorTypes.OutsideWorkspace,
    `${resolved.field} ${quote(resolved.target)} changed while it was being opened (${where} was replaced, for example by a symlink): refused to stay inside the ${resolved.boundary.name} ${resolved.boundary.root}`,
  );
}

/** Open errors that are the input's fault become permanent failures; others are thrown as they are. */
function refusal(resolved: Resolved, err: unknown, kind: 'file' | 'directory', missing?: string): never {
  const code = (err as NodeJS.ErrnoException).code;
  const what = `${resolved.field} ${quote(resolved.target)}`;
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    // A folder missing on the way names the target as a file, and then the folder that is not there.
    const onTheWay = missing !== undefined && missing !== resolved.names.join('/') ? `: there is no folder ${quote(missing)}` : '';
    throw permanent(ErrorTypes.FileNotFound, `no ${onTheWay ? 'file' : kind} ${quote(resolved.target)} in the ${resolved.boundary.name}${onTheWay}`);
  }
  if (code === 'EISDIR') throw permanent(ErrorTypes.BadToolInput, `${what} is a directory`);
  // A FIFO opened for writing with O_NONBLOCK and no reader.
  if (code === 'ENXIO') throw permanent(ErrorTypes.BadToolInput, `${what} is not a regular file`);
  if (code === 'ENAMETOOLONG') throw permanent(ErrorTypes.BadToolInput, `${what} is too long`);
  throw err;
}

/** A name as compared with denied sub-paths. */
function folded(name: string): string {
  return name.toLowerCase();
}

function splitNames(p: string): string[] {
  return p.split(path.sep).filter((n) => n !== '');
}

function ifMissing(err: NodeJS.ErrnoException): undefined {
  if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
  throw err;
}

function ignoreCode(err: NodeJS.ErrnoException, code: string): void {
  if (err.code !== code) throw err;
}

function idOf(info: Stats): FileId {
  return { dev: info.dev, ino: info.ino };
}

function sameFile(info: Stats, id: FileId): boolean {
  return info.dev === id.dev && info.ino === id.ino;
}

/** A path for a message, with control characters escaped. */
function quote(p: string): string {
  return JSON.stringify(p);
}

export { isInside };
