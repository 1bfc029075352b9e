import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { type CliResult, runCadre, testServerEnv } from './support/cli';
import { tempWorkspace, uniqueId, withWorker } from './support/harness';

async function cadre(args: string[], cwd: string): Promise<CliResult> {
  return runCadre(args, cwd, testServerEnv());
}

const ASKING_PLAN = `
name: cli-asking
inputs: { count: { type: number } }
steps:
  - { id: count, tool: shell, with: { command: "echo {{ inputs.count }}" } }
  - { id: confirm, ask: { question: "Archive {{ steps.count.output.json }} emails?", choices: [yes, no] } }
output: { answer: "{{ steps.confirm.output }}", count: "{{ steps.count.output.json }}" }
`;

describe('the cadre CLI', () => {
  test('validate reports every problem with its path and exits non-zero; run refuses the plan the same way', async () => {
    const ws = tempWorkspace();
    writeFileSync(
      path.join(ws, 'bad.yaml'),
      `name: bad\nsteps:\n  - { id: a, tool: shell, with: { command: "true" }, dependsOn: [b] }\n  - { id: b, tool: nope, dependsOn: [a], timeout: soon }\n`,
    );
    const result = await cadre(['validate', 'bad.yaml'], ws);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      'bad.yaml: 3 problems',
      '  steps[0]: dependency cycle a -> b -> a',
      '  steps[1].timeout: bad duration "soon": use a number with ms, s, m, h or d (e.g. 30s, 5m)',
      '  steps[1].tool: unknown tool "nope" (known tools: shell, fs.read, fs.write, fs.edit, http.request, sleep, git.status, git.commit, git.merge, git.reset, code.navigate_imports, code.find_implementations, code.find_references, code.trace_data_flow, code.search; the worker\'s own: ts:<name>, mcp:<server>/<tool>)',
    ]);
    const run = await cadre(['run', 'bad.yaml', '--wait'], ws);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('bad.yaml: 3 problems');

    writeFileSync(path.join(ws, 'good.yaml'), ASKING_PLAN);
    expect(await cadre(['validate', 'good.yaml'], ws)).toMatchObject({ code: 0, stdout: 'good.yaml: ok (plan "cli-asking", 2 steps)\n' });
  });

  test('validate prints warnings about a run near Temporal\'s limits to stderr and still exits 0', async () => {
    const ws = tempWorkspace();
    const items = `[${Array.from({ length: 1000 }, (_, i) => i).join(',')}]`;
    const loop = (id: string) => `  - { id: ${id}, forEach: ${items}, tool: shell, with: { command: "echo {{ item }}" } }`;
    writeFileSync(path.join(ws, 'busy.yaml'), `name: busy\nsteps:\n${loop('one')}\n${loop('two')}\n`);
    const result = await cadre(['validate', 'busy.yaml'], ws);
    expect(result).toMatchObject({ code: 0, stdout: 'busy.yaml: ok (plan "busy", 2 steps)\n' });
    expect(result.stderr).toMatch(/^busy\.yaml: 1 warning\n {2}steps\[0\]\.forEach: a run's history would hold about 12,010 events .*past Temporal's warning threshold of 10,240 events/);
  });

  test('run, status, answer and result drive a plan that asks a human', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'plan.yaml'), ASKING_PLAN);
    await withWorker(async ({ taskQueue }) => {
      const id = uniqueId('cli');
      const missing = await cadre(['run', 'plan.yaml', '--task-queue', taskQueue], ws);
      expect(missing).toMatchObject({ code: 1, stderr: 'cadre: bad inputs:\ninputs.count: missing (give it with --input name=value)\n' });

      const started = await cadre(['run', 'plan.yaml', '--input', 'count=4', '--id', id, '--task-queue', taskQueue], ws);
      expect(started).toMatchObject({ code: 0, stdout: `${id}\n` });

      let status: CliResult;
      const deadline = Date.now() + 30_000;
      do {
        status = await cadre(['status', id, '--json'], ws);
      } while (!status.stdout.includes('"waiting"') && Date.now() < deadline);
      const diagnostics = JSON.parse(status.stdout);
      expect(diagnostics.waiting).toEqual([expect.objectContaining({ id: 'confirm', prompt: 'Archive 4 emails?', choices: ['yes', 'no'] })]);

      const listed = await cadre(['list', '--status', 'waiting', '--json', '--limit', '100'], ws);
      expect(JSON.parse(listed.stdout).map((r: { workflowId: string }) => r.workflowId)).toContain(id);

      expect(await cadre(['answer', id, 'confirm', 'perhaps'], ws)).toMatchObject({ code: 1, stderr: 'cadre: "perhaps" is not one of: yes, no\n' });
      expect(await cadre(['answer', id, 'confirm', 'yes'], ws)).toMatchObject({ code: 0, stdout: 'answered confirm: yes\n' });

      const result = await cadre(['result', id], ws);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ answer: 'yes', count: 4 });
      const human = await cadre(['status', id], ws);
      expect(human.stdout).toMatch(/cli-asking \(.*\): completed/);
      expect(human.stdout).toMatch(/✓ confirm\s+completed/);
    });
  });

  test('run --wait exits 1 when the plan fails; cancel works with a reason; unknown ids are one clear line', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'fail.yaml'), 'name: cli-fail\nsteps:\n  - { id: boom, retry: { maximumAttempts: 1 }, tool: shell, with: { command: "exit 9" } }\n');
    writeFileSync(path.join(ws, 'wait.yaml'), 'name: cli-wait\nsteps:\n  - { id: hold, ask: { question: "?" } }\n');
    await withWorker(async ({ taskQueue }) => {
      const failed = await cadre(['run', 'fail.yaml', '--wait', '--id', uniqueId('fail'), '--task-queue', taskQueue], ws);
      expect(failed.code).toBe(1);
      expect(failed.stdout).toMatch(/cli-fail .*: failed/);
      expect(failed.stdout).toContain('✗ boom');

      const id = uniqueId('wait');
      await cadre(['run', 'wait.yaml', '--id', id, '--task-queue', taskQueue], ws);
      expect(await cadre(['cancel', id, '--reason', 'no longer needed'], ws)).toMatchObject({ code: 0 });
      const result = await cadre(['result', id, '--json'], ws);
      expect(result.code).toBe(1);
      expect(JSON.parse(result.stdout).status).toBe('cancelled');
    });
    expect(await cadre(['status', 'no-such-run'], ws)).toMatchObject({ code: 1, stdout: '', stderr: 'cadre: no run with id "no-such-run"\n' });
  });
});
