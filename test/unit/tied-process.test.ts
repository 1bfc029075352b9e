/**
 * Processes tied to the worker that starts them (src/processes/tied-process.ts): a shell
 * command run with `sandbox: none`, and cadre's own git. However the process that started them
 * dies, they die with it, and whatever they started too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnTied } from '../../src/processes/tied-process';
import { hardenedGit } from '../../src/git/hardened';
import { tempRepository } from '../support/git-repo';
import { TSX } from '../support/tsx';
import { processAlive as alive } from '../support/processes';

const TIMEOUT = 30_000;


async function gone(pids: number[], withinMs = 3000): Promise<number[]> {
  const until = Date.now() + withinMs;
  while (pids.some(alive) && Date.now() < until) await sleep(20);
  return pids.filter(alive);
}

/** Runs `script` (TypeScript, from this folder) in a process of its own until it writes `marker`, then SIGKILLs it. */
async function killWhenReady(script: string, marker: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const worker: ChildProcess = spawn(process.execPath, ['--import', TSX, '-e', script], { env, stdio: 'ignore', cwd: __dirname });
  try {
    const until = Date.now() + 20_000;
    while (!existsSync(marker) && Date.now() < until) await sleep(20);
  } finally {
    worker.kill('SIGKILL');
  }
}

describe('a shell command tied to its worker', () => {
  test('dies with the worker, its child and grandchild too; a command killed by signal n exits 128+n', async () => {
    const { home } = tempRepository('cadre-tied-shell-');
    const pidsFile = path.join(home, 'pids');
    const command = `sleep 60 & first=$!; sh -c 'sleep 60 & echo $! >> pids; wait' & echo $$ $first $! >> pids; wait`;
    const script = `require(${JSON.stringify(path.resolve(__dirname, '../../src/processes/tied-process'))}).spawnTied(${JSON.stringify(command)}, { cwd: ${JSON.stringify(home)}, env: process.env, stdout() {}, stderr() {} });`;
    const pids = () => (existsSync(pidsFile) ? readFileSync(pidsFile, 'utf8').trim().split(/\s+/).map(Number) : []);
    try {
      await killWhenReady(script, pidsFile);
      while (pids().length < 4) await sleep(20);
      expect(await gone(pids())).toEqual([]);
    } finally {
      pids().filter(alive).forEach((pid) => process.kill(pid, 'SIGKILL'));
    }

    const killed = spawnTied('kill -s TERM $$', { cwd: home, env: process.env, stdout: () => undefined, stderr: () => undefined });
    expect(await killed.finished).toBe(128 + 15);
    killed.release();
  }, TIMEOUT);
});

describe('git tied to its process', () => {
  test('git and what it started die with the process that ran it; what git leaves running dies when git exits', async () => {
    const home = tempRepository('cadre-tied-git-').home;
    const bin = path.join(home, 'bin');
    mkdirSync(bin);
    // A git that starts a "hook" and waits for it (merge), or leaves one running and exits (gc).
    // Its command is its last argument: cadre's settings (-c ...) come first.
    writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\nfor command; do :; done\nsleep 60 &\necho "$$ $!" > "${home}/$command.pids"\n[ "$command" = merge ] && wait\nexit 0\n`,
    );
    chmodSync(path.join(bin, 'git'), 0o755);
    const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` };
    const pids = (name: string) => readFileSync(path.join(home, `${name}.pids`), 'utf8').trim().split(' ').map(Number);

    const script = `require(${JSON.stringify(path.resolve(__dirname, '../../src/git/hardened'))}).hardenedGit(${JSON.stringify(home)}).raw(['merge']);`;
    try {
      await killWhenReady(script, path.join(home, 'merge.pids'), env);
      expect(await gone(pids('merge'))).toEqual([]);
    } finally {
      pids('merge').filter(alive).forEach((pid) => process.kill(pid, 'SIGKILL'));
    }

    const previousPath = process.env.PATH;
    process.env.PATH = env.PATH;
    try {
      await hardenedGit(home).raw(['gc']);
    } finally {
      process.env.PATH = previousPath;
    }
    const [gitPid, left] = pids('gc');
    try {
      expect(alive(gitPid)).toBe(false);
      expect(await gone([left])).toEqual([]);
    } finally {
      if (alive(left)) process.kill(left, 'SIGKILL');
    }
  }, TIMEOUT);
});

