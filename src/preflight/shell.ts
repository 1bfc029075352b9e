/**
 * A shell step's command as preflight reads it: with the parser of the command rules (src/commands),
 * so the programs checked are the ones it runs here: `n=$(cat f); echo $((n+1)) > f` runs cat alone,
 * `timeout 5 ./x` runs timeout and ./x, `bash -c 'jq . f'` runs bash and jq, `ssh h 'x'` runs ssh.
 * Also what makes a missing program only possibly missing: what the command does before it, or
 * whether it looks the name up first.
 */
import { baseName, type CommandSegment, parseCommand, type ParsedCommand, programsOf } from '../commands/parse';
import { variablesOf } from './variables';

export interface ProgramRun {
  /** As written: `git`, `./build.sh`, `/usr/bin/env`. */
  name: string;
  /** The command did something first that may create it or move where it is looked for (`make && ./app`, `cd x && ./y`). */
  afterChanges: boolean;
}

export interface CommandReading {
  programs: ProgramRun[];
  /** Names the command looks for before relying on them (`command -v docker`, `which jq`): it may do without. */
  lookedUp: Set<string>;
  /** The command may change where a bare name is found: it sets PATH, sources a file or evals computed text. */
  changesPath: boolean;
  /** Environment variables it reads without setting them. */
  variables: string[];
  /** Why the parser could not read all of it: what it did read may be incomplete. */
  unparsable?: string;
}

/** Wrappers whose command runs on another machine, in another root, or inside them (`busybox ls`): only the wrapper is looked up here. */
const ELSEWHERE = new Set(['ssh', 'chroot', 'nsenter', 'busybox', 'toybox']);
/** Builtins that change the directory a relative program is looked up in. */
const MOVES = new Set(['cd', 'pushd', 'popd']);
/** Programs and builtins that tell whether a name exists. */
const LOOKUPS = new Set(['command', 'which', 'type', 'hash', 'whereis']);

export async function readCommand(command: string): Promise<CommandReading> {
  const parsed = await parseCommand(command);
  const variables = await variablesOf(command);
  return {
    programs: programRuns(parsed),
    lookedUp: lookedUp(parsed.segments),
    changesPath: variables.set.has('PATH') || parsed.segments.some(changesPath),
    variables: variables.read,
    ...(parsed.unparsable !== undefined && { unparsable: parsed.unparsable }),
  };
}

/** The programs preflight checks for a command, in the order they first run. */
export async function programsChecked(command: string): Promise<string[]> {
  return (await readCommand(command)).programs.map((run) => run.name);
}

/** programsOf, segment by segment, noting whether something ran before each program's first run. */
function programRuns(parsed: ParsedCommand): ProgramRun[] {
  const runs = new Map<string, ProgramRun>();
  let changed = false;
  for (const segment of parsed.segments) {
    const programs = programsOf({ segments: [hereOnly(segment)], functions: parsed.functions });
    for (const name of programs) if (!runs.has(name)) runs.set(name, { name, afterChanges: changed });
    // A program may write anything; so may a redirection, a sourced script; cd moves `./x`.
    if (programs.length > 0 || segment.writes !== undefined || segment.scriptFile !== undefined || MOVES.has(segment.argv[0] ?? '')) changed = true;
  }
  return [...runs.values()];
}

/** The part of a segment that runs on this machine: up to the first wrapper that runs its command elsewhere. */
function hereOnly(segment: CommandSegment): CommandSegment {
  const wrappers = segment.wrappers ?? [];
  const at = wrappers.findIndex((wrapper) => ELSEWHERE.has(baseName(wrapper[0] ?? '')));
  return at === -1 ? segment : { ...segment, argv: [], wrappers: wrappers.slice(0, at + 1) };
}

function lookedUp(segments: CommandSegment[]): Set<string> {
  const names = new Set<string>();
  for (const segment of segments) {
    if (!LOOKUPS.has(baseName(segment.argv[0] ?? ''))) continue;
    for (const word of segment.argv.slice(1)) if (!word.startsWith('-')) names.add(word);
  }
  return names;
}

function changesPath(segment: CommandSegment): boolean {
  const program = segment.argv[0] ?? '';
  if (program === 'source' || program === '.' || (program === 'eval' && segment.computed !== undefined)) return true;
  // `env PATH=./bin:$PATH tool`, `sudo PATH=... tool`
  return (segment.wrappers ?? []).some((wrapper) => wrapper.some((word) => word.startsWith('PATH=')));
}
