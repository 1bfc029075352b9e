/** Wrappers whose command follows their options (`nice -n 5 rm`, `sudo -u x rm`): their table, and scanning their options. */
import type { Word } from './segments';

export interface WrapperOptions {
  /** Short options that take a value (`-n 5`, `-n5`). */
  short?: string;
  /** Long options that take a value (`--signal KILL`, `--signal=KILL`). */
  long?: string[];
  /** Options after which the wrapper runs no command (`ionice -p PID`, `command -v rm`). */
  noCommand?: string[];
  /** Words after the options and before the command (`timeout DURATION`, `chroot DIR`). */
  operands?: number;
  /** NAME=value words may come before the command (`sudo A=1 rm`). */
  assignments?: boolean;
}

/** Wrappers whose command follows their options (and operands). Unknown options count as flags. */
export const OPTION_WRAPPERS = new Map<string, WrapperOptions>(Object.entries({
  nohup: {},
  nice: { short: 'n', long: ['--adjustment'] },
  timeout: { short: 'ks', long: ['--kill-after', '--signal'], operands: 1 },
  stdbuf: { short: 'ioe', long: ['--input', '--output', '--error'] },
  ionice: { short: 'cnpPu', long: ['--class', '--classdata'], noCommand: ['-p', '-P', '-u', '--pid', '--pgid', '--uid'] },
  setsid: {},
  chroot: { long: ['--userspec', '--groups'], operands: 1 },
  taskset: { noCommand: ['-p', '--pid'], operands: 1 },
  chrt: { short: 'TPD', long: ['--sched-runtime', '--sched-period', '--sched-deadline'], noCommand: ['-p', '--pid'], operands: 1 },
  time: { short: 'fo', long: ['--format', '--output'] },
  exec: { short: 'a' },
  builtin: {},
  coproc: {},
  command: { noCommand: ['-v', '-V'] },
  sudo: {
    short: 'ughpCDrtTUR',
    long: ['--user', '--group', '--host', '--prompt', '--close-from', '--chdir', '--role', '--type', '--command-timeout', '--other-user', '--chroot'],
    noCommand: ['-e', '--edit', '-K', '--remove-timestamp', '-v', '--validate', '-V', '--version', '-l', '--list', '--help'],
    assignments: true,
  },
  doas: { short: 'uC' },
  pkexec: { long: ['--user'] },
  unbuffer: {},
  torsocks: { short: 'uapP' },
  proxychains: { short: 'f' },
  proxychains4: { short: 'f' },
  fakeroot: { short: 'lsi', long: ['--lib', '--faked'] },
  caffeinate: { short: 'wt' },
  strace: { short: 'eopsuEPabIXSO' },
  ltrace: { short: 'eopsunaAlD' },
  valgrind: {},
  catchsegv: {},
  chronic: {},
  ifne: {},
  'dbus-run-session': {},
  'xvfb-run': { short: 'nsfepw' },
  nsenter: { short: 'tSG' },
  unshare: { short: 'SGRw' },
  prlimit: { noCommand: ['-p', '--pid'] },
  'systemd-run': {
    short: 'pEuMH',
    long: ['--unit', '--property', '--description', '--slice', '--uid', '--gid', '--working-directory', '--setenv', '--machine', '--host', '--nice', '--service-type'],
  },
  firejail: {},
  setpriv: {},
  toybox: {},
}));

/**
 * Wrappers that run their command with other privileges or elsewhere: for these the wrapper itself
 * must be allowed too (`sudo cat /etc/shadow` is not allowed by `cat: allow` alone).
 */
export const PRIVILEGED_WRAPPERS: ReadonlySet<string> = new Set([
  'sudo', 'doas', 'su', 'runuser', 'pkexec', 'sg', 'chroot', 'nsenter', 'unshare', 'setpriv', 'systemd-run', 'ssh',
]);

interface OptionScan {
  /** Index of the first word after the options, or undefined when the wrapper runs no command. */
  index?: number;
  /** The valued options met, by name as written (`-c`, `--command`). */
  values: Map<string, Word>;
}

export function scanOptions(words: Word[], spec: WrapperOptions, start = 1): OptionScan {
  const values = new Map<string, Word>();
  const noCommand = new Set(spec.noCommand ?? []);
  let i = start;
  while (i < words.length) {
    const word = words[i].value;
    if (word === undefined) break;
    if (word === '--') {
      i++;
      break;
    }
    if (!word.startsWith('-') || word === '-') break;
    if (word.startsWith('--')) {
      const eq = word.indexOf('=');
      const name = eq === -1 ? word : word.slice(0, eq);
      if (noCommand.has(name)) return { values };
      if (eq !== -1) values.set(name, { source: words[i].source, value: word.slice(eq + 1), template: word.slice(eq + 1) });
      else if (spec.long?.includes(name) && i + 1 < words.length) values.set(name, words[++i]);
      i++;
      continue;
    }
    for (let k = 1; k < word.length; k++) {
      const letter = word[k];
      if (noCommand.has(`-${letter}`)) return { values };
      if (spec.short?.includes(letter)) {
        const rest = word.slice(k + 1);
        if (rest) values.set(`-${letter}`, { source: words[i].source, value: rest, template: rest });
        else if (i + 1 < words.length) values.set(`-${letter}`, words[++i]);
        break;
      }
    }
    i++;
  }
  if (spec.assignments) while (i < words.length && isAssignment(words[i])) i++;
  return { index: Math.min(i + (spec.operands ?? 0), words.length), values };
}

/** env and sudo take any NAME=value before the command, names bash would refuse included (`BASH_FUNC_f%%=`). */
export function isAssignment(word: Word): boolean {
  return word.value !== undefined && /^[^=-][^=]*=/.test(word.value);
}
