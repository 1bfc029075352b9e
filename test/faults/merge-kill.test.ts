/**
 * A worker SIGKILLed while git is in the middle of a `git.merge`, a `git.commit` or a `git.reset`:
 * fifteen runs, each in a repository of its own, go through one worker, which is killed while
 * every one of them is inside git. Each operation must then complete on the next worker, exactly
 * once, and nothing of the killed attempt may go on running.
 *
 * cadre's own git runs no hooks of the repository, so a `git` first on the worker's PATH plays the
 * slow git instead (as in worktree-kill.test.ts), holding `index.lock` open as git does while it
 * writes a big index, and waiting in a "hook" (a `sleep` it waits for) where the run's `stall-at`
 * says; only the first operation of that kind in each repository stalls, and is killed there:
 * - merge (10 runs): the real merge up to its commit (`--no-commit`: MERGE_HEAD written, the merged
 *   files in the index and the checkout), then the lock, then the commit; killed before the commit
 *   (`merge-merging`, 7 runs: MERGE_HEAD, a held lock, a half-applied merge) or after it
 *   (`merge-committed`, 3).
 * - commit (3 runs, which end there): killed holding the lock before the commit (`commit-locked`),
 *   holding it after the commit was made (`commit-made`: git killed before it wrote the index), or
 *   after the commit, lock released, before the activity completed (`commit-done`).
 * - reset (2 runs, back to the base after the commit): killed holding the lock before the reset
 *   (`reset-locked`) or after it (`reset-made`).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CadreClient } from '../../src/client/client';
import { git, tempRepository } from '../support/git-repo';
import { compile, kill, startWorkerProcess, uniqueId } from '../support/harness';
import { processAlive as alive } from '../support/processes';

const MERGES = 10;
/** Where the first git operation of run `i` stalls, and is killed. */
const STALLS = [
  ...Array.from({ length: MERGES }, (_, i) => (i % 3 === 2 ? 'merge-committed' : 'merge-merging')),
  'commit-locked',
  'commit-made',
  'commit-done',
  'reset-locked',
  'reset-made',
];
const RUNS = STALLS.length;
const kindOf = (i: number) => STALLS[i].split('-')[0] as 'merge' | 'commit' | 'reset';

function slowGit(bin: string): void {
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(bin, 'git'),
    `#!/bin/bash
real="${realGit}"
args=("$@")
kind= at=
for i in "\${!args[@]}"; do
  case "\${args[$i]} \${args[$((i + 1))]} \${args[$((i + 2))]}" in
    "merge --no-ff "*) kind=merge at=$i; break ;;
    "commit --quiet --no-verify") kind=commit at=$i; break ;;
    "reset --quiet --hard") kind=reset at=$i; break ;;
  esac
done
[ -n "$kind" ] || exec "$real" "$@"
# The run's home: the nearest folder above with a stall-at (the repository's, or its worktree's).
home=$PWD
while [ -n "$home" ] && [ ! -f "$home/stall-at" ]; do home=\${home%/*}; done
[ -n "$home" ] && [ ! -e "$home/stalled" ] || exec "$real" "$@"
where=$(cat "$home/stall-at")
[ "\${where%%-*}" = "$kind" ] || exec "$real" "$@"
# The first time only: record this process and its "hook", and wait for the hook (or the kill).
stall() {
  [ "$where" = "$1" ] && [ ! -e "$home/stalled" ] || return 0
  sleep 60 &
  echo "$$ $!" > "$home/stalled.tmp" && mv "$home/stalled.tmp" "$home/stalled"
  wait $!
}
gitdir=$("$real" rev-parse --absolute-git-dir)
lock() { set -C; exec 9> "$gitdir/index.lock" || exit 128; set +C; }
unlock() { exec 9>&-; rm -f "$gitdir/index.lock"; }
case $kind in
  merge)
    "$real" "$@" --no-commit || exit
    [ -f "$gitdir/MERGE_HEAD" ] || exit 0
    lock; stall merge-merging; unlock
    "$real" "\${args[@]:0:$at}" commit --quiet --no-edit || exit
    stall merge-committed ;;
  commit|reset)
    lock; stall "$kind-locked"; unlock
    "$real" "$@" || exit
    lock; stall "$kind-made"; unlock
    stall "$kind-done" ;;
esac
`,
  );
  chmodSync(path.join(bin, 'git'), 0o755);
}

/** A repository whose main has moved on from where the task's branch starts (`start`). */
function repository(i: number): { home: string; repo: string; start: string; mainBefore: string } {
  const { home, repo } = tempRepository('cadre-git-kill-');
  git(repo, 'branch', 'start');
  writeFileSync(path.join(repo, 'main.txt'), `main ${i}\n`);
  git(repo, 'add', 'main.txt');
  git(repo, 'commit', '--quiet', '-m', 'main moves on');
  writeFileSync(path.join(home, 'stall-at'), STALLS[i]);
  return { home, repo, start: git(repo, 'rev-parse', 'start'), mainBefore: git(repo, 'rev-parse', 'main') };
}

/** Edit and commit; then merge into main, or reset back to the base (a commit run ends at its commit). */
function plan(repo: string, i: number, workspace: string) {
  const at = `worktree: { repo: ${repo}, task: t, base: start }`;
  const last = {
    merge: [`- { id: merge, dependsOn: [save], ${at}, tool: git.merge, with: { into: main } }`, 'merged: "{{ steps.merge.output.commit }}"', 'upToDate: "{{ steps.merge.output.upToDate }}"'],
    commit: [],
    reset: [`- { id: undo, dependsOn: [save], ${at}, tool: git.reset }`, 'reset: "{{ steps.undo.output.commit }}"'],
  }[kindOf(i)];
  return compile(
    `
name: git-kill
steps:
  - { id: edit, ${at}, tool: fs.write, with: { path: feature.txt, content: "feature ${i}" } }
  - { id: save, dependsOn: [edit], ${at}, tool: git.commit, with: { message: "feature ${i}" } }
  ${last[0] ?? ''}
output:
  committed: "{{ steps.save.output.committed }}"
  saved: "{{ steps.save.output.commit }}"
${last
  .slice(1)
  .map((o) => `  ${o}`)
  .join('\n')}
`,
    workspace,
  );
}

/** git's answer, or its complaint: a broken repository is an outcome to report, not a crash. */
function tryGit(repo: string, ...args: string[]): string {
  try {
    return git(repo, ...args);
  } catch (err) {
    return `(git ${args[0]} failed: ${String((err as Error).message).split('\n')[1] ?? ''})`;
  }
}


/** Processes whose working directory is inside one of `dirs`. */
function processesIn(dirs: string[]): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (dirs.some((dir) => cwd === dir || cwd.startsWith(`${dir}/`))) found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()}`);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** Every lock file under a git directory. */
function locksIn(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.lock'));
}

const STEP_OF = { merge: 'merge', commit: 'save', reset: 'undo' } as const;

test(`${RUNS} git operations killed mid-way with the worker (${MERGES} merges, commits, resets): each completes once, nothing of the killed attempt runs on`, async () => {
  const repos = Array.from({ length: RUNS }, (_, i) => repository(i));
  const bin = path.join(repos[0].home, 'bin');
  mkdirSync(bin);
  slowGit(bin);
  const env = { PATH: `${bin}${path.delimiter}${process.env.PATH}` };
  const stalled: number[] = [];
  const began = Date.now();

  const taskQueue = uniqueId('git-kill');
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  let worker = await startWorkerProcess(taskQueue, env);
  try {
    const ids: string[] = [];
    for (const [i, { repo, home }] of repos.entries()) {
      ids.push((await client.start(plan(repo, i, home), {}, { workflowId: uniqueId('git-kill'), taskQueue })).workflowId);
    }
    const markers = repos.map(({ home }) => path.join(home, 'stalled'));
    const deadline = Date.now() + 90_000;
    while (!markers.every((m) => existsSync(m)) && Date.now() < deadline) await sleep(50);
    expect(markers.filter((m) => !existsSync(m))).toEqual([]);
    for (const m of markers) stalled.push(...readFileSync(m, 'utf8').trim().split(' ').map(Number));

    // Every operation is in its "hook": kill the worker, and look for what it left running.
    await kill(worker, 'SIGKILL');
    const killedAt = Date.now();
    while (stalled.some(alive) && Date.now() - killedAt < 2000) await sleep(20);
    const orphans = stalled.filter(alive).length;
    const leftRunning = processesIn(repos.map((r) => r.home));

    worker = await startWorkerProcess(taskQueue, env);
    const finals = await Promise.all(ids.map((id) => client.result(id)));
    const outcome = finals.map((d, i) => {
      const { repo, start, mainBefore } = repos[i];
      const kind = kindOf(i);
      const output = (d.output ?? {}) as Record<string, unknown>;
      const step = d.steps.find((s) => s.id === STEP_OF[kind]);
      const common = {
        stall: STALLS[i],
        status: d.status === 'completed' ? d.status : `${d.status}: ${d.reason}`,
        killedIn: step?.attempts !== undefined && step.attempts >= 2,
        committed: String(output.committed),
        locks: locksIn(path.join(repo, '.git')),
        mergeHead: existsSync(path.join(repo, '.git', 'MERGE_HEAD')),
        statusPorcelain: tryGit(repo, 'status', '--porcelain'),
      };
      const worktrees = (d.worktrees ?? []).map((w) => `${w.state}: ${w.note ?? ''}`);
      if (kind === 'reset') {
        // Back to the base: the worktree clean and on it, so the run's end removed it (and its branch).
        return { ...common, reset: output.reset === start, worktrees };
      }
      if (kind === 'commit') {
        // One commit on the task's branch, reported by the step; the branch kept when the run removed the worktree.
        const branch = 'cadre/git-kill/t';
        const commit = { commits: tryGit(repo, 'rev-list', '--count', `${start}..${branch}`), subject: tryGit(repo, 'log', '-1', '--format=%s', branch) };
        return { ...common, ...commit, reported: output.saved === tryGit(repo, 'rev-parse', branch), worktrees };
      }
      return {
        ...common,
        // One commit of the task's, and one merge commit of it into where main was, both reported by their steps.
        commits: tryGit(repo, 'rev-list', '--count', '--no-merges', `${mainBefore}..main`),
        merges: tryGit(repo, 'rev-list', '--count', '--merges', `${mainBefore}..main`),
        parents: tryGit(repo, 'rev-parse', 'main^1', 'main^2').split('\n'),
        reported: output.merged === tryGit(repo, 'rev-parse', 'main') && String(output.upToDate) === 'false',
        files: [tryGit(repo, 'show', 'main:main.txt'), tryGit(repo, 'show', 'main:feature.txt')],
        expected: { parents: [mainBefore, output.saved], files: [`main ${i}`, `feature ${i}`] },
      };
    });
    const count = (kind: string) => STALLS.filter((s) => s.startsWith(kind)).length;
    process.stdout.write(
      `git kills: ${RUNS} operations killed (${count('merge-merging')} merges before their commit, ${count('merge-committed')} after, ${count('commit')} commits, ${count('reset')} resets), ` +
        `${outcome.filter((o) => o.status === 'completed').length}/${RUNS} completed, orphans left by the kill ${orphans}, took ${Math.round((Date.now() - began) / 1000)} s (${Math.round((killedAt - began) / 1000)} s to the kill)\n`,
    );
    const expected = outcome.map((o, i) => ({
      stall: o.stall,
      status: 'completed',
      killedIn: true,
      committed: 'true',
      locks: [],
      mergeHead: false,
      statusPorcelain: '',
      ...{
        reset: { reset: true, worktrees: ['removed: merged into start'] },
        commit: { commits: '1', subject: `feature ${i}`, reported: true, worktrees: ['removed: its commits stay on branch cadre/git-kill/t'] },
        merge: 'expected' in o && { commits: '1', merges: '1', parents: o.expected.parents, reported: true, files: o.expected.files, expected: o.expected },
      }[kindOf(i)],
    }));
    expect({ orphans, leftRunning, outcome }).toEqual({ orphans: 0, leftRunning: [], outcome: expected });
    expect(processesIn(repos.map((r) => r.home))).toEqual([]);
  } finally {
    await kill(worker, 'SIGTERM');
    await client.close();
    // What the kill left running (before git was tied to the worker: each operation's git and its hook).
    for (const pid of stalled.filter(alive)) process.kill(pid, 'SIGKILL');
  }
}, 180_000);
