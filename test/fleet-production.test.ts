/**
 * A fleet in production's shape (docs/operations.md, A fleet): the real Temporal server on
 * PostgreSQL and three `cadre worker` processes as three hosts, each with a workspace root of its
 * own (nothing on one host's disk is read by another; a bare repository stands in for the git
 * server). Sixty runs of every kind: shell chains and worktrees with an agent in path workspaces, a
 * team, runs cloned from the repository, and sessions. Then the faults, while they run: host c
 * killed for good, host b killed and started again, the server killed and started again.
 *
 * Every run ends completed, or (a path workspace only host c holds) waiting with host c named; a
 * run cloned on host c moves and completes; no step whose completion was recorded runs again on a
 * surviving host (each shell step logs its start, host and time); and every history replays.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { CadreClient } from '../src/client/client';
import { sessionDiagnostics } from '../src/client/sessions';
import type { CompiledPlan } from '../src/plan-format/types';
import type { Diagnostics } from '../src/protocol/definitions';
import { SEARCH_ATTRIBUTES } from '../src/protocol/definitions';
import { auditSinks } from '../src/worker/audit-log';
import { activityCompletions } from './faults/kill-runs';
import { type RunningWorker, runCadre, startCadreWorker } from './support/cli';
import { git } from './support/git-repo';
import { compile, tempWorkspace, uniqueId } from './support/harness';
import { failedTasks, runHistories } from './support/history';
import { type Postgres, startPostgres } from './support/postgres';
import { type RealTemporalServer, startTemporalServer, waitForSearchAttributes } from './support/temporal-server';
import { until } from './support/until';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const say = (line: string) => process.stderr.write(`fleet-production: ${line}\n`);

const HOSTS = ['a', 'b', 'c'] as const;
type Host = (typeof HOSTS)[number];
const CHAINS_PER_HOST = 8;
const WORKTREE_RUNS_PER_HOST = 2;
const CLONED_RUNS = 24;
const SESSIONS = 5;

/** Logs "<label> <start ms> <host>" to runs.log in the step's folder, then works for a while. */
const logged = (label: string, seconds: number) => `echo "${label} $(date +%s%3N) $CADRE_TEST_WORKER" >> runs.log; sleep ${seconds}`;

/** The file the test writes into a workspace (or a clone of one) once the faults are over. */
const GATE = '.faults-over';
/** Waits for the gate: every run's long step is in flight through the faults, however loaded the machine. */
const untilGate = `until [ -e ${GATE} ]; do sleep 1; done`;

/** Three shell steps; the middle one lasts until the gate opens. */
const chainSteps = `sandbox: { env: [CADRE_TEST_WORKER] }
defaults: { retry: { maximumAttempts: 30, maximumInterval: 2s } }
steps:
  - { id: s1, tool: shell, with: { command: '${logged('s1', 0.2)}' } }
  - { id: s2, dependsOn: [s1], tool: shell, with: { command: '${logged('s2', 0)}; ${untilGate}' } }
  - { id: s3, dependsOn: [s2], tool: shell, with: { command: '${logged('s3', 0.2)}' } }
`;

const CHAIN_PLAN = (workspace: string) => `name: fleet-chain\nworkspace: ${workspace}\n${chainSteps}`;
const CLONED_PLAN = (origin: string) => `name: fleet-cloned\nworkspace: { repo: ${origin}, ref: main }\n${chainSteps}`;

/** A worktree's edit and commit, then an agent (offline model) writing a file. */
const WORKTREE_PLAN = (repo: string, task: string) => `name: fleet-worktree
workspace: ${repo}
steps:
  - { id: hold, tool: shell, with: { command: "${untilGate}" } }
  - { id: edit, dependsOn: [hold], worktree: { repo: ${repo}, task: ${task} }, tool: shell, with: { command: "echo changed > app.txt" } }
  - { id: save, dependsOn: [edit], worktree: { repo: ${repo}, task: ${task} }, tool: git.commit, with: { message: "on its host", all: true } }
  - id: agent
    dependsOn: [save]
    agent: { prompt: "Write agent.txt.", model: "scripted:${repo}/agent-script.yaml", tools: [fs.write], maxTurns: 3 }
`;

const AGENT_SCRIPT = `turns:
  - reply: { toolCalls: [{ name: fs_write, args: { path: agent.txt, content: "by the agent" } }] }
  - reply: { text: "wrote agent.txt" }
`;

/** Two team workers that each say they are done, with a result. */
const TEAM_PLAN = (workspace: string, script: string) => `name: fleet-team
workspace: ${workspace}
team: {}
steps:
  - { id: lead, agent: { prompt: plan it, model: "scripted:${script}" } }
  - { id: dev, dependsOn: [lead], agent: { prompt: build it, model: "scripted:${script}" } }
`;

const TEAM_SCRIPT = `turns:
  - reply: { toolCalls: [{ name: signal_state, args: { state: completing, reason: done, result: { ok: true } } }] }
`;

const SESSION_SCRIPT = `turns:
  - reply: { text: "first reply" }
  - reply: { text: "second reply" }
`;

/** A repository at `dir` with `files` committed on `main`. */
function newRepository(dir: string, files: Record<string, string>): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '--quiet', '--initial-branch=main');
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  git(dir, 'add', '.');
  git(dir, 'commit', '--quiet', '-m', 'first');
  return dir;
}

interface FleetRun {
  id: string;
  kind: 'chain' | 'worktree' | 'team' | 'cloned';
  /** The host whose disk holds the workspace (path workspaces). */
  holder?: Host;
  workspace?: string;
}

/**
 * Executions on a surviving host that started after the first completion of their step recorded
 * on a surviving host: none may. (One in flight at a kill may run again before that; a step whose
 * work on host c was never pushed runs again after the move, by design.)
 */
function rerunOnSurvivors(runId: string, log: string, done: Map<string, { host: string; at: number }[]>): { reruns: string[]; ranAgain: number } {
  const reruns: string[] = [];
  let ranAgain = 0;
  const starts = new Map<string, number>();
  for (const line of log.trim().split('\n').filter(Boolean)) {
    const [label, ms, host] = line.split(' ');
    if (host === 'c') continue;
    const firstDone = (done.get(label) ?? []).filter((d) => d.host !== 'c').map((d) => d.at).sort((x, y) => x - y)[0];
    if (firstDone === undefined) reruns.push(`${runId} ${label}: started on ${host}, no completion recorded on a surviving host`);
    else if (Number(ms) > firstDone) reruns.push(`${runId} ${label} started on ${host} ${Number(ms) - firstDone} ms after it completed`);
    starts.set(label, (starts.get(label) ?? 0) + 1);
  }
  for (const n of starts.values()) ranAgain += n - 1;
  return { reruns, ranAgain };
}

describe('a fleet in production shape: three hosts on the real server and PostgreSQL, through the loss of a host, a host restart and a server restart', () => {
  let pg: Postgres | undefined;
  let server: RealTemporalServer | undefined;
  const workers = new Map<Host, RunningWorker>();

  beforeAll(async () => {
    pg = await startPostgres({ user: 'temporal' });
    server = await startTemporalServer(pg, { log: say });
  }, 30 * 60_000);

  afterAll(async () => {
    await Promise.all([...workers.values()].map((w) => (w.child.exitCode === null && w.child.signalCode === null ? w.stop() : undefined)));
    await server?.stop();
    await pg?.stop();
  }, 60_000);

  test(`${CHAINS_PER_HOST * 3 + WORKTREE_RUNS_PER_HOST * 3 + 1 + CLONED_RUNS + SESSIONS} runs end completed or waiting for the lost host, no completed step runs again, every history replays`, async () => {
    const began = Date.now();
    const { address, namespace } = server!;
    const root = realpathSync(tempWorkspace());
    const shared = uniqueId('fleet');
    const env = (host?: Host): NodeJS.ProcessEnv => ({
      ...process.env,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      CADRE_TASK_QUEUE: shared,
      CADRE_LOG_LEVEL: 'ERROR',
      ...(host && { CADRE_HOST: host, CADRE_WORKSPACES: path.join(root, host), CADRE_HOST_LOST_AFTER: '10s', CADRE_TEST_WORKER: host }),
    });
    const names = SEARCH_ATTRIBUTES.map((key) => key.name);
    expect(await runCadre(['setup'], root, env())).toMatchObject({ code: 0 });
    say(`search attributes usable after ${await waitForSearchAttributes(address, namespace, names)} ms`);

    await Promise.all(HOSTS.map(async (host) => workers.set(host, await startCadreWorker([], root, env(host)))));
    // The workspaces: each host's own, and the repository any host clones.
    const runs: FleetRun[] = [];
    const plans: [FleetRun, CompiledPlan][] = [];
    for (const host of HOSTS) {
      for (let i = 0; i < CHAINS_PER_HOST; i++) {
        const workspace = path.join(root, host, `chain-${i}`);
        mkdirSync(workspace, { recursive: true });
        const run = { id: uniqueId(`fleet-chain-${host}`), kind: 'chain' as const, holder: host, workspace };
        plans.push([run, compile(CHAIN_PLAN(workspace), workspace)]);
      }
      for (let i = 0; i < WORKTREE_RUNS_PER_HOST; i++) {
        const repo = newRepository(path.join(root, host, `repo-${i}`), { 'app.txt': 'first\n', 'agent-script.yaml': AGENT_SCRIPT });
        const run = { id: uniqueId(`fleet-worktree-${host}`), kind: 'worktree' as const, holder: host, workspace: repo };
        plans.push([run, compile(WORKTREE_PLAN(repo, `task-${i}`), repo)]);
      }
    }
    const teamWorkspace = path.join(root, 'a', 'team');
    mkdirSync(teamWorkspace, { recursive: true });
    writeFileSync(path.join(root, 'team-script.yaml'), TEAM_SCRIPT);
    plans.push([{ id: uniqueId('fleet-team'), kind: 'team', holder: 'a', workspace: teamWorkspace }, compile(TEAM_PLAN(teamWorkspace, path.join(root, 'team-script.yaml')), teamWorkspace)]);
    const seed = newRepository(path.join(root, 'seed'), { 'app.txt': 'first\n' });
    const origin = path.join(root, 'origin.git');
    git(root, 'clone', '--quiet', '--bare', seed, origin);
    for (let i = 0; i < CLONED_RUNS; i++) plans.push([{ id: uniqueId('fleet-cloned'), kind: 'cloned' }, compile(CLONED_PLAN(origin), root)]);

    const client = await CadreClient.connect({ address, namespace });
    const diagnostics = (id: string) => client.diagnostics(id).catch(() => undefined);
    try {
      await Promise.all(plans.map(([run, plan]) => client.start(plan, {}, { workflowId: run.id, taskQueue: shared })));
      runs.push(...plans.map(([run]) => run));
      say(`${runs.length} plan runs started, ${Date.now() - began} ms in`);
      writeFileSync(path.join(root, 'session-script.yaml'), SESSION_SCRIPT);
      // Sessions with a tool, each bound to the host that holds its workspace: a's, or b's (killed and started again).
      const sessions = Array.from({ length: SESSIONS }, (_, i) => {
        const holder = i % 2 === 0 ? 'a' : 'b';
        const workspace = path.join(root, holder, `session-${i}`);
        mkdirSync(workspace, { recursive: true });
        return { id: uniqueId('fleet-session'), holder, workspace };
      });
      const sessionEnv = { ...env(), CADRE_MODEL: `scripted:${path.join(root, 'session-script.yaml')}` };
      const send = (text: string, reply: string) =>
        Promise.all(
          sessions.map(async ({ id, workspace }) =>
            // The reply ends what it printed (a model turn retried under this load may say so first).
            expect(await runCadre(['send', id, text, '--tools', 'shell', '--workspace', workspace], root, sessionEnv)).toMatchObject({ code: 0, stdout: expect.stringMatching(new RegExp(`(^|\n)${reply}\n$`)) }),
          ),
        );
      const firstMessages = send('hello', 'first reply').then(async () => {
        for (const session of sessions) expect(await sessionDiagnostics(client, session.id)).toMatchObject({ host: session.holder });
        say(`${SESSIONS} sessions answered, each on the host that holds its workspace, ${Date.now() - began} ms in`);
      });

      // Host c is killed while it holds work: every path run bound, a chain of c's and a clone on c in their long step.
      const held = until('every run bound to its host, and host c in the middle of a chain and of a clone', async () => {
        const seen = await Promise.all(runs.map((r) => diagnostics(r.id)));
        if (seen.some((d, i) => d === undefined || (runs[i].holder !== undefined && d.host === undefined))) return undefined;
        const midway = (kind: FleetRun['kind']) => seen.some((d, i) => runs[i].kind === kind && d?.host === 'c' && d.steps.find((s) => s.id === 's2')?.status === 'running');
        return midway('chain') && midway('cloned') ? true : undefined;
      }, 120_000, 1000);
      await Promise.all([firstMessages, held]);
      workers.get('c')!.child.kill('SIGKILL');
      say(`killed host c for good, ${Date.now() - began} ms in`);
      await new Promise((r) => setTimeout(r, 1500));
      workers.get('b')!.child.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 1500));
      workers.set('b', await startCadreWorker([], root, env('b')));
      say(`killed host b and started it again, ${Date.now() - began} ms in`);
      await server!.restart();
      say(`restarted the server, ${Date.now() - began} ms in`);
      await send('again', 'second reply');

      // The long steps end: the gate opens in every workspace, and in every clone on a surviving host (those the moved runs make too).
      const openGates = () => {
        for (const run of runs) if (run.workspace) writeFileSync(path.join(run.workspace, GATE), '');
        for (const host of ['a', 'b']) {
          const clones = path.join(root, host, 'runs');
          if (existsSync(clones)) for (const clone of readdirSync(clones)) writeFileSync(path.join(clones, clone, GATE), '');
        }
      };
      // Every run ends completed, or waits for host c when only host c holds its workspace.
      const settled = (run: FleetRun, d: Diagnostics | undefined) =>
        d !== undefined &&
        (d.status === 'completed' ||
          d.status === 'failed' ||
          d.status === 'cancelled' ||
          (run.holder === 'c' && d.waiting.some((w) => w.kind === 'host' && w.prompt.includes('host c unreachable'))));
      const finals = await until('every run completed or waiting for host c', async () => {
        openGates();
        const seen = await Promise.all(runs.map((r) => diagnostics(r.id)));
        return seen.every((d, i) => settled(runs[i], d)) ? (seen as Diagnostics[]) : undefined;
      }, 240_000, 1000);
      const outcome = runs.map((run, i) => ({ id: run.id, kind: run.kind, holder: run.holder, status: finals[i].status, host: finals[i].host, waitsFor: finals[i].waiting.find((w) => w.kind === 'host')?.id }));
      const waiting = outcome.filter((o) => o.status !== 'completed');
      expect(waiting.filter((o) => o.holder !== 'c' || o.waitsFor === undefined)).toEqual([]);
      expect(waiting.length).toBeGreaterThan(0);
      const moved = finals.filter((d, i) => runs[i].kind === 'cloned' && d.hostMoves?.some((m) => m.from === 'c' && m.reason === 'lost'));
      expect(moved.length).toBeGreaterThan(0);
      for (const d of moved) expect(d).toMatchObject({ status: 'completed', host: expect.stringMatching(/^[ab]$/) });

      // No step completed on a surviving host ran again there.
      const histories = new Map<string, HistoryEvent[]>();
      for (const run of runs) for (const [id, events] of await runHistories(client.client, run.id)) histories.set(id, events);
      for (const { id } of sessions) histories.set(id, (await client.client.workflow.getHandle(id).fetchHistory()).events ?? []);
      let ranAgain = 0;
      const reruns: string[] = [];
      for (const [run, d] of runs.map((r, i) => [r, finals[i]] as const)) {
        if (run.kind !== 'chain' && run.kind !== 'cloned') continue;
        if (run.holder === 'c') continue; // its log is on the lost host's disk
        const log = run.kind === 'chain' ? readFileSync(path.join(run.workspace!, 'runs.log'), 'utf8') : git(origin, 'show', `${d.clone!.branch}:runs.log`);
        const report = rerunOnSurvivors(run.id, log, activityCompletions(histories.get(run.id)!));
        reruns.push(...report.reruns);
        ranAgain += report.ranAgain;
      }
      expect(reruns).toEqual([]);

      // Every history replays on today's code, and no workflow task failed.
      const replays: string[] = [];
      const sinks = auditSinks(tempWorkspace());
      const all = [...histories].map(([workflowId, events]) => ({ workflowId, history: { events } }));
      for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks }, all)) {
        if (result.error) replays.push(`${result.workflowId}: ${result.error.message}`);
      }
      expect(replays).toEqual([]);
      // No workflow task failed but by the server's own UnhandledCommand (failedTasks says why that one is none).
      expect([...histories].flatMap(([id, events]) => failedTasks(events).map((failed) => `${id}: ${failed}`))).toEqual([]);
      say(
        `${runs.length} plan runs: ${outcome.filter((o) => o.status === 'completed').length} completed, ${waiting.length} waiting for host c; ` +
          `${moved.length} cloned runs moved off host c; ${SESSIONS} sessions answered twice; completed steps run again 0, in flight at a kill and ran again ${ranAgain}; ` +
          `${histories.size} histories replayed; took ${Math.round((Date.now() - began) / 1000)} s`,
      );
    } finally {
      await client.close();
    }
  }, 10 * 60_000);
});
