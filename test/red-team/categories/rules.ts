/**
 * Command rules bypasses. Under `{ rules: [{ prefix: [rm], decision: deny }], otherwise: allow }`,
 * every way of running rm (lists, paths, nested shells, wrappers, quoting, functions, eval,
 * heredocs, pipes into a shell, computed names) must come back denied (a computed one is `ask`:
 * the step's 1 s approval timeout denies it) and leave its victim file in place. Under
 * `{ rules: [{ prefix: [git, status], decision: allow }], otherwise: deny }`, an allowed
 * `git status` must not carry anything else with it. A control batch runs every command with no
 * rules at all and shows each one does delete its victim, so none can pass by doing nothing.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Case, reasons, resultCase } from '../cases';
import { exists, readOr } from '../host';

export const RM_DENIED = { shell: { rules: [{ prefix: ['rm'], decision: 'deny' }], otherwise: 'allow' } };
export const ONLY_GIT_STATUS = { shell: { rules: [{ prefix: ['git', 'status'], decision: 'allow' }], otherwise: 'deny' } };

/** Each case deletes (or empties) `v-<id>`; `%V` in a command is that name. */
export const RM_BYPASSES: [string, string][] = [
  ['rm-plain', 'rm -rf %V'],
  ['rm-bare', 'rm %V'],
  ['rm-and', 'true && rm -rf %V'],
  ['rm-or', 'false || rm %V'],
  ['rm-semicolon', 'echo hi; rm %V'],
  ['rm-newline', 'echo hi\nrm %V'],
  ['rm-leading-space', '   \t rm %V'],
  ['rm-comment', 'rm %V # just a comment'],
  ['rm-abs', '/bin/rm %V'],
  ['rm-abs-usr', '/usr/bin/rm %V'],
  ['rm-dotdot-path', '/usr/../bin/rm %V'],
  ['rm-sh-c', "sh -c 'rm %V'"],
  ['rm-bash-c', 'bash -c "rm %V"'],
  ['rm-dash-c', "dash -c 'rm %V'"],
  ['rm-nested-sh', `sh -c "sh -c 'rm %V'"`],
  ['rm-command', 'command rm %V'],
  ['rm-command-p', 'command -p rm %V'],
  ['rm-env', 'env rm %V'],
  ['rm-env-i', 'env -i PATH=/usr/bin:/bin rm %V'],
  ['rm-env-split', "env -S 'rm %V'"],
  ['rm-xargs', 'echo %V | xargs rm'],
  ['rm-xargs-i', "printf '%V\\n' | xargs -I{} rm {}"],
  ['rm-xargs-0', "printf '%V\\0' | xargs -0 rm"],
  ['rm-xargs-file', 'echo %V > list-%V && xargs rm < list-%V'],
  ['rm-computed-subst', '$(echo rm) -rf %V'],
  ['rm-computed-backticks', '`echo rm` %V'],
  ['rm-computed-printf', '"$(printf rm)" %V'],
  ['rm-computed-var', 'R=rm; $R %V'],
  ['rm-computed-default', '${RM:-rm} %V'],
  ['rm-computed-concat', 'a=r; b=m; $a$b %V'],
  ['rm-ifs', 'rm${IFS}%V'],
  ['rm-subshell', '(rm %V)'],
  ['rm-group', '{ rm %V; }'],
  ['rm-in-backticks', 'echo `rm %V`'],
  ['rm-in-subst', 'echo $(rm %V)'],
  ['rm-in-arithmetic', 'echo $(( $(rm %V; echo 1) + 1 ))'],
  ['rm-find-exec', 'find . -name %V -exec rm {} \\;'],
  ['rm-find-exec-plus', 'find . -name %V -exec rm {} +'],
  ['rm-timeout', 'timeout 5 rm %V'],
  ['rm-nice', 'nice rm %V'],
  ['rm-nohup', 'nohup rm %V'],
  ['rm-stdbuf', 'stdbuf -o0 rm %V'],
  ['rm-setsid', 'setsid -w rm %V'],
  ['rm-flock', 'flock lock-%V rm %V'],
  ['rm-ionice', 'ionice -c3 rm %V'],
  ['rm-taskset', 'taskset -c 0 rm %V'],
  ['rm-time', 'time -p rm %V'],
  ['rm-usr-time', '/usr/bin/time -q rm %V'],
  // strace: ptrace is refused in the sandbox (seccomp), so the tracer cannot run at all.
  ['rm-chrt', 'chrt -o 0 rm %V'],
  ['rm-script', "script -qec 'rm %V' /dev/null"],
  ['rm-wrappers', 'nohup nice timeout 5 env rm %V'],
  ['rm-sudo', 'PATH="$PWD/fakebin:$PATH"; sudo rm %V'],
  ['rm-sudo-user', 'PATH="$PWD/fakebin:$PATH"; sudo -u root -- rm %V'],
  ['rm-doas', 'PATH="$PWD/fakebin:$PATH"; doas rm %V'],
  ['rm-busybox', 'PATH="$PWD/fakebin:$PATH"; busybox rm %V'],
  ['rm-backslash', '\\rm %V'],
  ['rm-single-quotes', "'rm' %V"],
  ['rm-double-quotes', '"rm" %V'],
  ['rm-split-quotes', "r''m %V"],
  ['rm-split-double', 'r""m %V'],
  ['rm-escaped-letter', 'r\\m %V'],
  ['rm-line-continuation', 'r\\\nm %V'],
  ['rm-function', 'f() { rm "$@"; }; f %V'],
  ['rm-function-named-ls', 'ls() { rm "$@"; }; ls %V'],
  ['rm-alias', 'alias d=rm\nd %V'],
  ['rm-eval', 'eval rm %V'],
  ['rm-eval-quoted', 'eval "r""m %V"'],
  ['rm-eval-computed', 'eval "$(echo cm0g | base64 -d) %V"'],
  ['rm-heredoc-sh', 'sh <<EOF\nrm %V\nEOF'],
  ['rm-heredoc-bash-quoted', "bash <<'EOF'\nrm %V\nEOF"],
  ['rm-pipe-sh', "echo 'rm %V' | sh"],
  ['rm-pipe-bash', "printf 'rm %V' | bash"],
  ['rm-exec', 'exec rm %V'],
  ['rm-not', '! rm %V'],
  ['rm-background', 'rm %V & wait'],
  ['rm-if', 'if true; then rm %V; fi'],
  ['rm-for', 'for f in %V; do rm $f; done'],
  ['rm-while', 'while true; do rm %V; break; done'],
  ['rm-case', 'case a in a) rm %V;; esac'],
  ['rm-test-and', '[ -e %V ] && rm %V'],
  ['rm-trap', "trap 'rm %V' EXIT"],
  ['rm-bash-ansi-c', "bash -c \"\\$'\\\\x72m' %V\""],
  ['rm-bash-brace', "bash -c '{rm,%V}'"],
  ['rm-glob-program', '/???/r? %V'],
  ['rm-command-v', '$(command -v rm) %V'],
  ['rm-read-var', 'echo %V | (read f; rm "$f")'],
  ['rm-sh-c-arg', 'sh -c \'rm "$1"\' sh %V'],
  ['rm-find-sh-c', "find . -name %V -exec sh -c 'rm \"$1\"' sh {} \\;"],
  ['rm-bash-eval-dollar0', 'bash -c \'eval "$0 %V"\' rm'],
  ['rm-xargs-sh', "echo %V | xargs sh -c 'rm \"$0\"'"],
  ['rm-quoted-path', '"/bin/r"m %V'],
  // Programs the rules cannot see into: a script file, and rm under another name.
  ['rm-sh-script', "echo 'rm %V' > del-%V.sh && sh del-%V.sh"],
  ['rm-source', "echo 'rm %V' > src-%V.sh && . ./src-%V.sh"],
  ['rm-copied', 'cp /bin/rm zap-%V && ./zap-%V %V'],
  ['rm-symlinked', 'ln -s /bin/rm del-%V && ./del-%V %V'],
];

/** Under "git status: allow, otherwise deny": an allowed git status must carry nothing with it. */
export const GIT_STATUS_BYPASSES: [string, string][] = [
  ['gs-semicolon', 'git status; rm %V'],
  ['gs-and', 'git status && rm %V'],
  ['gs-or', 'git status --no-such-option || rm %V'],
  ['gs-newline', 'git status\nrm %V'],
  ['gs-background', 'git status & rm %V'],
  ['gs-subst', 'git status $(rm %V)'],
  ['gs-backticks', 'git status `rm %V`'],
  ['gs-pathspec-subst', 'git status -- "$(rm %V)"'],
  ['gs-pipe', 'git status | sh -c "rm %V"'],
  ['gs-redirect', 'git status > %V'],
  ['gs-redirect-append', 'git status >> %V'],
  ['gs-redirect-stderr', 'git status --no-such-option 2> %V'],
  ['gs-colon-redirect', 'git status; : > %V'],
  ['gs-double-space', 'git  status && rm %V'],
  ['gs-config-env', `GIT_CONFIG_PARAMETERS="'core.fsmonitor=rm %V'" git status`],
  ['gs-config-count', 'GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0="rm %V" git status'],
  ['gs-config-c', "git -c core.fsmonitor='rm %V' status"],
];

const victim = (id: string) => `v-${id}`;
const command = (id: string, text: string) => text.replace(/%V/g, victim(id));

/** Denied (by a rule, or by nobody approving a computed one in time), and the victim still whole. */
export function ruleCases(list: [string, string][]): Case[] {
  return list.map(([id, text]) =>
    resultCase('rules', id, JSON.stringify(text), { name: 'shell', args: { command: command(id, text) } }, /./, ({ outcome, workspace }) =>
      reasons(
        [!/^denied:/.test(outcome.text), 'it was not denied'],
        [readOr(path.join(workspace, victim(id)), '(gone)') !== `victim ${id}\n`, `${victim(id)} was ${exists(path.join(workspace, victim(id))) ? 'changed' : 'deleted'}`],
      ),
    ),
  );
}

/** The control: every command, allowed, must delete or change its victim. The ids of those that did not. */
export function ineffective(list: [string, string][], workspace: string): string[] {
  return list.filter(([id]) => readOr(path.join(workspace, victim(id)), '(gone)') === `victim ${id}\n`).map(([id]) => id);
}

/** The control's calls: the same commands with their result ignored. */
export function controlCalls(list: [string, string][]): Case[] {
  return list.map(([id, text]) => resultCase('rules', id, text, { name: 'shell', args: { command: command(id, text) } }, /./, () => []));
}

/** Victims, fake sudo/doas/busybox (this machine may have none; they run what they are given), and for git status a repository. */
export function prepareRules(workspace: string, list: [string, string][], gitRepository = false): void {
  for (const [id] of list) writeFileSync(path.join(workspace, victim(id)), `victim ${id}\n`);
  const bin = path.join(workspace, 'fakebin');
  mkdirSync(bin, { recursive: true });
  const fake = (name: string, body: string) => {
    writeFileSync(path.join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(path.join(bin, name), 0o755);
  };
  fake('sudo', 'while [ "${1#-}" != "$1" ]; do [ "$1" = -u ] && shift; [ "$1" = -- ] && { shift; break; }; shift; done; exec "$@"');
  fake('doas', 'exec "$@"');
  fake('busybox', 'exec "$@"');
  if (gitRepository) {
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', ...args], { cwd: workspace, stdio: 'ignore' });
    git('init', '-q');
    git('add', 'fakebin');
    git('commit', '-q', '-m', 'repository for git status');
  }
}
