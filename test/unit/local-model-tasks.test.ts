/**
 * The local-model benchmark's tasks (bench/local-model-tasks.ts): each check fails on the task's
 * untouched workspace and on a few near misses, and passes on a right end state, so a success in
 * the benchmark's table is the workspace's, not the model's word.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BenchTask, TASKS, writeFiles } from '../../bench/local-model-tasks';

function workspace(task: BenchTask, ...layers: Record<string, string>[]): string {
  const ws = mkdtempSync(path.join(os.tmpdir(), `cadre-bench-task-${task.id}-`));
  for (const files of [task.files, ...layers]) writeFiles(ws, files);
  return ws;
}

const task = (id: string) => TASKS.find((t) => t.id === id) as BenchTask;

test('ten tasks with distinct ids, each offering file tools', () => {
  expect(TASKS).toHaveLength(10);
  expect(new Set(TASKS.map((t) => t.id)).size).toBe(10);
  for (const t of TASKS) expect(t.tools).toEqual(expect.arrayContaining(['fs.read', 'fs.write']));
});

test('the files each plan says its step must change are the ones its prompt names, and the ones its solution writes', () => {
  for (const t of TASKS) {
    expect({ id: t.id, unnamed: t.changes.filter((file) => !t.prompt.includes(file)) }).toEqual({ id: t.id, unnamed: [] });
    expect({ id: t.id, changes: [...t.changes].sort() }).toEqual({ id: t.id, changes: Object.keys(t.solution).sort() });
  }
});

test.each(TASKS.map((t) => [t.id, t] as const))('%s: fails untouched, passes solved', (_id, t) => {
  expect(t.check(workspace(t))).toMatchObject({ ok: false });
  expect(t.check(workspace(t, t.solution))).toMatchObject({ ok: true });
});

test.each(TASKS.map((t) => [t.id, t] as const))('%s: its verify command fails untouched, passes solved', (_id, t) => {
  const verify = (ws: string) => spawnSync('/bin/sh', ['-c', t.verify], { cwd: ws, stdio: 'ignore', timeout: 20_000 }).status;
  expect(verify(workspace(t))).not.toBe(0);
  expect(verify(workspace(t, t.solution))).toBe(0);
});

test('near misses fail: a test made to pass, a partial edit, a copy for a summary, a number among words, a string port', () => {
  const misses: [string, Record<string, string>][] = [
    ['fix-test', { 'test.js': "console.log('all tests passed');\n" }],
    ['fix-test', { 'math.js': 'module.exports = { add: () => 5, double: () => 7 };\n' }],
    ['edit-word', { 'greeting.txt': 'Hello, cadre!\nWelcome to the World of tools.\n' }],
    ['summarise', { 'summary.txt': 'Release notes for version 2.4 (codename Kestrel)\n- Ships on Friday 14 March.\n' }],
    ['summarise', { 'summary.txt': 'A release with dark mode.\n' }],
    ['two-files', { 'total.txt': 'The total is 20.\n' }],
    ['create-json', { 'settings.json': '{ "name": "cadre", "port": "8080" }' }],
    ['append-line', { 'todo.txt': 'water the plants\n' }],
    ['rename', { 'util.js': task('rename').solution['util.js'] }],
    ['run-command', { 'stamp.txt': 'I ran node stamp.js\n' }],
  ];
  for (const [id, files] of misses) {
    const ws = workspace(task(id), files);
    expect({ id, files, ok: task(id).check(ws).ok }).toEqual({ id, files, ok: false });
  }
});

test('a check reads files the agent may leave with surrounding whitespace', () => {
  const ws = workspace(task('config-port'));
  writeFileSync(path.join(ws, 'port.txt'), '  8443 \n\n');
  expect(task('config-port').check(ws)).toEqual({ ok: true, detail: 'port.txt is right' });
});
