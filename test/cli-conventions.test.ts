/**
 * CLI conventions: --json on every command that prints a result (watch as JSON lines), a header
 * row in `list`, colour only where it belongs (a TTY, not with NO_COLOR), shell completion made
 * from the command tree, and examples in --help.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildProgram } from '../src/client/cli';
import { completionScript } from '../src/client/completion';
import { colourOn } from '../src/client/style';
import { runCadre } from './support/cli';
import { tempWorkspace, uniqueId, withWorker } from './support/harness';

const RESULT_COMMANDS = ['validate', 'run', 'team', 'status', 'list', 'watch', 'answer', 'approve', 'deny', 'pause', 'resume', 'cancel', 'result', 'roles', 'worktrees', 'ask', 'send', 'workers', 'move'];

test('every command that prints a result takes --json; the main ones show examples in --help', () => {
  const program = buildProgram();
  const missing = RESULT_COMMANDS.filter((name) => !program.commands.find((c) => c.name() === name)?.options.some((o) => o.long === '--json'));
  expect(missing).toEqual([]);
  for (const name of ['run', 'status', 'list', 'watch', 'answer', 'validate', 'worker', 'dev', 'cancel', 'completion']) {
    const command = program.commands.find((c) => c.name() === name)!;
    let help = '';
    command.configureOutput({ writeOut: (text) => (help += text) });
    command.outputHelp();
    expect(`${name}: ${help}`).toMatch(new RegExp(`${name}: [\\s\\S]*Examples:\\n  (source <\\(cadre|cadre ${name}|\\S+=\\S+ cadre ${name})`));
  }
});

test('the CLI loads no Temporal client, workflow code, plan format or model code before a command runs (cadre --version starts at once)', async () => {
  const cli = path.join(__dirname, '..', 'dist', 'src', 'client', 'cli.js');
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', `require(${JSON.stringify(cli)}); process.stdout.write(JSON.stringify(Object.keys(require.cache)))`]);
  const loaded = JSON.parse(stdout) as string[];
  expect(loaded.filter((file) => /node_modules\/(@temporalio\/(client|workflow|worker)|zod|yaml|jexl|ai|@ai-sdk\/[^/]+|nexus-rpc)\//.test(file))).toEqual([]);
  // @temporalio/common's index loads all of it (about 30 ms); what the CLI needs of it, it takes from its modules.
  expect(loaded.filter((file) => file.endsWith('node_modules/@temporalio/common/lib/index.js'))).toEqual([]);
  expect(loaded.length).toBeLessThan(100);
});

/** The files a fresh Node process has loaded after requiring `file` (from dist). */
async function loadedBy(file: string): Promise<string[]> {
  const module = path.join(__dirname, '..', 'dist', 'src', file);
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', `require(${JSON.stringify(module)}); process.stdout.write(JSON.stringify(Object.keys(require.cache)))`]);
  return JSON.parse(stdout) as string[];
}

test('the client loads no plan format, event schemas or run diff until a command needs them (cadre status, list, answer start sooner)', async () => {
  const loaded = await loadedBy('client/client.js');
  expect(loaded.filter((file) => /node_modules\/(zod|jexl|web-tree-sitter)\/|dist\/src\/(plan-format\/kinds|streaming\/reader\.js|client\/diff)/.test(file))).toEqual([]);
});

test('a worker loads no MCP SDK, OpenTelemetry or undici until a tool, a trace or a fetch needs them', async () => {
  const loaded = await loadedBy('worker/worker.js');
  expect(loaded.some((file) => file.includes('node_modules/@temporalio/worker/'))).toBe(true);
  expect(loaded.filter((file) => /node_modules\/(@modelcontextprotocol\/sdk|@opentelemetry\/[^/]+|undici)\//.test(file))).toEqual([]);
});

test('colour only on a terminal, and never with NO_COLOR', () => {
  expect(colourOn({ isTTY: true }, {})).toBe(true);
  expect(colourOn({ isTTY: false }, {})).toBe(false);
  expect(colourOn({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
  expect(colourOn({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
  expect(colourOn({ isTTY: false }, { FORCE_COLOR: '1' })).toBe(true);
  expect(colourOn({ isTTY: false }, { FORCE_COLOR: '1', NO_COLOR: '1' })).toBe(false);
});

test('bash completion completes commands, options, option choices and skips global option values', async () => {
  const script = completionScript(buildProgram(), 'bash');
  const complete = async (...words: string[]) => {
    const { stdout } = await promisify(execFile)('bash', ['-c', `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _cadre; printf '%s\\n' "\${COMPREPLY[@]}"`]);
    return stdout.split('\n').filter(Boolean);
  };
  expect(await complete('cadre', 'ru')).toEqual(['run']);
  expect(await complete('cadre', '--profile', 'prod', 'li')).toEqual(['list']);
  expect(await complete('cadre', 'list', '--status', 'wa')).toEqual(['waiting']);
  expect(await complete('cadre', 'run', '--wa')).toEqual(['--wait']);
  expect(await complete('cadre', 'watch', '--')).toEqual(['--json', '--from', '--help']);
  expect(completionScript(buildProgram(), 'zsh')).toMatch(/^#compdef cadre\n[\s\S]*bashcompinit[\s\S]*complete -o filenames -F _cadre cadre/);
});

test('--json results from validate, answer, pause, resume, cancel and watch; list has a header row and colours only when asked', async () => {
  const dir = tempWorkspace();
  writeFileSync(path.join(dir, 'bad.yaml'), 'name: bad\nsteps:\n  - { id: a, tool: shell, dependsOn: [nope] }\n');
  writeFileSync(path.join(dir, 'plan.yaml'), 'name: conventions\nsteps:\n  - { id: confirm, ask: { question: "Go?", choices: [yes, no] } }\n  - { id: after, dependsOn: [confirm], tool: shell, with: { command: "echo done" } }\n');
  await withWorker(async (h) => {
    const env = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: h.taskQueue, CADRE_LOG_LEVEL: 'ERROR' };
    const cadre = (...args: string[]) => runCadre(args, dir, env);
    expect(JSON.parse((await cadre('validate', 'plan.yaml', '--json')).stdout)).toEqual({ ok: true, file: 'plan.yaml', plan: 'conventions', steps: 2, warnings: [] });
    const bad = await cadre('validate', 'bad.yaml', '--json');
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, file: 'bad.yaml', issues: expect.arrayContaining([{ path: 'steps[0].dependsOn[0]', message: 'unknown step "nope"' }]) });

    const id = uniqueId('conventions');
    expect((await cadre('run', 'plan.yaml', '--id', id)).code).toBe(0);
    const watch = cadre('watch', id, '--json');
    for (let waiting = false; !waiting; ) waiting = JSON.parse((await cadre('status', id, '--json')).stdout).waiting.length > 0;
    expect(JSON.parse((await cadre('pause', id, '--json')).stdout)).toEqual({ workflowId: id, paused: true });
    expect(JSON.parse((await cadre('resume', id, '--json')).stdout)).toEqual({ workflowId: id, paused: false });
    expect(JSON.parse((await cadre('answer', id, 'confirm', 'yes', '--json')).stdout)).toEqual({ workflowId: id, waitId: 'confirm', value: 'yes', accepted: true });
    const watched = await watch;
    expect(watched.code).toBe(0);
    // One event a line, in order: the question, and the run's end last.
    const lines = watched.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; offset: number; status?: string; waitId?: string });
    expect(lines.map((l) => l.offset)).toEqual(lines.map((_, i) => i));
    expect(lines.at(-1)).toMatchObject({ type: 'run_completed', status: 'completed' });
    expect(lines.some((l) => l.type === 'question_asked' && l.waitId === 'confirm')).toBe(true);
    // --from resumes: the same events from that offset on, nothing before it.
    const resumed = (await cadre('watch', id, '--json', '--from', '2')).stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(resumed).toEqual(lines.slice(2));

    const other = uniqueId('conventions');
    await cadre('run', 'plan.yaml', '--id', other);
    expect(JSON.parse((await cadre('cancel', other, '--json', '--reason', 'not needed')).stdout)).toEqual({ workflowId: other, cancelRequested: true, reason: 'not needed' });

    const listed = await cadre('list', '--plan', 'conventions');
    expect(listed.stdout.split('\n')[0]).toMatch(/^WORKFLOW ID\s+PLAN\s+STATUS\s+STARTED$/);
    expect(listed.stdout).not.toContain('\u001b[');
    const coloured = await runCadre(['list', '--plan', 'conventions'], dir, { ...env, FORCE_COLOR: '1' });
    expect(coloured.stdout).toContain(`${id}`);
    expect(coloured.stdout).toContain('\u001b[32mcompleted\u001b[39m');
    expect((await runCadre(['list', '--plan', 'conventions'], dir, { ...env, FORCE_COLOR: '1', NO_COLOR: '1' })).stdout).not.toContain('\u001b[');
    const badStatus = await cadre('list', '--status', 'done');
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toContain("argument 'done' is invalid. Allowed choices are running, paused, waiting, completed, failed, budget_exhausted, cancelled, terminated, timed_out");
  });
});
