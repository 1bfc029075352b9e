/**
 * A worker SIGKILLed after `git worktree add` made the worktree but before the activity
 * completed: the retry, on another worker, adopts that worktree: no error, no second one.
 * A post-checkout hook (git runs it at the end of `worktree add`) holds the activity open.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CadreClient } from '../../src/client/client';
import { runHistories } from '../support/history';
import { git, tempRepository } from '../support/git-repo';
import { compile, kill, startWorkerProcess, uniqueId } from '../support/harness';

test('a worker killed between `git worktree add` and the activity completing: the retry adopts the worktree', async () => {
  const { home, repo } = tempRepository('cadre-wt-kill-');
  const marker = path.join(home, 'checkouts.log');
  const hook = path.join(repo, '.git', 'hooks', 'post-checkout');
  writeFileSync(hook, `#!/bin/sh\necho "$(pwd)" >> ${marker}\nsleep 2\n`);
  chmodSync(hook, 0o755);

  const taskQueue = uniqueId('wt-kill');
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  let worker = await startWorkerProcess(taskQueue);
  try {
    const plan = compile(`name: wt-kill\nsteps:\n  - { id: work, worktree: { repo: ${repo} }, tool: fs.write, with: { path: done.txt, content: done } }\n`, home);
    const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('wt-kill'), taskQueue });
    while (!existsSync(marker)) await sleep(20);
    // `worktree add` made the worktree and is in its hook: the activity has not completed.
    await kill(worker, 'SIGKILL');
    worker = await startWorkerProcess(taskQueue);
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
