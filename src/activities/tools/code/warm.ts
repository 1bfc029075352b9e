/**
 * The code tools' language services, kept warm in their thread (thread.ts): one per directory analysed (a
 * workspace, a worktree, or a `dir` inside one), refreshed from the disk before each query
 * (service-host.ts) instead of built again, which took seconds. The services share one document
 * registry, so TypeScript's lib files and files that two of them read are parsed once.
 *
 * Bounded (WARM_LIMITS): at most 4 services and 8 M characters of source across them, the least
 * recently used evicted first (the one in use is kept even alone over the bound), and a service
 * unused for 10 minutes is evicted; its timer does not keep the worker alive. A service costs about
 * 65 bytes of heap per character of source: 86 MB for the 2,000 files (1.35 M characters) of
 * bench/code-navigation.ts (7 MB of it trace_data_flow's name index, incoming-calls.ts, which lives
 * with the parsed files and is built in the thread's idle time), given back when it is evicted.
 */
import ts from 'typescript';
import type { Boundary } from '../../confinement';
import { ErrorTypes, permanent } from '../../../errors/application-failures';
import type { CodeProject } from './project';
import { JSDOC_PARSING, ServiceHost } from './service-host';

/** How much is kept warm (tests lower them). */
export const WARM_LIMITS = { services: 4, sourceChars: 8 * 1024 * 1024, idleMs: 10 * 60_000 };

interface Warm {
  host: ServiceHost;
  service: ts.LanguageService;
  idle: NodeJS.Timeout;
}

const registry = ts.createDocumentRegistry(ts.sys.useCaseSensitiveFileNames, undefined, JSDOC_PARSING);
/** In order of use, least recent first. */
const warm = new Map<string, Warm>();

/** The project of `root` (a directory inside the boundary, no symlinks), up to date with the disk. */
export function openProject(boundary: Boundary, root: string): CodeProject {
  // The root's identity is in the key: a workspace removed and made again is another project.
  const key = `${boundary.rootId.dev}:${boundary.rootId.ino}:${boundary.root}\0${root}`;
  let entry = warm.get(key);
  if (entry) {
    warm.delete(key);
    entry.idle.refresh();
  } else {
    const host = new ServiceHost(boundary, root);
    const idle = setTimeout(() => evict(key), WARM_LIMITS.idleMs);
    idle.unref();
    entry = { host, service: ts.createLanguageService(host, registry), idle };
  }
  warm.set(key, entry);
  try {
    entry.host.refresh(boundary);
  } catch (err) {
    evict(key);
    throw err;
  }
  evictBeyondBounds();
  const program = entry.service.getProgram();
  if (!program) throw permanent(ErrorTypes.BadToolInput, `dir: ${root} could not be analysed as a TypeScript project`);
  last = { key, program };
  return { root, service: entry.service, program, files: entry.host.files };
}

/** The program the last query or build used, while its project is warm: its files' names are indexed in idle time (thread-main.ts). */
let last: { key: string; program: ts.Program } | undefined;

export function lastOpenedProgram(): ts.Program | undefined {
  return last?.program;
}

/** What is kept warm, least recently used first: for the benchmark and tests. */
export function warmProjects(): { root: string; files: number; sourceChars: number }[] {
  return [...warm.values()].map(({ host }) => ({ root: host.root, files: host.files.length, sourceChars: host.sourceChars }));
}

/** Drops every warm service (tests, the benchmark's cold calls). */
export function evictAll(): void {
  for (const key of [...warm.keys()]) evict(key);
}

function evictBeyondBounds(): void {
  const chars = () => [...warm.values()].reduce((sum, { host }) => sum + host.sourceChars, 0);
  // The most recent (last) is kept even alone over the bound: it is the one being asked.
  while (warm.size > 1 && (warm.size > WARM_LIMITS.services || chars() > WARM_LIMITS.sourceChars)) evict(warm.keys().next().value!);
}

function evict(key: string): void {
  const entry = warm.get(key);
  if (!entry) return;
  warm.delete(key);
  clearTimeout(entry.idle);
  // Its program goes with it, however it was evicted (idle, bounds, a failed refresh).
  if (last?.key === key) last = undefined;
  // Releases its documents from the shared registry.
  entry.service.dispose();
}
