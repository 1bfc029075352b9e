/**
 * What the leases on cadre's git operations cost (src/git/lease.ts): a lease's whole life as a
 * commit lives it (take, note, release keeping the record, read the last record), against one of
 * cadre's git calls (`git rev-parse HEAD`, tied to the worker), and a `git.commit` with its lease
 * against the same git calls without it. Interleaved, so load drifts hit both alike.
 *
 *   npm run build && node dist/bench/git-leases.js      (no Temporal server; not part of `npm run bench`)
 *
 * Prints one JSON object and writes it to bench/results/git-leases.json. Wall times vary with the
 * machine's load: compare the figures of one run with each other, and quote the load with them.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { commitWorktree, createWorktree } from '../src/git';
import { type CheckoutWork, checkoutLeaseFile } from '../src/git/checkout-lease';
import { run } from '../src/git/git';
import { hardenedGit } from '../src/git/hardened';
import { lastRecord, takeLease } from '../src/git/lease';
import { cadreHead, locateWorktree } from '../src/git/worktrees';
import { git, tempRepository } from '../test/support/git-repo';
import { resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';

const ROUNDS = scaled(200, 40);

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Wall and CPU (this process's: a lease is file system calls made here) milliseconds of `work`. */
async function measured(work: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await work();
  const used = process.cpuUsage(cpu);
  return { wall: performance.now() - start, cpu: (used.user + used.system) / 1000 };
}

const KIND = { folder: 'checkouts', valid: () => true, busy: () => 'busy' };

async function main(): Promise<void> {
  const { repo } = tempRepository('cadre-bench-leases-');
  const w = await createWorktree({ repo, plan: 'bench', task: 't' });
  const { commonDir } = await locateWorktree(w.path);
  const file = checkoutLeaseFile(commonDir, w.path);
  const tied = hardenedGit(w.path);
  const samples = { lease: [] as { wall: number; cpu: number }[], gitCall: [] as { wall: number; cpu: number }[], commit: [] as number[], bare: [] as number[] };

  const leaseLife = async () => {
    const lease = await takeLease<Omit<CheckoutWork, 'checkout'>>(file, KIND, w.path, { op: 'commit' });
    await lease.note({ branch: w.branch, before: w.baseCommit, message: 'm', call: 'c' });
    await lease.release(true);
    await lastRecord(file, KIND);
  };
  /** A commit's git calls without a lease (what git.commit ran before leases). */
  const bareCommit = async (message: string) => {
    const { git: g } = await locateWorktree(w.path);
    await cadreHead(g, w.path);
    await run(g, ['add', '--all'], 'staging');
    await run(g, ['diff', '--cached', '--name-only'], 'reading');
    await run(g, ['commit', '--quiet', '--no-verify', '-m', message], 'committing');
    await run(g, ['rev-parse', 'HEAD'], 'reading the commit');
  };

  for (let i = 0; i < ROUNDS; i++) {
    samples.lease.push(await measured(leaseLife));
    samples.gitCall.push(await measured(() => tied.raw(['rev-parse', 'HEAD'])));
    // Alternate which goes first, so neither always finds the caches warmer.
    for (const leased of i % 2 === 0 ? [true, false] : [false, true]) {
      writeFileSync(path.join(w.path, 'file.txt'), `${i} ${leased}\n`);
      const { wall } = await measured(() => (leased ? commitWorktree({ path: w.path, message: `c${i}`, call: `call-${i}` }) : bareCommit(`b${i}`)));
      (leased ? samples.commit : samples.bare).push(wall);
    }
    if ((i + 1) % 20 === 0) log(`${i + 1}/${ROUNDS} rounds`);
  }
  const commits = Number(git(repo, 'rev-list', '--count', `${w.baseCommit}..${w.branch}`));
  if (commits !== 2 * ROUNDS) throw new Error(`expected ${2 * ROUNDS} commits, found ${commits}`);
  const ms = (values: number[]) => round(median(values));
  const report = {
    rounds: ROUNDS,
    loadAverage: os.loadavg().map((l) => round(l, 1)),
    leaseLifeMs: { wallMedian: ms(samples.lease.map((s) => s.wall)), cpuMedian: ms(samples.lease.map((s) => s.cpu)) },
    gitCallMs: { wallMedian: ms(samples.gitCall.map((s) => s.wall)), workerCpuMedian: ms(samples.gitCall.map((s) => s.cpu)) },
    commitMs: { leasedMedian: ms(samples.commit), bareMedian: ms(samples.bare) },
    node: process.version,
    date: new Date().toISOString(),
  };
  writeResults(resultsFile('git-leases'), report);
}

runMain(main, log);
