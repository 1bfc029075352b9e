/**
 * A worker SIGKILLed while git is in the middle of a `git.merge`: ten runs, each in a repository of
 * its own, merge at once through one worker, which is killed while every merge is under way. Each
 * merge must then complete on the next worker, exactly once, and nothing of the killed attempt may
 * go on running.
 *
 * cadre's own git runs no hooks of the repository, so a `git` first on the worker's PATH plays the
 * slow git instead (as in worktree-kill.test.ts): for cadre's merge it runs the real merge up to
 * its commit (`--no-commit`: MERGE_HEAD written, the merged files in the index and the checkout),
 * then works on while holding `index.lock` open (as git does while it writes a big merge), then
 * commits. The first merge in each repository stalls there, in its "hook" (a `sleep` it waits
 * for), and is killed: in seven runs before the commit (MERGE_HEAD, a held lock, a half-applied
 * merge), in three after it (the merge commit made, the activity not completed).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CadreClient } from '../../src/client/client';
import { git, tempRepository } from '../support/git-repo';
import { compile, kill, startWorkerProcess, uniqueId } from '../support/harness';

const RUNS = 10;
/** Where the first merge of run `i` is killed. */
const stallAt = (i: number) => (i % 3 === 2 ? 'committed' : 'merging');

function slowGit(bin: string): void {
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(bin, 'git'),
    `#!/bin/bash
real="${realGit}"
args=("$@")
at=
for i in "\${!args[@]}"; do
  if [ "\${args[$i]}" = merge ] && [ "\${args[$((i + 1))]}" = --no-ff ]; then at=$i; break; fi
done
home=$(dirname "$PWD")
[ -n "$at" ] && [ -f "$home/stall-at" ] || exec "$real" "$@"
# The first time only: record this process and its "hook", and wait for the hook (or the kill).
stall() {
  [ "$(cat "$home/stall-at")" = "$1" ] && [ ! -e "$home/stalled" ] || return 0
  sleep 60 &
  echo "$$ $!" > "$home/stalled.tmp" && mv "$home/stalled.tmp" "$home/stalled"
  wait $!
}
"$real" "$@" --no-commit || exit
gitdir=$("$real" rev-parse --git-dir)
[ -f "$gitdir/MERGE_HEAD" ] || exit 0
set -C
exec 9> "$gitdir/index.lock" || exit 128
set +C
stall merging
exec 9>&-
rm -f "$gitdir/index.lock"
"$real" "\${args[@]:0:$at}" commit --quiet --no-edit || exit
stall committed
`,
  );
  chmodSync(path.join(bin, 'git'), 0o755);
}

/** A repository whose main has moved on from where the task's branch starts (`start`). */
function repository(i: number): { home: string; repo: string; mainBefore: string } {
  const { home, repo } = tempRepository('cadre-merge-kill-');
  git(repo, 'branch', 'start');
  writeFileSync(path.join(repo, 'main.txt'), `main ${i}\n`);
  git(repo, 'add', 'main.txt');
  git(repo, 'commit', '--quiet', '-m', 'main moves on');
  writeFileSync(path.join(home, 'stall-at'), stallAt(i));
  return { home, repo, mainBefore: git(repo, 'rev-parse', 'main') };
}

function plan(repo: string, i: number, workspace: string) {
  const at = `worktree: { repo: ${repo}, task: t, base: start }`;
  return compile(
    `
name: merge-kill
steps:
  - { id: edit, ${at}, tool: fs.write, with: { path: feature.txt, content: "feature ${i}" } }
  - { id: save, dependsOn: [edit], ${at}, tool: git.commit, with: { message: "feature ${i}" } }
  - { id: merge, dependsOn: [save], ${at}, tool: git.merge, with: { into: main } }
output: { saved: "{{ steps.save.output.commit }}", merged: "{{ steps.merge.output.commit }}", upToDate: "{{ steps.merge.output.upToDate }}" }
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

/** Whether a process runs (a zombie, dead and not yet reaped by whoever inherited it, does not). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

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

test(`${RUNS} merges killed mid-way with the worker: each completes once, nothing of the killed attempt runs on`, async () => {
  const repos = Array.from({ length: RUNS }, (_, i) => repository(i));
  const bin = path.join(repos[0].home, 'bin');
  mkdirSync(bin);
  slowGit(bin);
  const env = { PATH: `${bin}${path.delimiter}${process.env.PATH}` };
  const stalled: number[] = [];
  const began = Date.now();

  const taskQueue = uniqueId('merge-kill');
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  let worker = await startWorkerProcess(taskQueue, env);
  try {
    const ids: string[] = [];
    for (const [i, { repo, home }] of repos.entries()) {
      ids.push((await client.start(plan(repo, i, home), {}, { workflowId: uniqueId('merge-kill'), taskQueue })).workflowId);
    }
    const markers = repos.map(({ home }) => path.join(home, 'stalled'));
    const deadline = Date.now() + 90_000;
    while (!markers.every((m) => existsSync(m)) && Date.now() < deadline) await sleep(50);
    expect(markers.filter((m) => !existsSync(m))).toEqual([]);
    for (const m of markers) stalled.push(...readFileSync(m, 'utf8').trim().split(' ').map(Number));

    // Every merge is in its "hook": kill the worker, and look for what it left running.
    await kill(worker, 'SIGKILL');
    const killedAt = Date.now();
    while (stalled.some(alive) && Date.now() - killedAt < 2000) await sleep(20);
    const orphans = stalled.filter(alive).length;
    const leftRunning = processesIn(repos.map((r) => r.home));

    worker = await startWorkerProcess(taskQueue, env);
    const finals = await Promise.all(ids.map((id) => client.result(id)));
    const outcome = finals.map((d, i) => {
      const { repo, mainBefore } = repos[i];
      const gitDir = path.join(repo, '.git');
      const output = (d.output ?? {}) as { saved?: string; merged?: string; upToDate?: unknown };
      const merge = d.steps.find((s) => s.id === 'merge');
      return {
        status: d.status === 'completed' ? d.status : `${d.status}: ${d.reason}`,
        killedIn: merge?.attempts !== undefined && merge.attempts >= 2,
        // One merge commit, of the task's commit into where main was, reported by the step.
        merges: tryGit(repo, 'rev-list', '--count', '--merges', `${mainBefore}..main`),
        parents: tryGit(repo, 'rev-parse', 'main^1', 'main^2').split('\n'),
        reported: output.merged === tryGit(repo, 'rev-parse', 'main') && String(output.upToDate) === 'false',
        files: [tryGit(repo, 'show', 'main:main.txt'), tryGit(repo, 'show', 'main:feature.txt')],
        leftovers: ['MERGE_HEAD', 'index.lock'].filter((name) => existsSync(path.join(gitDir, name))),
        status_porcelain: tryGit(repo, 'status', '--porcelain'),
        expected: { parents: [mainBefore, output.saved], files: [`main ${i}`, `feature ${i}`] },
      };
    });
    process.stdout.write(
      `merge kills: ${RUNS} merges killed (${repos.filter((_, i) => stallAt(i) === 'merging').length} before their commit, the rest after), ` +
        `${outcome.filter((o) => o.status === 'completed').length}/${RUNS} completed, orphans left by the kill ${orphans}, took ${Math.round((Date.now() - began) / 1000)} s\n`,
    );
    const expected = outcome.map(({ expected: e }) => ({
      status: 'completed',
      killedIn: true,
      merges: '1',
      parents: e.parents,
      reported: true,
      files: e.files,
      leftovers: [],
      status_porcelain: '',
      expected: e,
    }));
    expect({ orphans, leftRunning, outcome }).toEqual({ orphans: 0, leftRunning: [], outcome: expected });
    expect(processesIn(repos.map((r) => r.home))).toEqual([]);
  } finally {
    await kill(worker, 'SIGTERM');
    await client.close();
    // What the kill left running (before the fix: the merges' git and their hooks).
    for (const pid of stalled.filter(alive)) process.kill(pid, 'SIGKILL');
  }
}, 180_000);
