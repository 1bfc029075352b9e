/**
 * The one place cadre starts git. The worker runs git outside any sandbox, on repositories that
 * agents, or whoever had them before cadre, could configure: nothing a repository's configuration,
 * its hooks or the worker's environment names may run as the worker.
 *
 * - Settings that make git run a program are made inert on git's command line (`-c`), which beats
 *   every configuration file, included ones too. Values are git's own "none" where it has one
 *   (`cat` for the pager, `:` for editors, an empty helper list); elsewhere an empty command,
 *   which git fails to start, so the operation that needed it fails and nothing runs.
 * - Drivers with names of the repository's choosing (filters, merge and diff drivers) are made
 *   inert by name (see ./drivers): the caller passes those overrides, and they go through
 *   GIT_CONFIG_COUNT, not `-c`, because `-c` splits at the first "=" and a driver named "a=b"
 *   could not be overridden there.
 * - git inherits the worker's environment without any variable git reads as a program or as
 *   configuration (GIT_*, EDITOR, PAGER, ...), and with system configuration and prompts off.
 * - git runs tied to the worker, as the tools' commands do (../processes/tied-process): when
 *   the worker dies, however it dies, git and whatever git started are killed with it, so no git
 *   of a killed attempt goes on changing a repository under the attempt that retries it.
 *
 * simple-git 4 refuses these settings unless its `unsafe` option allows them, per category:
 * exactly the categories below are allowed, so it still refuses anything else (include.path,
 * --upload-pack, -C, --exec-path, alias.*, ...) in cadre's own arguments.
 */
import { type SimpleGit, type SimpleGitOptions, simpleGit } from 'simple-git';
import { tiedGit } from '../processes/tied-process';

export type Git = SimpleGit;

/** `key=value` pairs for git's command line; each names what git would otherwise run. */
export const INERT_PROGRAM_SETTINGS: readonly string[] = [
  // No hooks at all: git looks for /dev/null/<hook>, which cannot exist.
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.sshCommand=',
  // "cat" is git's word for no pager; pager.<command> is overridden by name (./drivers).
  'core.pager=cat',
  // ":" is git's word for no editor.
  'core.editor=:',
  'sequence.editor=:',
  // Empty: no askpass program; with GIT_TERMINAL_PROMPT=0 a needed password fails instead.
  'core.askPass=',
  // Empty resets the list of helpers, URL-specific ones included.
  'credential.helper=',
  // No value means "none" here: a content diff through this client must pass --no-ext-diff
  // (and --no-textconv where ./drivers found textconv drivers); cadre's own diffs list names only.
  'diff.external=',
  'gpg.program=',
  'gpg.openpgp.program=',
  'gpg.x509.program=',
  'gpg.ssh.program=',
  'gpg.ssh.defaultKeyCommand=',
  // Signing would need the program above: cadre's commits are not signed.
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'protocol.ext.allow=never',
  'core.alternateRefsCommand=',
  // Recursing into a submodule runs git with that submodule's own configuration.
  'submodule.recurse=false',
  'status.submoduleSummary=false',
  // Not here: uploadpack.packObjectsHook, which git reads only from system, global or command-line
  // configuration, never a repository's; setting it would need simple-git's allowUnsafePack, which
  // also lets --upload-pack through. core.gitProxy: see GIT_PROXY_COMMAND below.
];

/** Variables set for every git process. */
const FIXED_ENVIRONMENT: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  // core.gitProxy is the one setting where the first value git reads wins, so `-c` cannot override a
  // repository's; an empty GIT_PROXY_COMMAND is read before any configuration and means no proxy.
  GIT_PROXY_COMMAND: '',
  // No lock a read does not need: `git status` refreshes the index in memory and does not write it
  // back, so a status killed with its worker leaves no index.lock (writes hold a lease, ./checkout-lease).
  GIT_OPTIONAL_LOCKS: '0',
};

/** The simple-git categories the settings above need; every other category stays refused. */
const ALLOWED_UNSAFE: NonNullable<SimpleGitOptions['unsafe']> = {
  allowUnsafeHooksPath: true,
  allowUnsafeFsMonitor: true,
  allowUnsafeSshCommand: true,
  allowUnsafePager: true,
  allowUnsafeEditor: true,
  allowUnsafeAskPass: true,
  allowUnsafeCredentialHelper: true,
  allowUnsafeDiffExternal: true,
  allowUnsafeDiffTextConv: true,
  allowUnsafeGpgProgram: true,
  allowUnsafeProtocolOverride: true,
  allowUnsafeGitProxy: true,
  allowUnsafeFilter: true,
  allowUnsafeMergeDriver: true,
  allowUnsafeConfigEnvCount: true,
  // The "binary" is cadre's own launcher (tiedGit), never input; its path may hold characters
  // simple-git refuses in one (a space in the directory cadre is installed in).
  allowUnsafeCustomBinary: true,
};

/** Names git (and simple-git's guard) reads from the environment as programs or configuration. */
const GIT_READ_VARIABLES = new Set(['EDITOR', 'VISUAL', 'PAGER', 'SSH_ASKPASS', 'PREFIX']);

export function isGitReadVariable(name: string): boolean {
  const upper = name.trim().toUpperCase();
  return upper.startsWith('GIT_') || GIT_READ_VARIABLES.has(upper);
}

export interface HardenedOptions {
  /** More `key=value` settings for the command line (keys without "="). */
  config?: readonly string[];
  /** Settings passed through GIT_CONFIG_COUNT, for keys of any shape. */
  overrides?: readonly (readonly [key: string, value: string])[];
  /** Variables of git's own for this client (GIT_INDEX_FILE for a scratch index): cadre's, never the worker's. */
  env?: Readonly<Record<string, string>>;
}

/** A git client in `dir` that runs nothing but git itself. */
export function hardenedGit(dir: string, options: HardenedOptions = {}): Git {
  const overrides = options.overrides ?? [];
  const tied = tiedGit();
  const environment = { ...gitEnvironment(overrides), ...options.env, ...tied.env };
  return simpleGit({
    baseDir: dir,
    binary: tied.binary,
    config: [...INERT_PROGRAM_SETTINGS, ...(options.config ?? [])],
    unsafe: ALLOWED_UNSAFE,
    allowEnvironment: Object.keys(environment).filter(isGitReadVariable),
  }).env(environment);
}

/** The worker's environment without what git would read as programs or configuration, plus cadre's own. */
function gitEnvironment(overrides: readonly (readonly [string, string])[]): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !isGitReadVariable(name)) environment[name] = value;
  }
  Object.assign(environment, FIXED_ENVIRONMENT);
  if (overrides.length > 0) {
    environment.GIT_CONFIG_COUNT = String(overrides.length);
    overrides.forEach(([key, value], index) => {
      environment[`GIT_CONFIG_KEY_${index}`] = key;
      environment[`GIT_CONFIG_VALUE_${index}`] = value;
    });
  }
  return environment;
}
