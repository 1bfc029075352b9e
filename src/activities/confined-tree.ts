/**
 * Many files of a boundary at once, synchronously, under the rules of confinement.ts: for the tools
 * that read a whole tree (code navigation, code search), where `resolveInside` and `openResolved`
 * would cost a dozen asynchronous calls a file.
 *
 * The walk starts from the root's own descriptor (checked against the boundary's identity) and goes
 * name by name: on Linux each directory is opened in its parent's descriptor
 * (`/proc/self/fd/<fd>/<name>`, O_NOFOLLOW), so a directory swapped for a symlink is not entered.
 * Symlinks are skipped, never followed; denied sub-paths (`.git`, `.cadre`, any case) are not
 * entered; a file is read through its directory's descriptor with O_NOFOLLOW and kept only when
 * the opened file is a regular file with one link, as `openResolved` requires (a hard link could
 * be an outside file). Elsewhere paths are used, with the same checks on what was opened, which
 * narrows the races without closing them.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, type BigIntStats, type Dirent } from 'node:fs';
import path from 'node:path';
import { type Boundary, PROC_FD, deniedSubPath, isInside } from './confinement';
import { ErrorTypes, permanent } from '../errors/application-failures';

/** What identifies a file's content without reading it: a new inode, size, modification or change time. */
export interface FileStamp {
  /** `ino:size:mtime:ctime`, times in nanoseconds. */
  key: string;
  size: number;
  /** When the file last changed (ctime, which no one can set back), in ms. */
  changedMs: number;
}

export interface TreeVisitor {
  /** Whether to walk into a directory (`relative` to the root, with its name last). */
  enter(name: string, relative: string): boolean;
  /** A regular file with one link: return true to have it read. */
  file(file: string, stamp: FileStamp): boolean;
  /** What was read, with the stamp of the file opened; `undefined` when it was refused or gone by then. */
  read(file: string, content: { text: string; stamp: FileStamp } | undefined): void;
}

const DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
// O_NONBLOCK: a FIFO must not hang the open; it is refused as not a regular file.
const FILE = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Walks the directory `names` (under the boundary's root) and everything below it the visitor enters. */
export function walkTree(boundary: Boundary, names: readonly string[], visitor: TreeVisitor): void {
  const start = openChain(boundary, names);
  if (start === undefined) throw permanent(ErrorTypes.FileNotFound, `no directory ${JSON.stringify(path.join(...names))} in the ${boundary.name}`);
  try {
    walk(boundary, start, [...names], visitor);
  } finally {
    start.close();
  }
}

/** One file of the boundary by its absolute path, read as `walkTree` reads (`undefined` when refused or missing). */
export function readInside(boundary: Boundary, file: string): { text: string; stamp: FileStamp } | undefined {
  if (!isInside(file, boundary.root) || file === boundary.root) return undefined;
  const names = path.relative(boundary.root, file).split(path.sep);
  if (deniedSubPath(boundary, names)) return undefined;
  const dir = openChain(boundary, names.slice(0, -1));
  if (dir === undefined) return undefined;
  try {
    return dir.read(names.at(-1)!);
  } finally {
    dir.close();
  }
}

export function stampOf(info: BigIntStats): FileStamp {
  return { key: `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`, size: Number(info.size), changedMs: Number(info.ctimeNs / 1_000_000n) };
}

/** An open directory of the walk: its entries, a file's stamp, a file read, a subdirectory opened, all without following a symlink. */
interface Dir {
  readonly path: string;
  entries(): Dirent[];
  stamp(name: string): FileStamp | undefined;
  read(name: string): { text: string; stamp: FileStamp } | undefined;
  open(name: string): Dir | undefined;
  close(): void;
}

function walk(boundary: Boundary, dir: Dir, names: string[], visitor: TreeVisitor): void {
  const entries = dir.entries().sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    if (entry.isSymbolicLink()) continue;
    const inner = [...names, entry.name];
    if (entry.isDirectory()) {
      if (deniedSubPath(boundary, inner) || !visitor.enter(entry.name, path.join(...inner))) continue;
      const sub = dir.open(entry.name);
      if (!sub) continue;
      try {
        walk(boundary, sub, inner, visitor);
      } finally {
        sub.close();
      }
    } else if (entry.isFile()) {
      const stamp = dir.stamp(entry.name);
      const file = path.join(boundary.root, ...inner);
      if (stamp && visitor.file(file, stamp)) visitor.read(file, dir.read(entry.name));
    }
  }
}

/** The root, checked to be the boundary's, then each of `names` opened in the one before. */
function openChain(boundary: Boundary, names: readonly string[]): Dir | undefined {
  let dir = boundary.viaProcFd ? rootByFd(boundary) : byPath(boundary.root);
  if (!boundary.viaProcFd && !sameInode(lstatSync(boundary.root, { bigint: true }), boundary)) changedRoot(boundary);
  for (const name of names) {
    const next = dir.open(name);
    dir.close();
    if (!next) return undefined;
    dir = next;
  }
  return dir;
}

function rootByFd(boundary: Boundary): Dir {
  const fd = openSync(boundary.root, constants.O_RDONLY | constants.O_DIRECTORY);
  if (!sameInode(fstatSync(fd, { bigint: true }), boundary)) {
    closeSync(fd);
    changedRoot(boundary);
  }
  return byFd(fd);
}

function byFd(fd: number): Dir {
  const at = (name: string) => `${PROC_FD}/${fd}/${name}`;
  return {
    path: `${PROC_FD}/${fd}`,
    entries: () => readdirSync(`${PROC_FD}/${fd}`, { withFileTypes: true }),
    stamp: (name) => regularStamp(lstatSync(at(name), { bigint: true, throwIfNoEntry: false })),
    read: (name) => readOpened(at(name)),
    open: (name) => {
      const sub = tryOpen(at(name), DIRECTORY);
      return sub === undefined ? undefined : byFd(sub);
    },
    close: () => closeSync(fd),
  };
}

/** Other systems: paths, with a directory's type checked before it is entered and each file's identity after it is opened. */
function byPath(dir: string): Dir {
  return {
    path: dir,
    entries: () => readdirSync(dir, { withFileTypes: true }),
    stamp: (name) => regularStamp(lstatSync(path.join(dir, name), { bigint: true, throwIfNoEntry: false })),
    read: (name) => {
      const before = lstatSync(path.join(dir, name), { bigint: true, throwIfNoEntry: false });
      const read = readOpened(path.join(dir, name));
      return read && before && read.stamp.key.startsWith(`${before.ino}:`) ? read : undefined;
    },
    open: (name) => (lstatSync(path.join(dir, name), { throwIfNoEntry: false })?.isDirectory() ? byPath(path.join(dir, name)) : undefined),
    close: () => undefined,
  };
}

function regularStamp(info: BigIntStats | undefined): FileStamp | undefined {
  return info?.isFile() && info.nlink === 1n ? stampOf(info) : undefined;
}

/** Opens without following a final symlink; a regular file with one link is read, anything else refused. */
function readOpened(at: string): { text: string; stamp: FileStamp } | undefined {
  const fd = tryOpen(at, FILE);
  if (fd === undefined) return undefined;
  try {
    const info = fstatSync(fd, { bigint: true });
    if (!info.isFile() || info.nlink !== 1n) return undefined;
    return { text: readFileSync(fd, 'utf8'), stamp: stampOf(info) };
  } finally {
    closeSync(fd);
  }
}

/** A descriptor, or `undefined` for what the walk leaves out: gone, a symlink (ELOOP), not a directory, not readable. */
function tryOpen(at: string, flags: number): number | undefined {
  try {
    return openSync(at, flags);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR' || code === 'EACCES' || code === 'ENXIO') return undefined;
    throw err;
  }
}

function sameInode(info: BigIntStats, boundary: Boundary): boolean {
  return Number(info.dev) === boundary.rootId.dev && Number(info.ino) === boundary.rootId.ino;
}

function changedRoot(boundary: Boundary): never {
  throw permanent(ErrorTypes.OutsideWorkspace, `the ${boundary.name} ${boundary.root} was replaced since it was checked: refused to stay inside it`);
}
