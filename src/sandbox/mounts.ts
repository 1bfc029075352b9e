/**
 * What a sandbox sees of the machine: system directories read-only, secrets of the system masked,
 * the call's writable roots, and inside each root the paths a tool must never write (`.git`,
 * `.cadre`), read-only even when they do not exist yet.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { mkdir, readFile, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** Read-only, where they exist: programs, libraries and their configuration. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt', '/nix/store'];

/** Files of /etc that hold the system's own secrets: an empty file instead. */
const MASKED_FILES = ['/etc/shadow', '/etc/shadow-', '/etc/gshadow', '/etc/gshadow-', '/etc/sudoers', '/etc/security/opasswd', '/etc/machine-id'];
/** Directories of /etc that hold keys: an empty read-only directory instead. */
const MASKED_DIRS = ['/etc/ssh', '/etc/ssl/private', '/etc/sudoers.d', '/etc/cadre'];

/** Inside a writable root, never writable by a tool: git's metadata (hooks, config) and cadre's own. */
export const PROTECTED_NAMES = ['.git', '.cadre'] as const;

export type Mount =
  | { kind: 'ro-bind'; source: string; target: string }
  | { kind: 'bind'; source: string; target: string }
  | { kind: 'symlink'; target: string; link: string }
  | { kind: 'mask-file'; target: string }
  | { kind: 'mask-dir'; target: string };

/** The system part: the same for every call of a worker, so computed once. */
export function systemMounts(execPath = process.execPath): Mount[] {
  const mounts: Mount[] = [];
  for (const dir of SYSTEM_DIRS) {
    const info = lstatOrUndefined(dir);
    if (!info) continue;
    // /bin -> usr/bin on merged-/usr systems: the same link inside, pointing into the bound /usr.
    if (info.isSymbolicLink()) mounts.push({ kind: 'symlink', target: readlinkSync(dir), link: dir });
    else if (info.isDirectory()) mounts.push({ kind: 'ro-bind', source: dir, target: dir });
  }
  // The Node that runs cadre, when it lives outside them (nvm, a tarball): tools and the egress bridge use it.
  const prefix = path.dirname(path.dirname(realpathSync(execPath)));
  if (!SYSTEM_DIRS.some((dir) => isUnder(prefix, dir))) mounts.push({ kind: 'ro-bind', source: prefix, target: prefix });
  for (const file of MASKED_FILES) if (existsSync(file)) mounts.push({ kind: 'mask-file', target: file });
  for (const dir of MASKED_DIRS) if (existsSync(dir)) mounts.push({ kind: 'mask-dir', target: dir });
  return mounts;
}

/** Extra read-only paths a profile names (resolved, skipped when missing). */
export function readMounts(paths: readonly string[]): Mount[] {
  return paths.filter((p) => existsSync(p)).map((p) => realpathSync(p)).map((p) => ({ kind: 'ro-bind', source: p, target: p }));
}

/** Paths made for a call that must go when it ends (placeholders of missing protected paths). */
export interface Placeholders {
  made: string[];
}

/**
 * A writable root and its protections. A protected path that does not exist yet gets an empty
 * directory bound read-only over it, so the tool cannot create it (a `.git/config` planted in a
 * plain workspace would run code when someone later runs git there); `release` removes it after.
 * A worktree's `.git` file points into the repository's git directory: that is bound read-only
 * too, so git inside the sandbox can read history but not change it.
 */
export async function writableRoot(root: string, placeholders: Placeholders): Promise<Mount[]> {
  const mounts: Mount[] = [{ kind: 'bind', source: root, target: root }];
  for (const name of PROTECTED_NAMES) {
    const at = path.join(root, name);
    // Another call of this process may hold a placeholder here: it is still one, not the real thing.
    let info = held.has(at) ? undefined : lstatOrUndefined(at);
    // .cadre is cadre's own (its blob store lives there): made once and kept, not made and removed each call.
    if (!info && name === '.cadre') info = await mkdir(at).then(() => lstatOrUndefined(at), () => lstatOrUndefined(at));
    if (!info) {
      await holdPlaceholder(at, placeholders);
      mounts.push({ kind: 'ro-bind', source: at, target: at });
    } else if (info.isSymbolicLink()) {
      // Bound at its target; the link itself stays where the tool could swap it, so bind the target read-only only when it exists.
      const target = realpathOrUndefined(at);
      if (target) mounts.push({ kind: 'ro-bind', source: target, target });
    } else {
      mounts.push({ kind: 'ro-bind', source: at, target: at });
      if (name === '.git' && info.isFile()) mounts.push(...(await worktreeGitDirs(at)));
    }
  }
  return mounts;
}

/** A worktree's git directory and the repository's common one, read-only. */
async function worktreeGitDirs(gitFile: string): Promise<Mount[]> {
  const text = await readFile(gitFile, 'utf8').catch(() => '');
  const pointer = /^gitdir:\s*(.+)$/m.exec(text)?.[1]?.trim();
  if (!pointer) return [];
  const gitDir = realpathOrUndefined(path.resolve(path.dirname(gitFile), pointer));
  if (!gitDir) return [];
  const common = (await readFile(path.join(gitDir, 'commondir'), 'utf8').catch(() => '')).trim();
  const commonDir = common ? realpathOrUndefined(path.resolve(gitDir, common)) : undefined;
  return [gitDir, commonDir].filter((d): d is string => d !== undefined).map((d) => ({ kind: 'ro-bind' as const, source: d, target: d }));
}

/**
 * Placeholders are shared by the calls of this process that run in the same root at once: made by
 * the first, removed after the last, and never removed while another call is about to use one.
 */
const held = new Map<string, { count: number; made: Promise<void>; removing?: Promise<void> }>();

async function holdPlaceholder(at: string, placeholders: Placeholders): Promise<void> {
  let entry = held.get(at);
  while (entry?.removing) {
    await entry.removing;
    entry = held.get(at);
  }
  if (!entry) {
    const made = mkdir(at).catch((err: NodeJS.ErrnoException) => (err.code === 'EEXIST' ? undefined : Promise.reject(err)));
    entry = { count: 0, made };
    held.set(at, entry);
  }
  entry.count++;
  placeholders.made.push(at);
  await entry.made;
}

/** Removes the placeholders this call made, once no other call holds them and they are still empty. */
export async function releasePlaceholders(placeholders: Placeholders): Promise<void> {
  for (const at of placeholders.made.splice(0)) {
    const entry = held.get(at);
    if (!entry || --entry.count > 0) continue;
    entry.removing = (async () => {
      const info = await stat(at).catch(() => undefined);
      if (info?.isDirectory()) await rmdir(at).catch(() => undefined);
    })();
    await entry.removing;
    held.delete(at);
  }
}

function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

function realpathOrUndefined(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

function isUnder(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
