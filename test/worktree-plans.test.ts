/** Plans whose steps work in git worktrees: on the dev server, with real repositories. */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { runCadre, testServerEnv } from './support/cli';
import { git, tempRepository } from './support/git-repo';
import { compile, startPlan, waitUntil, fileWorker } from './support/harness';
import YAML from 'yaml';
import { validatePlan } from '../src/plan-format/validate';
import { findTemporalCli } from '../src/worker/temporal-cli';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-worktree-plans');

/** A repository, and a plan workspace beside it. */
function repository(): { repo: string; ws: string } {
  const { home, repo } = tempRepository('cadre-wt-plan-');
  const ws = path.join(home, 'ws');
  mkdirSync(ws);
  return { repo, ws };
}

const cadreBranches = (repo: string) => git(repo, 'branch', '--list', 'cadre/*', '--format=%(refname:short)').split('\n').filter(Boolean);

describe('worktrees in plans', () => {
  test('two tasks in two worktrees, both merged; the worktrees go when the run completes', async () => {
    const { repo, ws } = repository();
    const plan = compile(
      `
name: two-tasks
steps:
  - { id: edit_a, worktree: { repo: ../repo, task: a }, tool: fs.write, with: { path: a.txt, content: "from a" } }
  - { id: save_a, dependsOn: [edit_a], worktree: { repo: ../repo, task: a }, tool: git.commit, with: { message: "task a" } }
  - { id: edit_b, worktree: { repo: ../repo, task: b }, tool: shell, with: { command: "echo from b > b.txt && pwd" } }
  - { id: save_b, dependsOn: [edit_b], worktree: { repo: ../repo, task: b }, tool: git.commit, with: { message: "task b" } }
  - { id: merge_a, dependsOn: [save_a, save_b], worktree: { repo: ../repo, task: a }, tool: git.merge }
  - { id: merge_b, dependsOn: [merge_a], worktree: { repo: ../repo, task: b }, tool: git.merge }
output: { cwd: "{{ steps.edit_b.output.stdout }}", merged: "{{ steps.merge_b.output.into }}" }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      const worktreeB = path.join(path.dirname(repo), '.cadre-worktrees', 'repo', 'two-tasks', 'b');
      expect(d.output).toEqual({ cwd: `${worktreeB}\n`, merged: 'main' });
      expect(git(repo, 'show', 'main:a.txt')).toBe('from a');
      expect(git(repo, 'show', 'main:b.txt')).toBe('from b');
      // Nothing of it went to the plan's workspace.
      expect(existsSync(path.join(ws, 'a.txt'))).toBe(false);
      expect(d.worktrees?.map((w) => [w.task, w.state]).sort()).toEqual([
        ['a', 'removed'],
        ['b', 'removed'],
      ]);
      expect(existsSync(worktreeB)).toBe(false);
      expect(cadreBranches(repo)).toEqual([]);
    });
  });

  test('two tasks editing the same line: the merge fails naming the file, both branches stay', async () => {
    const { repo, ws } = repository();
    const edit = (task: string) => `{ id: edit_${task}, worktree: { repo: ${repo}, task: ${task} }, tool: fs.write, with: { path: app.txt, content: "line 1\\n${task}\\nline 3\\n" } }`;
    const plan = compile(
      `
name: conflict
steps:
  - ${edit('a')}
  - ${edit('b')}
  - { id: save_a, dependsOn: [edit_a], worktree: { repo: ${repo}, task: a }, tool: git.commit, with: { message: a } }
  - { id: save_b, dependsOn: [edit_b], worktree: { repo: ${repo}, task: b }, tool: git.commit, with: { message: b } }
  - { id: merge_a, dependsOn: [save_a, save_b], worktree: { repo: ${repo}, task: a }, tool: git.merge }
  - { id: merge_b, dependsOn: [merge_a], worktree: { repo: ${repo}, task: b }, tool: git.merge }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.status).toBe('failed');
      expect(d.reason).toContain('step "merge_b" failed: MergeConflict: merging cadre/conflict/b into main conflicts in app.txt; resolve it by hand');
      expect(d.steps.find((s) => s.id === 'merge_b')?.attempts).toBe(1);
      expect(cadreBranches(repo)).toEqual(['cadre/conflict/a', 'cadre/conflict/b']);
      expect(git(repo, 'show', 'cadre/conflict/b:app.txt')).toBe('line 1\nb\nline 3');
      expect(git(repo, 'status', '--porcelain')).toBe('');
      // The run failed: its worktrees are kept to look at.
      expect(d.worktrees?.map((w) => [w.task, w.state])).toEqual([
        ['a', 'kept'],
        ['b', 'kept'],
      ]);
    });
  });

  test('cancelled with `temporal workflow cancel`: the clean worktree goes, the dirty one stays with its files listed', async () => {
    const cli = await findTemporalCli({ build: false });
    if (!cli) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
    const { repo, ws } = repository();
    const plan = compile(
      `
name: cancelled
steps:
  - { id: clean, worktree: { repo: ${repo}, task: clean, cleanup: always }, tool: git.status }
  - { id: dirty, worktree: { repo: ${repo}, task: dirty, cleanup: always }, tool: fs.write, with: { path: notes.txt, content: unsaved }  }
  - { id: wait, dependsOn: [clean, dirty], ask: { question: "Go on?" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      await waitUntil(h, id, (d) => d.status === 'waiting');
      await promisify(execFile)(cli, ['workflow', 'cancel', '--address', process.env.CADRE_TEST_ADDRESS as string, '--workflow-id', id]);
      const d = await waitUntil(h, id, (x) => x.status === 'cancelled');
      const byTask = Object.fromEntries((d.worktrees ?? []).map((w) => [w.task, w]));
      expect(byTask.clean).toMatchObject({ state: 'removed' });
      expect(byTask.dirty).toMatchObject({ state: 'kept', files: ['notes.txt'] });
      expect(byTask.dirty.note).toContain('holds uncommitted work');
      expect(existsSync(path.join(byTask.dirty.path as string, 'notes.txt'))).toBe(true);
      expect(existsSync(byTask.clean.path as string)).toBe(false);
    });
  });

  test("a worktree's .git is out of bounds, like the outside", async () => {
    const { repo, ws } = repository();
    const plan = compile(
      `
name: escapes
steps:
  - { id: config, worktree: { repo: ${repo} }, tool: fs.read, with: { path: .git }, onFailure: skip }
  - { id: up, worktree: { repo: ${repo} }, tool: fs.read, with: { path: ../../../repo/app.txt }, onFailure: skip }
  - { id: inside, worktree: { repo: ${repo} }, tool: fs.read, with: { path: app.txt } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      const error = (id: string) => d.errors.find((e) => e.step === id)?.message ?? '';
      expect(error('config')).toMatch(/worktree/);
      expect(error('up')).toMatch(/outside the worktree/);
      expect(d.steps.find((s) => s.id === 'inside')?.status).toBe('completed');
    });
  });

  test('cadre worktrees lists them with their runs; prune removes closed runs\' clean ones and says why it kept the others', async () => {
    const { repo, ws } = repository();
    git(repo, 'worktree', 'add', '--quiet', '-b', 'mine', path.join(path.dirname(repo), 'mine'));
    const plan = (name: string, extra: string) =>
      compile(`name: ${name}\nsteps:\n  - { id: work, worktree: { repo: ${repo}, cleanup: never }, tool: shell, with: { command: "echo x > x.txt" } }\n${extra}`, ws);
    await withFileWorker(async (h) => {
      // Closed, committed work on its branch; closed with uncommitted work; still open.
      const saved = await startPlan(h, plan('saved', '  - { id: save, dependsOn: [work], worktree: { repo: ' + repo + ', task: work, cleanup: never }, tool: git.commit, with: { message: x } }\n'));
      const dirty = await startPlan(h, plan('dirty', ''));
      const open = await startPlan(h, plan('open', '  - { id: wait, dependsOn: [work], ask: { question: "Done?" } }\n'));
      expect((await h.client.result(saved)).status).toBe('completed');
      expect((await h.client.result(dirty)).status).toBe('completed');
      await waitUntil(h, open, (d) => d.status === 'waiting');

      const listed = await runCadre(['worktrees', '--repo', repo, '--json'], ws, testServerEnv());
      expect(listed.code).toBe(0);
      const rows = (JSON.parse(listed.stdout) as { branch: string; state: string; run: string; step: string; runOpen: boolean }[]).sort((a, b) => a.branch.localeCompare(b.branch));
      expect(rows.map((r) => [r.branch, r.state, r.run, r.step, r.runOpen])).toEqual([
        ['cadre/dirty/work', 'dirty', dirty, 'work', false],
        ['cadre/open/work', 'dirty', open, 'work', true],
        ['cadre/saved/work', 'clean', saved, 'work', false],
      ]);
      const table = await runCadre(['worktrees', '--repo', repo], ws, testServerEnv());
      expect(table.stdout).toContain(`${open} (open)`);

      const pruned = await runCadre(['worktrees', 'prune', '--repo', repo], ws, testServerEnv());
      expect(pruned.code).toBe(0);
      const lines = pruned.stdout.trim().split('\n').sort();
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(/^kept .*dirty\/work \(cadre\/dirty\/work\): .*holds uncommitted work \(x\.txt\)/);
      expect(lines[1]).toMatch(new RegExp(`^kept .*open/work \\(cadre/open/work\\): run ${open} is still open$`));
      expect(lines[2]).toMatch(/^removed .*saved\/work \(cadre\/saved\/work\): 1 commit\(s\) not merged into main: kept on branch cadre\/saved\/work$/);
      expect(git(repo, 'show', 'cadre/saved/work:x.txt')).toBe('x');
      // Not cadre's: untouched.
      expect(existsSync(path.join(path.dirname(repo), 'mine'))).toBe(true);
      expect((await runCadre(['worktrees', 'tidy', '--repo', repo], ws, testServerEnv())).code).toBe(2);
      await h.client.answer(open, 'wait', 'yes');
    });
  });

  test('validation: git tools need a worktree, shared tasks must agree', () => {
    const issues = (yaml: string) => {
      const result = validatePlan(YAML.parse(yaml), { baseDir: '/tmp' });
      return result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`);
    };
    expect(issues('name: p\nsteps:\n  - { id: a, tool: git.commit, with: { message: m } }\n')).toEqual(['steps[0].worktree: git.commit runs in a worktree: give the step a "worktree"']);
    expect(issues('name: p\nsteps:\n  - { id: a, worktree: { repo: r }, ask: { question: q } }\n')).toContain('steps[0].worktree: "worktree" needs a "tool" or an "agent": only they run in a worktree');
    expect(
      issues('name: p\nsteps:\n  - { id: a, worktree: { repo: r, task: t }, tool: git.status }\n  - { id: b, worktree: { repo: r, task: t, cleanup: never }, tool: git.status }\n'),
    ).toEqual(['steps[1].worktree: shares task "t" with steps[0] but not its base and cleanup; give them the same, or another task']);
  });
});
