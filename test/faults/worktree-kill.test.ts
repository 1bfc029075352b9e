/**
 * A worker SIGKILLed after `git worktree add` made the worktree but before the activity
 * completed: the retry, on another worker, adopts that worktree: no error, no second one.
 * cadre's own git calls run no hooks of the repository, so a `git` first on the worker's PATH
 * holds the activity open instead: it runs the real git, and after `worktree add` writes a marker
 * and sleeps.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CadreClient } from '../../src/client/client';
import { runHistories } from '../support/history';
import { git, tempRepository } from '../support/git-repo';
import { compile, kill, startWorkerProcess, uniqueId } from '../support/harness';

test('a worker killed between `git worktree add` and the activity completing: the retry adopts the worktree', async () => {
  const { home, repo } = tempRepository('cadre-wt-kill-');
  const marker = path.join(home, 'checkouts.log');
  const bin = path.join(home, 'bin');
  mkdirSync(bin);
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(bin, 'git'),
    `#!/bin/sh\n"${realGit}" "$@"\nstatus=$?\ncase " $* " in *" worktree add "*) echo "$*" >> ${marker}; sleep 2;; esac\nexit $status\n`,
  );
  chmodSync(path.join(bin, 'git'), 0o755);
  const slowGit = { PATH: `${bin}${path.delimiter}${process.env.PATH}` };

  const taskQueue = uniqueId('wt-kill');
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  let worker = await startWorkerProcess(taskQueue, slowGit);
  try {
    const plan = compile(`name: wt-kill\nsteps:\n  - { id: work, worktree: { repo: ${repo} }, tool: fs.write, with: { path: done.txt, content: done } }\n`, home);
    const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('wt-kill'), taskQueue });
    while (!existsSync(marker)) await sleep(20);
    // `worktree add` made the worktree and is in its hook: the activity has not completed.
    await kill(worker, 'SIGKILL');
    worker = await startWorkerProcess(taskQueue, slowGit);
    const d = await client.result(workflowId);
    expect(d.status).toBe('completed');

    const worktrees = git(repo, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree '));
    expect(worktrees).toHaveLength(2);
    // One `worktree add` only: the retry adopted what the first attempt made.
    expect(readFileSync(marker, 'utf8').trim().split('\n')).toHaveLength(1);
    const attempts = [...(await runHistories(client.client, workflowId)).values()]
      .flat()
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes?.attempt);
    expect(attempts).toContain(2);
    // The step wrote into the adopted worktree; its uncommitted file keeps it after the run.
    expect(d.worktrees).toEqual([expect.objectContaining({ task: 'work', state: 'kept', files: ['done.txt'] })]);
  } finally {
    await kill(worker, 'SIGTERM');
    await client.close();
  }
}, 120_000);
