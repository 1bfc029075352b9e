/**
 * What a warm language service reads: the source files of a directory of the boundary, kept in
 * memory and brought up to date before each query from what is on disk, whoever changed it (a
 * tool's write, a shell command, git).
 *
 * Each refresh walks the directory again (confined-tree.ts: no symlink followed, one-link regular
 * files only) and takes every file's stamp: inode, size, modification and change time. A file whose
 * stamp moved is read again; the service sees a new version only when its text changed. A file
 * that changed in the few moments before it was read could change again within the file system's
 * clock tick and keep its stamp, so such a file is read again at each refresh until its change is
 * old enough, and its version carries a hash of its text. A file added or removed changes the root
 * names; tsconfig.json, package.json and node_modules are stamped too.
 *
 * Other files the compiler asks for: TypeScript's own lib files; the workspace's node_modules
 * (dependencies' declarations, read as the compiler would, but only where their real path stays in
 * the boundary); files of the boundary outside the directory, read through confined-tree.ts; and
 * nothing outside the boundary.
 */
import { createHash } from 'node:crypto';
import { lstatSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { type Boundary, deniedSubPath, isInside } from '../../confinement';
import { readInside, walkTree } from '../../confined-tree';
import { ErrorTypes, permanent } from '../../../errors/application-failures';
import { MAX_SOURCE_FILES, SKIPPED_DIRS, SOURCE_FILE } from './project';

/** Longer than any file system's clock tick for change times (2 s on FAT; nanoseconds on ext4, xfs, btrfs, tmpfs, APFS). */
export const RACY_MS = 2_000;
const DECLARATION = /\.d\.[mc]?ts$/;
/** Doc comments are parsed where they give types (JavaScript) only: navigation needs no other, and lib.dom.d.ts is mostly comments. */
export const JSDOC_PARSING = ts.JSDocParsingMode.ParseForTypeInfo;

interface Script {
  /** What the service compares: the stamp, or the stamp and a hash of the text when the stamp was racy. */
  version: string;
  snapshot: ts.IScriptSnapshot;
  text: string;
  stamp: string;
  /** Read within RACY_MS of its change: read again at the next refresh. */
  racy: boolean;
}

export class ServiceHost implements ts.LanguageServiceHost {
  private readonly scripts = new Map<string, Script>();
  private rootNames: string[] = [];
  private projectVersion = 0;
  private options: ts.CompilerOptions = {};
  private libDir = '';
  /** Stamps of tsconfig.json, package.json and node_modules, as last seen. */
  private settingsStamp: string | undefined;
  private boundary: Boundary;

  constructor(
    boundary: Boundary,
    /** The directory analysed, with no symlinks. */
    readonly root: string,
    private readonly racyMs = RACY_MS,
  ) {
    this.boundary = boundary;
  }

  /** The files the tools look through: every source file but declaration files, sorted. */
  get files(): readonly string[] {
    return this.rootNames;
  }

  /** Characters of source held, for the cache's memory bound. */
  sourceChars = 0;

  /** Brings the files up to date with the disk; true when the service will see a change. */
  refresh(boundary: Boundary): boolean {
    this.boundary = boundary;
    const startedAt = Date.now();
    let changed = this.refreshSettings();
    const seen = new Set<string>();
    const names = path.relative(boundary.root, this.root).split(path.sep).filter((n) => n !== '');
    walkTree(boundary, names, {
      enter: (name) => !SKIPPED_DIRS.has(name),
      file: (file, stamp) => {
        if (!SOURCE_FILE.test(file)) return false;
        if (seen.size >= MAX_SOURCE_FILES) throw permanent(ErrorTypes.TooLarge, `${this.root} holds more than ${MAX_SOURCE_FILES} source files; point dir at a part of it`);
        seen.add(file);
        const known = this.scripts.get(file);
        return !known || known.stamp !== stamp.key || known.racy;
      },
      read: (file, content) => {
        if (!content) {
          seen.delete(file);
          return;
        }
        const { text, stamp } = content;
        const racy = startedAt - stamp.changedMs < this.racyMs;
        const known = this.scripts.get(file);
        if (known && known.text === text) {
          Object.assign(known, { stamp: stamp.key, racy });
          return;
        }
        const version = racy ? `${stamp.key}#${createHash('sha1').update(text).digest('base64url')}` : stamp.key;
        this.scripts.set(file, { version, snapshot: ts.ScriptSnapshot.fromString(text), text, stamp: stamp.key, racy });
        this.sourceChars += text.length - (known?.text.length ?? 0);
        changed = true;
      },
    });
    for (const [file, script] of this.scripts) {
      if (seen.has(file)) continue;
      this.scripts.delete(file);
      this.sourceChars -= script.text.length;
      changed = true;
    }
    if (changed || this.rootNames.length === 0) {
      this.rootNames = [...this.scripts.keys()].filter((f) => !DECLARATION.test(f)).sort();
      this.projectVersion++;
    }
    return changed;
  }

  /** tsconfig.json gives the compiler options; package.json and node_modules say when dependencies may have changed. */
  private refreshSettings(): boolean {
    const stamps = ['tsconfig.json', 'package.json', 'node_modules'].map((name) => {
      const info = lstatSync(path.join(this.root, name), { bigint: true, throwIfNoEntry: false });
      return info ? `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}` : '-';
    });
    const stamp = stamps.join(' ');
    if (stamp === this.settingsStamp) return false;
    this.settingsStamp = stamp;
    this.options = compilerOptions(this.root);
    this.libDir = path.dirname(ts.getDefaultLibFilePath(this.options));
    return true;
  }

  getProjectVersion = () => String(this.projectVersion);
  getScriptFileNames = () => this.rootNames;
  getCompilationSettings = () => this.options;
  getCurrentDirectory = () => this.root;
  getDefaultLibFileName = (options: ts.CompilerOptions) => ts.getDefaultLibFilePath(options);
  useCaseSensitiveFileNames = () => ts.sys.useCaseSensitiveFileNames;
  jsDocParsingMode = JSDOC_PARSING;

  getScriptVersion = (file: string): string => {
    const script = this.scripts.get(file);
    if (script) return script.version;
    // Libraries: their stamp, looked at only when the project changed.
    const info = this.readable(file) ? statSync(file, { bigint: true, throwIfNoEntry: false }) : undefined;
    return info ? `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}` : '0';
  };

  getScriptSnapshot = (file: string): ts.IScriptSnapshot | undefined => {
    const script = this.scripts.get(file);
    if (script) return script.snapshot;
    const text = this.readFile(file);
    return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
  };

  fileExists = (file: string): boolean => {
    if (this.scripts.has(file)) return true;
    if (this.walked(file)) return false;
    const where = this.readable(file);
    if (where === 'confined') return readInside(this.boundary, file) !== undefined;
    return where !== undefined && ts.sys.fileExists(file);
  };

  readFile = (file: string): string | undefined => {
    const script = this.scripts.get(file);
    if (script) return script.text;
    if (this.walked(file)) return undefined;
    const where = this.readable(file);
    if (where === 'confined') return readInside(this.boundary, file)?.text;
    return where === undefined ? undefined : ts.sys.readFile(file);
  };

  directoryExists = (dir: string): boolean => this.readable(dir) !== undefined && ts.sys.directoryExists(dir);
  getDirectories = (dir: string): string[] => (this.readable(dir) !== undefined ? ts.sys.getDirectories(dir) : []);

  /** A source file the walk would have found: its absence from the walk is the answer. */
  private walked(file: string): boolean {
    if (!SOURCE_FILE.test(file) || !isInside(file, this.root)) return false;
    return !path.relative(this.root, file).split(path.sep).some((name) => SKIPPED_DIRS.has(name));
  }

  /**
   * How a file outside the walk may be read: TypeScript's lib files and the boundary's
   * node_modules as the compiler reads them ('direct'; node_modules only where the real path stays
   * inside), other files of the boundary through confined-tree.ts ('confined'), nothing else.
   */
  private readable(file: string): 'direct' | 'confined' | undefined {
    if (isInside(file, this.libDir)) return 'direct';
    const { root } = this.boundary;
    if (!isInside(file, root)) return undefined;
    const names = path.relative(root, file).split(path.sep);
    if (deniedSubPath(this.boundary, names)) return undefined;
    if (!names.includes('node_modules')) return 'confined';
    let real: string;
    try {
      real = realpathSync(file);
    } catch {
      // Missing: the compiler only learns that it is.
      return 'direct';
    }
    return isInside(real, root) && !deniedSubPath(this.boundary, path.relative(root, real).split(path.sep)) ? 'direct' : undefined;
  }
}

/** The directory's tsconfig.json when it has one (its `extends` may be read from outside: only options are taken). */
function compilerOptions(root: string): ts.CompilerOptions {
  const defaults: ts.CompilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10 };
  const read = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile);
  // Its `include` is not listed: the walk gives the files.
  const noListing: ts.ParseConfigHost = { ...ts.sys, readDirectory: () => [] };
  const options = read.error || !read.config ? defaults : ts.parseJsonConfigFileContent(read.config, noListing, root).options;
  return { ...options, allowJs: true, noEmit: true };
}
