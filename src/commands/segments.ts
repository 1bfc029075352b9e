/** The segments a parse yields: their shape, the limits that keep them small, and the collector that gathers them. */
import type { Node, Parser } from 'web-tree-sitter';

export interface CommandSegment {
  /** The source text of this simple command (for a nested `sh -c` script: the text inside the script). */
  text: string;
  /** The program that runs and its arguments, quoting decoded; a word only known at run time keeps its source text. */
  argv: string[];
  /** argv[0] without its directory (`/bin/rm` → `rm`); its source text when computed; '' for a hazard alone. */
  program: string;
  /** Why what runs is only known at run time: `$x` as the program, `sh -c "$x"`, a script piped into `sh`. */
  computed?: string;
  /** Indexes of argv words only known at run time (expansions, globs): a prefix can only possibly match past one. */
  dynamicArgs?: number[];
  /** Arguments are appended at run time (`xargs rm`, `find -exec rm {} +`). */
  moreArgs?: true;
  /** The wrappers unwrapped to reach the program, outermost first: `sudo env rm x` → ['sudo', 'env']. */
  via?: string[];
  /** Each wrapper's own argv, outermost first, for rules about the wrapper itself (`sudo: deny`). */
  wrappers?: string[][];
  /**
   * Something a person should look at besides the program: a variable naming a program to run
   * (`PAGER=...`, `LD_PRELOAD=...`), git config that runs commands, a `/dev/tcp` connection.
   * A segment that is only a hazard has an empty argv.
   */
  hazard?: string;
  /**
   * A file the program runs as a script, which the rules cannot see into: `sh x.sh`, `. x.sh`,
   * `bash --rcfile x.sh`, `sh < x.sh`.
   */
  scriptFile?: string;
  /** Where scriptFile is in argv, when it is one of its words: a rule whose prefix reaches that far names it. */
  scriptFileArg?: number;
  /**
   * A file a redirection writes (`> out`, `2>> log`, `&> all`, `exec 3> f`, `{ ...; } > f`), its source
   * text when only known at run time (then `computed` says so). Such a segment is the write alone:
   * its argv is empty, and its text is the statement the redirection belongs to.
   */
  writes?: string;
}

export interface ParsedCommand {
  segments: CommandSegment[];
  /** Why (part of) the command could not be parsed; what could be read is still in `segments`. */
  unparsable?: string;
  /** Functions the command defines: a call to one is still a segment, but it is no program on PATH. */
  functions?: string[];
}

/** Scripts inside scripts (`sh -c "bash -c '...'"`) are parsed this deep; deeper is unparsable. */
export const MAX_SCRIPT_DEPTH = 8;
/** Longer commands are not parsed at all (they are unparsable, so a person looks). */
export const MAX_COMMAND_LENGTH = 1_000_000;
/** Scripts parsed again (`sh -c`, heredocs fed to shells, ...) may add up to this many characters in all. */
export const MAX_PARSED_LENGTH = 4 * MAX_COMMAND_LENGTH;
/**
 * Past this many segments, or this much JSON, the rest are not looked at and the command is
 * unparsable (so a person looks): the result is stored in workflow history and must stay small.
 */
export const MAX_SEGMENTS = 500;
const MAX_RESULT_BYTES = 256 * 1024;
/** Wrappers unwrapped around one program (`env env env ... rm`); past it the program counts as computed. */
export const MAX_WRAPPERS = 16;
/**
 * What a segment keeps, so that the result stays small: argv and wrapper argvs keep their first 40
 * words, each word its first 256 characters, and the text its first 500. Rules look no further: a
 * prefix has at most 32 words of at most 200 characters.
 */
export const KEPT_WORDS = 40;
export const KEPT_WORD_LENGTH = 256;
const KEPT_TEXT_LENGTH = 500;

/** What a shell reading its script from standard input would read, when nothing redirects it. */
export type Stdin = { kind: 'script'; script: ScriptText } | { kind: 'file'; file: Word } | { kind: 'unknown' };

/** A script to parse again; not exact when it holds expansions (its text keeps them as written). */
export interface ScriptText {
  text: string;
  exact: boolean;
}

export const UNKNOWN_STDIN: Stdin = { kind: 'unknown' };

/** Where a simple command sits: the wrappers around it, how deep in re-parsed scripts, its stdin. */
export interface Layer {
  via: string[];
  wrappers: string[][];
  depth: number;
  stdin: Stdin;
  moreArgs?: boolean;
  /** Each node's parent by node id, kept while walking: Node.parent searches down from the root every time. */
  parents?: Map<number, Node>;
}

export function parentOf(node: Node, at: Layer): Node | undefined {
  return at.parents?.get(node.id);
}

/** The simple command being judged: where segments go and the source text they show. */
export interface Site {
  out: Collector;
  text: string;
}

/** A file written: decoded when literal, else its source text. */
export interface Target {
  path: string;
  known: boolean;
}

/** Parses a script into a collector: walk.ts's parseScript, handed to the collector so the wrappers need not import the walk. */
export type ParseScript = (text: string, at: Layer, out: Collector) => void;

export class Collector {
  readonly segments: CommandSegment[] = [];
  readonly problems: string[] = [];
  readonly functions = new Set<string>();
  /** Characters parsed so far, nested scripts included. */
  parsedLength = 0;
  /** JSON size of the segments so far. */
  private bytes = 0;

  constructor(readonly parser: Parser, private readonly parseInto: ParseScript) {}

  /** A script inside the command (`sh -c`, a heredoc fed to a shell, a command in a variable): its segments are added here. */
  parseScript(text: string, at: Layer): void {
    this.parseInto(text, at, this);
  }

  result(): ParsedCommand {
    return {
      segments: this.segments,
      ...(this.problems.length > 0 && { unparsable: [...new Set(this.problems)].join('; ') }),
      ...(this.functions.size > 0 && { functions: [...this.functions] }),
    };
  }

  /** Past the segment limit nothing more is looked at: the command is unparsable already. */
  full(): boolean {
    if (this.segments.length < MAX_SEGMENTS && this.bytes < MAX_RESULT_BYTES) return false;
    this.problems.push(`too much to list (more than ${MAX_SEGMENTS} simple commands or ${MAX_RESULT_BYTES / 1024} KiB)`);
    return true;
  }

  add(segment: CommandSegment): void {
    if (this.full()) return;
    this.segments.push(segment);
    this.bytes += JSON.stringify(segment).length;
  }

  hazard(text: string, hazard: string, at: Layer): void {
    this.add({ text: clip(text, KEPT_TEXT_LENGTH), argv: [], program: '', ...layerFields(at), hazard });
  }

  /** A redirection writing a file: a segment of its own, judged as a command no rule names. */
  write(text: string, target: Target, at: Layer): void {
    this.add({
      text: clip(text, KEPT_TEXT_LENGTH),
      argv: [],
      program: '',
      ...(target.known ? {} : { computed: 'the file it writes is only known at run time' }),
      ...layerFields(at),
      writes: clip(target.path, KEPT_WORD_LENGTH),
    });
  }
}

function layerFields(at: Layer): Pick<CommandSegment, 'via' | 'wrappers'> {
  return at.via.length > 0 ? { via: at.via, wrappers: at.wrappers.map(keptWords) } : {};
}

function keptWords(words: string[]): string[] {
  const kept = words.slice(0, KEPT_WORDS).map((word) => clip(word, KEPT_WORD_LENGTH));
  return words.length > KEPT_WORDS ? [...kept, `…(${words.length - KEPT_WORDS} more)`] : kept;
}

/** A word of a simple command: as written, and decoded when it is known before run time. */
export interface Word {
  source: string;
  /** Undefined when only known at run time. */
  value?: string;
  /** The value, or the text with its expansions kept as written (what `sh -c "rm $x"` re-parses). */
  template: string;
}

export type Extra = Pick<CommandSegment, 'computed' | 'hazard' | 'scriptFile' | 'scriptFileArg'>;

export function emit(site: Site, words: Word[], at: Layer, extra: Extra = {}): void {
  const argv = words.map((word) => word.value ?? word.source);
  const dynamicArgs = words.flatMap((word, i) => (word.value === undefined ? [i] : []));
  const first = words[0];
  const computed = extra.computed ?? (first.value === undefined ? 'the program name is only known at run time' : undefined);
  site.out.add({
    text: clip(site.text, KEPT_TEXT_LENGTH),
    argv: keptWords(argv),
    program: clip(first.value === undefined ? first.source : baseName(first.value), KEPT_WORD_LENGTH),
    ...(computed !== undefined && { computed }),
    ...(dynamicArgs.length > 0 && { dynamicArgs: dynamicArgs.filter((i) => i < KEPT_WORDS) }),
    ...(at.moreArgs && { moreArgs: true as const }),
    ...layerFields(at),
    ...(extra.hazard !== undefined && { hazard: extra.hazard }),
    ...(extra.scriptFile !== undefined && { scriptFile: clip(extra.scriptFile, KEPT_WORD_LENGTH) }),
    ...(extra.scriptFileArg !== undefined && { scriptFileArg: extra.scriptFileArg }),
  });
}

/** `sh x.sh`, `. x.sh`: the file word at argv[index] is run as a script the rules cannot see. */
export function scriptFileAt(words: Word[], index: number): Extra {
  return { scriptFile: words[index].value!, scriptFileArg: index };
}

export function baseName(path: string): string {
  const base = path.replace(/\/+$/, '').split('/').pop();
  return base === undefined || base === '' ? path : base;
}

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
