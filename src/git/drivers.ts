/**
 * Filters, merge drivers and diff drivers have names of the repository's choosing (selected by
 * .gitattributes), so no fixed list of settings can make them inert. Before git runs in a
 * directory, cadre reads every configuration git could read there, and overrides each driver it
 * finds (reading configuration runs nothing):
 *
 * - the configuration of the directory, with its includes (not the worker's global one: its
 *   operator's, out of a sandboxed tool's reach, so Git LFS's filter still runs);
 * - every included file whatever its condition: `includeIf "onbranch:..."` or `"gitdir:..."` may
 *   hold for the branch of a worktree being made, or for a child process in another worktree;
 * - the `config.worktree` of every worktree of the repository (`worktree remove` runs
 *   `git status` inside the one it removes);
 * - the configuration of every checked-out submodule or nested repository in the index,
 *   recursively: `git status` and `git add` run `git status` inside each, with its own
 *   configuration (an agent can make one: a directory with its own `.git`, committed).
 *
 * What git accepts as "no command" (checked by test/unit/git-hardening.test.ts, git 2.39): an empty
 * filter command is skipped as if there were none (and `required=false`, or git refuses the
 * missing filter); an empty merge driver, textconv or diff command is a command git cannot start:
 * the merge or content diff that needs it fails, and nothing runs. `pager.<command>=false` is no pager.
 */
import { existsSync } from 'node:fs';
import { readdir, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { gitFailure } from './failures';
import { type Git, hardenedGit } from './hardened';

/** git stops at 10 levels of includes; nested repositories deeper than this are refused rather than left unread. */
const MAX_INCLUDE_DEPTH = 10;
const MAX_NESTED_DEPTH = 8;

export interface ConfigurationScan {
  /** Every key set in the directory's configuration as git resolves it there (includes that apply, command line). */
  keys: Set<string>;
  /** Settings that make each driver found anywhere inert, for GIT_CONFIG_COUNT. */
  overrides: [key: string, value: string][];
}

interface ConfigEntry {
  scope: string;
  /** The file the entry is in, absolute; undefined for the command line. */
  file?: string;
  key: string;
  value?: string;
}

/** One scan: every key found, and the files and repositories read so far (each is read once). */
interface Scan {
  found: Set<string>;
  read: Set<string>;
  repositories: Set<string>;
}

export async function scanConfiguration(dir: string): Promise<ConfigurationScan> {
  const scan: Scan = { found: new Set(), read: new Set(), repositories: new Set([await realpath(dir)]) };
  const entries = await scanRepository(dir, scan, 0);
  return { keys: new Set(entries.map((e) => e.key)), overrides: inertOverrides(scan.found) };
}

/** The configuration git reads in `dir`, every file it could include, its worktrees' and its nested repositories'. */
async function scanRepository(dir: string, scan: Scan, nesting: number): Promise<ConfigEntry[]> {
  const git = hardenedGit(dir);
  // The worker's own global configuration is its operator's (a sandboxed tool cannot reach it):
  // its drivers (Git LFS's filter) stay; everything the repository could have written is read.
  const entries = (await listConfiguration(git, dir, ['--includes'])).filter((entry) => entry.scope !== 'global' && entry.scope !== 'system');
  for (const entry of entries) {
    scan.found.add(entry.key);
    if (entry.file) scan.read.add(entry.file);
  }
  await followIncludes(git, dir, entries, scan, 0);
  // The repository's own file holds its first "local" entry; beside it are the worktrees' directories.
  const local = entries.find((e) => e.scope === 'local' && e.file)?.file;
  if (local) {
    for (const file of await worktreeConfigFiles(path.dirname(local))) await scanFile(git, dir, file, scan, 0);
  }
  for (const nested of await nestedRepositories(git, dir)) {
    // A link can make a repository its own submodule: each is read once.
    const real = await realpath(nested);
    if (scan.repositories.has(real)) continue;
    scan.repositories.add(real);
    if (nesting >= MAX_NESTED_DEPTH) {
      throw permanent(ErrorTypes.GitFailed, `${nested} is a repository nested more than ${MAX_NESTED_DEPTH} deep: cadre does not run git where it cannot read every configuration first`);
    }
    await scanRepository(nested, scan, nesting + 1);
  }
  return entries;
}

/** Included files, read whatever their condition, recursively. */
async function followIncludes(git: Git, dir: string, entries: ConfigEntry[], scan: Scan, depth: number): Promise<void> {
  for (const entry of entries) {
    if (!isInclude(entry.key) || entry.value === undefined || !entry.file) continue;
    const file = includedFile(entry.value, entry.file);
    if (file === undefined) {
      throw permanent(ErrorTypes.GitFailed, `${entry.file} includes "${entry.value}", a path cadre cannot resolve to check it for programs git would run; make it absolute or relative`);
    }
    if (depth >= MAX_INCLUDE_DEPTH) throw permanent(ErrorTypes.GitFailed, `${entry.file}: includes nested more than ${MAX_INCLUDE_DEPTH} deep`);
    await scanFile(git, dir, file, scan, depth + 1);
  }
}

async function scanFile(git: Git, dir: string, file: string, scan: Scan, depth: number): Promise<void> {
  // git skips an include that does not exist.
  if (scan.read.has(file) || !existsSync(file)) return;
  scan.read.add(file);
  const entries = await listConfiguration(git, dir, ['--file', file]);
  for (const entry of entries) scan.found.add(entry.key);
  await followIncludes(git, dir, entries, scan, depth);
}

function isInclude(key: string): boolean {
  return key === 'include.path' || (key.startsWith('includeif.') && key.endsWith('.path'));
}

/** Where git finds an included file: relative to the including file, `~/` in the home directory. */
function includedFile(value: string, includer: string): string | undefined {
  if (value.startsWith('~/')) return path.join(process.env.HOME ?? os.homedir(), value.slice(2));
  if (value.startsWith('~') || value.startsWith('%(')) return undefined;
  return path.resolve(path.dirname(includer), value);
}

async function worktreeConfigFiles(commonDir: string): Promise<string[]> {
  const names = await readdir(path.join(commonDir, 'worktrees')).catch(() => [] as string[]);
  return [path.join(commonDir, 'config.worktree'), ...names.map((name) => path.join(commonDir, 'worktrees', name, 'config.worktree'))];
}

/**
 * Submodules and nested repositories in the index that are repositories of their own (git runs
 * `git status` inside those). One that git does not take for a repository is skipped, as git skips it.
 */
async function nestedRepositories(git: Git, dir: string): Promise<string[]> {
  const listing = await git.raw(['ls-files', '--stage', '-z']).catch((err: unknown) => {
    throw gitFailure(err, `listing the index of ${dir}`);
  });
  const gitlinks = new Set(
    listing
      .split('\0')
      .filter((line) => line.startsWith('160000 '))
      .map((line) => path.join(dir, line.slice(line.indexOf('\t') + 1))),
  );
  const nested: string[] = [];
  for (const candidate of gitlinks) {
    if (!existsSync(path.join(candidate, '.git'))) continue;
    const top = await hardenedGit(candidate)
      .raw(['rev-parse', '--show-toplevel'])
      .catch(() => '');
    // Without a repository of its own, git would find the enclosing one: not nested then.
    if (top.trim() && (await realpath(top.trim())) === (await realpath(candidate))) nested.push(candidate);
  }
  return nested;
}

/** `git config --list` read safely: NUL-separated, so no value can pass for a key. Run in `dir`. */
async function listConfiguration(git: Git, dir: string, args: string[]): Promise<ConfigEntry[]> {
  const out = await git.raw(['config', '--list', '--null', '--show-origin', '--show-scope', ...args]).catch((err: unknown) => {
    throw gitFailure(err, `reading the git configuration in ${dir}`);
  });
  const fields = out.split('\0');
  const entries: ConfigEntry[] = [];
  // Each entry is three fields: scope, origin, then "key\nvalue" ("key" alone for a bare boolean).
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const [scope, origin, pair] = [fields[i], fields[i + 1], fields[i + 2]];
    const newline = pair.indexOf('\n');
    const key = newline < 0 ? pair : pair.slice(0, newline);
    // Paths of files are relative to where git ran.
    const file = origin.startsWith('file:') ? path.resolve(dir, origin.slice('file:'.length)) : undefined;
    entries.push({ scope, key, ...(file && { file }), ...(newline >= 0 && { value: pair.slice(newline + 1) }) });
  }
  return entries;
}

/** Settings that make every driver named in `keys` inert. */
export function inertOverrides(keys: Iterable<string>): [string, string][] {
  const overrides = new Map<string, string>();
  for (const key of keys) {
    const first = key.indexOf('.');
    const last = key.lastIndexOf('.');
    const section = key.slice(0, first);
    const variable = key.slice(last + 1);
    if (first === last) {
      if (section === 'pager') overrides.set(key, 'false');
      continue;
    }
    const driver = key.slice(0, last);
    if (section === 'filter') {
      // An empty command is no filter at all; `required` would then refuse every file the filter is for.
      for (const name of ['clean', 'smudge', 'process']) overrides.set(`${driver}.${name}`, '');
      overrides.set(`${driver}.required`, 'false');
    } else if ((section === 'merge' && variable === 'driver') || (section === 'diff' && (variable === 'textconv' || variable === 'command'))) {
      overrides.set(key, '');
    } else if ((section === 'gpg' && variable === 'program') || (section === 'credential' && variable === 'helper')) {
      overrides.set(key, '');
    }
  }
  return [...overrides];
}
