/**
 * The ten tasks of the local-model benchmark (bench/local-model.ts): small agent tasks with known
 * right answers, from ones a 1.5B model should manage (read a file, answer from it) to ones it may
 * fail (fix a failing test, rename a function across two files). Each starts from the files it
 * lists, and its check reads only the workspace afterwards (files, and the exit code and output
 * of `node` run there), never what the model said it did. `solution` is a right end state, for the
 * unit test that proves each check can fail and can pass.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Check {
  ok: boolean;
  /** Why not, or what was found, in a few words. */
  detail: string;
}

export interface BenchTask {
  id: string;
  prompt: string;
  /** The step's tools, as a plan names them. */
  tools: string[];
  /** The files its prompt names to write or change: its plan's `mustChange`, as the prompt's author would list them. */
  changes: string[];
  /**
   * A shell command checking what the prompt states, as its author would write the step's `verify`
   * (`--verify`): it knows what the prompt says, never an answer the prompt leaves to the model
   * (the port, the total, the count), so it is weaker than `check` where the prompt is; and it says
   * why it failed, as a test does.
   */
  verify: string;
  /** The workspace before the agent starts: path → content. */
  files: Record<string, string>;
  /** Files that make a right end state (written over `files`). */
  solution: Record<string, string>;
  check(workspace: string): Check;
}

const FS = ['fs.read', 'fs.write', 'fs.edit'];
const FS_SHELL = ['fs.read', 'fs.write', 'fs.edit', 'shell'];

const NOTES = `Release notes for version 2.4 (codename Kestrel)
- Ships on Friday 14 March.
- Adds a dark mode to the settings page.
- Fixes the crash when a file name has spaces in it.
- Drops support for Node 16.
`;

const MATH = `function add(a, b) {
  return a - b;
}

function double(n) {
  return add(n, n);
}

module.exports = { add, double };
`;

const MATH_TEST = `const assert = require('node:assert');
const { add, double } = require('./math');

assert.strictEqual(add(2, 3), 5);
assert.strictEqual(double(4), 8);
console.log('all tests passed');
`;

const UTIL = `function calc(items) {
  return items.reduce((sum, item) => sum + item.price * item.qty, 0);
}

module.exports = { calc };
`;

const MAIN = `const { calc } = require('./util');

console.log(calc([{ price: 2, qty: 3 }, { price: 5, qty: 1 }]));
`;

/** Prints a value nobody can guess without running it. */
const STAMP = `const { createHash } = require('node:crypto');
console.log(createHash('sha256').update('cadre-local-model-bench').digest('hex').slice(0, 16));
`;

export const TASKS: BenchTask[] = [
  {
    id: 'summarise',
    prompt: 'Read notes.txt and write a one-line summary of it to summary.txt. The summary must name the version number.',
    tools: FS,
    changes: ['summary.txt'],
    verify: `n=$(grep -c . summary.txt) && [ "$n" = 1 ] || { echo "summary.txt has $n lines, not one"; exit 1; }`,
    files: { 'notes.txt': NOTES },
    solution: { 'summary.txt': 'Version 2.4 (Kestrel) ships Friday 14 March with dark mode and a fix for file names with spaces.\n' },
    check: (ws) => {
      const text = read(ws, 'summary.txt');
      if (text === undefined) return missing('summary.txt');
      const lines = text.split('\n').filter((line) => line.trim() !== '');
      if (lines.length !== 1) return no(`summary.txt has ${lines.length} lines`);
      if (lines[0].length >= NOTES.length / 1.5) return no('summary.txt is about as long as the notes');
      return lines[0].includes('2.4') ? yes('one line naming 2.4') : no(`no version in ${quote(lines[0])}`);
    },
  },
  {
    id: 'config-port',
    prompt: 'Which port does the [server] section of config.ini set? Write only that number to port.txt.',
    tools: FS,
    changes: ['port.txt'],
    verify: `grep -Eqx '[[:space:]]*[0-9]+[[:space:]]*' port.txt || { echo "port.txt does not hold only a number"; exit 1; }`,
    files: { 'config.ini': '[db]\nhost = 10.0.0.5\nport = 5432\n\n[server]\nhost = 0.0.0.0\nport = 8443\nworkers = 4\n' },
    solution: { 'port.txt': '8443\n' },
    check: (ws) => equals(ws, 'port.txt', '8443'),
  },
  {
    id: 'edit-word',
    prompt: 'In greeting.txt, replace the word World with cadre everywhere, and keep everything else as it is.',
    tools: FS,
    changes: ['greeting.txt'],
    verify: `! grep -n World greeting.txt && grep -q cadre greeting.txt || { echo "greeting.txt still has World on the lines above, or no cadre"; exit 1; }`,
    files: { 'greeting.txt': 'Hello, World!\nWelcome to the World of tools.\n' },
    solution: { 'greeting.txt': 'Hello, cadre!\nWelcome to the cadre of tools.\n' },
    check: (ws) => equals(ws, 'greeting.txt', 'Hello, cadre!\nWelcome to the cadre of tools.'),
  },
  {
    id: 'create-json',
    prompt: 'Create the file settings.json holding a JSON object whose "name" is the string "cadre" and whose "port" is the number 8080.',
    tools: FS,
    changes: ['settings.json'],
    verify: `node -e 'const s = require("./settings.json"); process.exit(s.name === "cadre" && s.port === 8080 ? 0 : 1)'`,
    files: {},
    solution: { 'settings.json': '{ "name": "cadre", "port": 8080 }\n' },
    check: (ws) => {
      const text = read(ws, 'settings.json');
      if (text === undefined) return missing('settings.json');
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return no('settings.json is not JSON');
      }
      const object = value as { name?: unknown; port?: unknown } | null;
      return object?.name === 'cadre' && object.port === 8080 ? yes('name and port right') : no(`settings.json is ${quote(JSON.stringify(value))}`);
    },
  },
  {
    id: 'append-line',
    prompt: 'Add the line "water the plants" at the end of todo.txt, keeping the lines that are already there.',
    tools: FS,
    changes: ['todo.txt'],
    verify: `last=$(grep . todo.txt | tail -n 1) && [ "$last" = 'water the plants' ] || { echo "the last line of todo.txt is: $last"; exit 1; }`,
    files: { 'todo.txt': 'buy bread\ncall Sam\n' },
    solution: { 'todo.txt': 'buy bread\ncall Sam\nwater the plants\n' },
    check: (ws) => {
      const text = read(ws, 'todo.txt');
      if (text === undefined) return missing('todo.txt');
      const lines = text.split('\n').map((line) => line.trim()).filter((line) => line !== '');
      return lines.join('|') === 'buy bread|call Sam|water the plants' ? yes('three lines in order') : no(`todo.txt holds ${quote(lines.join(' | '))}`);
    },
  },
  {
    id: 'two-files',
    prompt: 'order.txt says how many pears were ordered, and prices.txt gives the price of one of each fruit. Write the total cost of the order, only the number, to total.txt.',
    tools: FS,
    changes: ['total.txt'],
    verify: `grep -Eqx '[[:space:]]*[0-9]+[[:space:]]*' total.txt || { echo "total.txt does not hold only a number"; exit 1; }`,
    files: { 'prices.txt': 'apple 3\npear 4\nplum 2\n', 'order.txt': 'pears: 5\n' },
    solution: { 'total.txt': '20\n' },
    check: (ws) => equals(ws, 'total.txt', '20'),
  },
  {
    id: 'run-command',
    prompt: 'Run `node stamp.js` and write exactly what it prints to stamp.txt.',
    tools: FS_SHELL,
    changes: ['stamp.txt'],
    verify: `[ "$(node stamp.js)" = "$(cat stamp.txt)" ] || { echo "stamp.txt does not hold what node stamp.js prints"; exit 1; }`,
    files: { 'stamp.js': STAMP },
    solution: { 'stamp.txt': `${createHash('sha256').update('cadre-local-model-bench').digest('hex').slice(0, 16)}\n` },
    check: (ws) => {
      const printed = node(ws, ['stamp.js']).stdout.trim();
      return equals(ws, 'stamp.txt', printed);
    },
  },
  {
    id: 'count-files',
    prompt: 'How many .txt files are in the folder data? Write only the number to count.txt.',
    tools: FS_SHELL,
    changes: ['count.txt'],
    verify: `grep -Eqx '[[:space:]]*[0-9]+[[:space:]]*' count.txt || { echo "count.txt does not hold only a number"; exit 1; }`,
    files: Object.fromEntries([
      ...['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((name) => [`data/${name}.txt`, `${name}\n`]),
      ...['readme', 'notes', 'todo'].map((name) => [`data/${name}.md`, `# ${name}\n`]),
    ]),
    solution: { 'count.txt': '7\n' },
    check: (ws) => equals(ws, 'count.txt', '7'),
  },
  {
    id: 'fix-test',
    prompt: '`node test.js` fails. Find the bug in math.js and fix it so that the test passes. Do not change test.js.',
    tools: FS_SHELL,
    changes: ['math.js'],
    verify: `node test.js`,
    files: { 'math.js': MATH, 'test.js': MATH_TEST },
    solution: { 'math.js': MATH.replace('a - b', 'a + b') },
    check: (ws) => {
      if (read(ws, 'test.js') !== MATH_TEST) return no('test.js was changed');
      const run = node(ws, ['test.js']);
      return run.status === 0 ? yes('node test.js exits 0') : no(`node test.js exits ${run.status}`);
    },
  },
  {
    id: 'rename',
    prompt: 'Rename the function calc to computeTotal in util.js and main.js: its definition, its export, its import and its call. `node main.js` must still print 11.',
    tools: FS_SHELL,
    changes: ['util.js', 'main.js'],
    verify: `! grep -nw calc util.js main.js && [ "$(node main.js)" = 11 ] || { echo "calc is still on the lines above, or node main.js does not print 11"; exit 1; }`,
    files: { 'util.js': UTIL, 'main.js': MAIN },
    solution: { 'util.js': UTIL.replace(/calc/g, 'computeTotal'), 'main.js': MAIN.replace(/calc/g, 'computeTotal') },
    check: (ws) => {
      const sources = ['util.js', 'main.js'].map((file) => read(ws, file) ?? '');
      if (sources.some((source) => /\bcalc\b/.test(source))) return no('calc is still there');
      if (!sources.every((source) => source.includes('computeTotal'))) return no('computeTotal is not in both files');
      const run = node(ws, ['main.js']);
      return run.status === 0 && run.stdout.trim() === '11' ? yes('renamed; node main.js prints 11') : no(`node main.js exits ${run.status} printing ${quote(run.stdout.trim())}`);
    },
  },
];

/** Writes a task's files (or a solution) into a workspace. */
export function writeFiles(workspace: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    writeFileSync(path.join(workspace, name), content);
  }
}

function read(ws: string, file: string): string | undefined {
  const at = path.join(ws, file);
  return existsSync(at) ? readFileSync(at, 'utf8') : undefined;
}

/** The file holds `expected` and nothing else but surrounding whitespace. */
function equals(ws: string, file: string, expected: string): Check {
  const text = read(ws, file);
  if (text === undefined) return missing(file);
  return text.trim() === expected ? yes(`${file} is right`) : no(`${file} holds ${quote(text.trim())}`);
}

/** Node as this process runs it, in the workspace, without the model's sandbox: the checker's own run. */
function node(cwd: string, args: string[]): { status: number | null; stdout: string } {
  const run = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 20_000 });
  return { status: run.status, stdout: run.stdout ?? '' };
}

const yes = (detail: string): Check => ({ ok: true, detail });
const no = (detail: string): Check => ({ ok: false, detail });
const missing = (file: string): Check => no(`no ${file}`);

function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}
