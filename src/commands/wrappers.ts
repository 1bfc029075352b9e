/** Judging a simple command: unwrapping wrappers (`sudo`, `env`, `xargs`, `find -exec`, ...) until the program that runs. */
import { baseName, emit, MAX_WRAPPERS, UNKNOWN_STDIN, type Layer, type Site, type Stdin, type Word } from './segments';
import { joinedScript, judgeCommandValue, runScript, runStdin, scriptOf, wrapped } from './scripts';
import { flagAssignments } from './variables';
import { OPTION_WRAPPERS, isAssignment, scanOptions, type WrapperOptions } from './wrapper-options';
import { judgeAt, judgeShell, judgeSource, SHELLS } from './shells';
import { judgeGit } from './git-options';

export function judge(words: Word[], at: Layer, site: Site): void {
  if (words.length === 0) return;
  const first = words[0];
  // After `time` the tree reads `{ rm x; }` and `! rm x` as plain words: they are the group and the negation.
  if (first.source === '{' || first.source === '}' || first.source === '!') {
    judge(words.slice(1), at, site);
    return;
  }
  if (first.value === undefined) {
    emit(site, words, at);
    return;
  }
  const name = baseName(first.value);
  if (at.via.length >= MAX_WRAPPERS) {
    emit(site, words, at, { computed: `more than ${MAX_WRAPPERS} wrappers` });
    return;
  }
  const special = SPECIAL_WRAPPERS.get(name);
  const options = OPTION_WRAPPERS.get(name);
  if (special) special(words, at, site);
  else if (options) unwrapWithOptions(words, options, at, site);
  else if (SHELLS.has(name)) judgeShell(words, at, site);
  else if (name === 'git') judgeGit(words, at, site);
  else emit(site, words, at);
}

/** Given no command these run a shell, which reads its commands from stdin (`sudo -s <<< 'rm x'`). */
const SHELL_WITHOUT_COMMAND = new Set(['sudo', 'doas', 'su', 'runuser', 'chroot', 'nsenter', 'unshare', 'ssh', 'script', 'sg', 'pkexec', 'setpriv']);

/** The wrapper `words[0]` runs `inner`: judge that, remembering the wrapper. */
function runInner(inner: Word[], words: Word[], at: Layer, site: Site, options: { moreArgs?: boolean; stdin?: Stdin } = {}): void {
  if (inner.length === 0) {
    if (SHELL_WITHOUT_COMMAND.has(baseName(words[0].value ?? ''))) runStdin(words, at, site);
    else emit(site, words, at);
    return;
  }
  judge(inner, { ...wrapped(words, at), stdin: options.stdin ?? at.stdin, moreArgs: options.moreArgs || at.moreArgs }, site);
}

function unwrapWithOptions(words: Word[], spec: WrapperOptions, at: Layer, site: Site): void {
  const { index } = scanOptions(words, spec);
  if (index === undefined) {
    emit(site, words, at);
    return;
  }
  if (spec.assignments) flagAssignments(words.slice(1, index), at, site);
  runInner(words.slice(index), words, at, site);
}

type Special = (words: Word[], at: Layer, site: Site) => void;

const SPECIAL_WRAPPERS = new Map<string, Special>(Object.entries({
  env: judgeEnv,
  xargs: judgeXargs,
  find: judgeFind,
  busybox: (words, at, site) => {
    const applet = words[1]?.value;
    if (applet === undefined || applet.startsWith('-')) emit(site, words, at);
    else runInner(words.slice(1), words, at, site);
  },
  eval: (words, at, site) => {
    const args = words.slice(words[1]?.value === '--' ? 2 : 1);
    if (args.length === 0) emit(site, words, at);
    else runScript(joinedScript(args), words, at, site);
  },
  trap: (words, at, site) => {
    const start = words[1]?.value === '--' ? 2 : 1;
    const action = words[start];
    // `trap ACTION SIGNAL...`; `trap - SIG`, `trap '' SIG`, `trap -p` run nothing.
    if (words.length > start + 1 && action.value !== '' && action.value !== '-' && !action.value?.startsWith('-')) {
      runScript(scriptOf(action), words, at, site);
    } else emit(site, words, at);
  },
  // `hash -p /bin/rm ls` makes `ls` run rm; `enable -f lib.so name` loads a builtin from a file.
  hash: (words, at, site) => emit(site, words, at, words.some((word) => /^-[a-z]*p/.test(word.value ?? '')) ? { hazard: 'hash -p makes a name run another program' } : {}),
  enable: (words, at, site) => emit(site, words, at, words.some((word) => /^-[a-z]*f/.test(word.value ?? '')) ? { hazard: 'enable -f loads a builtin from a file' } : {}),
  // `shopt -s expand_aliases; alias r=rm` makes `r` run rm: the value is judged as a command.
  alias: (words, at, site) => {
    const definitions = words.slice(1).filter((word) => word.template.includes('=') && !word.template.startsWith('-'));
    if (definitions.length === 0) emit(site, words, at);
    for (const word of definitions) {
      const value = word.template.slice(word.template.indexOf('=') + 1);
      runScript({ text: value, exact: word.value !== undefined }, words, at, site);
    }
  },
  source: judgeSource,
  '.': judgeSource,
  parallel: (words, at, site) => {
    // parallel [options] command ::: args: the command is run by a shell, with arguments added.
    const { index } = scanOptions(words, { short: 'jSXNnLlIaEdPs', long: ['--jobs', '--sshlogin', '--arg-file', '--delimiter', '--max-args', '--max-procs', '--joblog', '--results', '--timeout', '--tmpdir', '--workdir'] });
    const start = index ?? words.length;
    let end = start;
    while (end < words.length && !/^::::?\+?$/.test(words[end].value ?? '')) end++;
    const inner = words.slice(start, end);
    if (inner.length === 0) emit(site, words, at, { computed: 'parallel runs commands from its input' });
    else runScript(joinedScript(inner), words, at, site, UNKNOWN_STDIN, true);
  },
  at: judgeAt,
  batch: judgeAt,
  su: judgeSu,
  runuser: judgeSu,
  script: (words, at, site) => {
    const { values } = scanOptions(words, { short: 'cEIOBTm', long: ['--command', '--echo', '--log-in', '--log-out', '--log-io', '--log-timing', '--logging-format'] });
    const command = values.get('-c') ?? values.get('--command');
    if (command) runScript(scriptOf(command), words, at, site);
    else runStdin(words, at, site);
  },
  flock: (words, at, site) => {
    // flock [options] FILE -c COMMAND | flock [options] FILE PROGRAM ARGS | flock [options] FD
    const spec: WrapperOptions = { short: 'wEc', long: ['--timeout', '--wait', '--conflict-exit-code', '--command'] };
    const before = scanOptions(words, spec);
    const file = before.index ?? words.length;
    const after = before.values.has('-c') || before.values.has('--command') ? before : scanOptions(words, spec, file + 1);
    const command = after.values.get('-c') ?? after.values.get('--command');
    if (command) runScript(scriptOf(command), words, at, site);
    else runInner(words.slice(Math.min(file + 1, words.length)), words, at, site);
  },
  ssh: (words, at, site) => {
    const { index } = scanOptions(words, { short: 'BbcDEeFIiJLlmOoPpQRSWw' });
    judgeSshOptions(words.slice(1, index), at, site);
    // The words after the destination are joined and run by the remote user's shell.
    let inner = words.slice(Math.min((index ?? words.length) + 1, words.length));
    if (inner[0]?.value === '--') inner = inner.slice(1);
    if (inner.length > 0) runScript(joinedScript(inner), words, at, site, UNKNOWN_STDIN);
    else if (words.slice(1, index).some((word) => /^-[^-]*N/.test(word.value ?? ''))) emit(site, words, at);
    else runStdin(words, at, site);
  },
  rsync: (words, at, site) => {
    // rsync -e 'ssh -p 22' / --rsh=CMD runs CMD here to reach the other side.
    emit(site, words, at);
    for (let i = 1; i < words.length; i++) {
      const value = words[i].value ?? '';
      const attached = /^(?:--rsh=|-e)(.+)$/s.exec(value);
      const shell = attached ? { text: attached[1], exact: true } : (value === '-e' || value === '--rsh') && words[i + 1] ? scriptOf(words[i + 1]) : undefined;
      if (shell) judgeCommandValue('rsync -e', shell, at, site.out);
    }
  },
  watch: (words, at, site) => {
    const { index } = scanOptions(words, { short: 'nq', long: ['--interval', '--equexit'] });
    const inner = words.slice(index ?? words.length);
    // watch hands its words to `sh -c` joined by spaces, unless told to exec them.
    if (words.slice(1, index).some((word) => word.value === '-x' || word.value === '--exec')) runInner(inner, words, at, site);
    else if (inner.length > 0) runScript(joinedScript(inner), words, at, site);
    else emit(site, words, at);
  },
  sg: (words, at, site) => {
    let i = words[1]?.value === '-' ? 2 : 1;
    i++; // the group
    if (words[i]?.value === '-c') i++;
    const inner = words.slice(i);
    if (inner.length > 0) runScript(joinedScript(inner), words, at, site);
    else runStdin(words, at, site);
  },
}));

/** `ssh -o ProxyCommand='...'` runs that command here, before any connection. */
function judgeSshOptions(options: Word[], at: Layer, site: Site): void {
  for (let i = 0; i < options.length; i++) {
    const value = options[i].value ?? '';
    const setting = value === '-o' ? options[i + 1]?.value : value.startsWith('-o') ? value.slice(2) : undefined;
    const command = /^(ProxyCommand|LocalCommand|KnownHostsCommand)\s*[= ]\s*(.*)$/is.exec(setting ?? '');
    if (command) judgeCommandValue(`ssh -o ${command[1]}`, { text: command[2], exact: true }, at, site.out);
    else if (value === '-o' && options[i + 1]?.value === undefined) site.out.hazard(options[i + 1]?.source ?? value, 'an ssh option only known at run time', at);
  }
}

function judgeEnv(words: Word[], at: Layer, site: Site): void {
  let i = 1;
  while (i < words.length) {
    const word = words[i].value;
    if (word === undefined) break;
    if (word === '--') {
      i++;
      break;
    }
    const split = splitStringOption(words, i);
    if (split) {
      // env -S 'rm -rf x': the string is split into words that take its place.
      runInner([...splitEnvString(split.text, split.known), ...words.slice(split.next)], words, at, site);
      return;
    }
    if (/^-[uC]$/.test(word) || word === '--unset' || word === '--chdir') i += 2;
    else if (word.startsWith('-') && word !== '-') i++;
    else if (word === '-' || isAssignment(words[i])) {
      if (word !== '-') flagAssignments([words[i]], at, site);
      i++;
    } else break;
  }
  runInner(words.slice(i), words, at, site);
}

function splitStringOption(words: Word[], i: number): { text: string; known: boolean; next: number } | undefined {
  const word = words[i].value ?? '';
  if (word === '-S' || word === '--split-string') {
    const string = words[i + 1];
    return { text: string?.template ?? '', known: string?.value !== undefined, next: i + 2 };
  }
  if (word.startsWith('--split-string=')) return { text: word.slice('--split-string='.length), known: true, next: i + 1 };
  if (/^-S./s.test(word)) return { text: word.slice(2), known: true, next: i + 1 };
  return undefined;
}

/** env -S's splitting: whitespace, quotes and backslashes; a `$` makes the words unknown. */
function splitEnvString(text: string, known: boolean): Word[] {
  if (!known || text.includes('$')) return [{ source: text, template: text }];
  const words: Word[] = [];
  const pattern = /'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|(\S)|(\s+)/gs;
  let current: string | undefined;
  for (const match of text.matchAll(pattern)) {
    if (match[5] !== undefined) {
      if (current !== undefined) words.push({ source: current, value: current, template: current });
      current = undefined;
    } else current = (current ?? '') + (match[1] ?? match[2]?.replace(/\\(.)/g, '$1') ?? match[3] ?? match[4]);
  }
  if (current !== undefined) words.push({ source: current, value: current, template: current });
  return words;
}

function judgeXargs(words: Word[], at: Layer, site: Site): void {
  const { index, values } = scanOptions(words, {
    short: 'adEILnPs',
    long: ['--arg-file', '--delimiter', '--max-args', '--max-procs', '--max-chars', '--process-slot-var'],
  });
  const options = words.slice(1, index);
  // -I R / -iR / --replace[=R]: input lines replace R inside the words, which are then unknown.
  let replace = values.get('-I')?.value;
  for (const option of options) {
    const v = option.value ?? '';
    if (v === '-i' || v === '--replace') replace ??= '{}';
    else if (/^-i./.test(v)) replace ??= v.slice(2);
    else if (v.startsWith('--replace=')) replace ??= v.slice('--replace='.length);
  }
  let inner = words.slice(index ?? words.length);
  if (inner.length === 0) inner = [{ source: 'echo', value: 'echo', template: 'echo' }];
  if (replace) inner = inner.map((word) => (word.value?.includes(replace) ? { source: word.source, template: word.template } : word));
  runInner(inner, words, at, site, { moreArgs: !replace, stdin: UNKNOWN_STDIN });
}

function judgeFind(words: Word[], at: Layer, site: Site): void {
  // find is a program of its own (-delete, -fprint) as well as the runner of its -exec commands.
  emit(site, words, at);
  for (let i = 1; i < words.length; i++) {
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes(words[i].value ?? '')) continue;
    const start = i + 1;
    let end = start;
    while (end < words.length && words[end].value !== ';' && !(words[end].value === '+' && words[end - 1]?.value === '{}')) end++;
    // find puts each path where `{}` is written: those words are only known at run time.
    const inner = words.slice(start, end).map((word) => (word.value?.includes('{}') ? { source: word.source, template: word.template } : word));
    runInner(inner, words, at, site, { moreArgs: words[end]?.value === '+', stdin: UNKNOWN_STDIN });
    i = end;
  }
}

function judgeSu(words: Word[], at: Layer, site: Site): void {
  // su and runuser take their options anywhere: look for -c among all the words.
  for (let i = 1; i < words.length; i++) {
    const value = words[i].value ?? '';
    if ((value === '-c' || value === '--command' || value === '--session-command') && i + 1 < words.length) {
      runScript(scriptOf(words[i + 1]), words, at, site);
      return;
    }
    const attached = /^(?:--command=|--session-command=|-c)(.+)$/s.exec(value);
    if (attached) {
      runScript({ text: attached[1], exact: true }, words, at, site);
      return;
    }
  }
  // runuser -u USER -- program args
  if (baseName(words[0].value ?? '') === 'runuser' && words.some((word) => word.value === '-u' || word.value?.startsWith('--user'))) {
    const { index } = scanOptions(words, { short: 'ugGsw', long: ['--user', '--group', '--supp-group', '--shell', '--whitelist-environment'] });
    runInner(words.slice(index ?? words.length), words, at, site);
    return;
  }
  runStdin(words, at, site);
}
