/**
 * A fleet on one machine: `cadre worker` processes as hosts (CADRE_HOST), each polling the shared
 * task queue and a queue of its own; `cadre workers` lists them as Temporal sees them.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { pruneClones } from '../src/activities/clone-prune';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { auditSinks } from '../src/worker/audit-log';
import path from 'node:path';
import { listHosts } from '../src/client/hosts';
import { HOST_LOST_AFTER_MS, hostState } from '../src/protocol/host-liveness';
import { CadreClient } from '../src/client/client';
import { hostTaskQueue } from '../src/protocol/task-queue';
import { hostName } from '../src/worker/host-name';
import { runCadre, startCadreWorker, testServerEnv } from './support/cli';
import { compile, startPlan, tempWorkspace, uniqueId, waitUntil, withWorker } from './support/harness';
import YAML from 'yaml';
import { validatePlan } from '../src/plan-format/validate';
import { git, tempRepository } from './support/git-repo';
import { until } from './support/until';
import { startMcpHttpServer } from './support/mcp-http';
import { temporal } from '@temporalio/proto';
import { endSession, sendMessage, sessionDiagnostics, sessionInput } from '../src/client/sessions';

describe('hosts', () => {
  test('a host is named by CADRE_HOST, else the machine; a name that cannot be part of a queue is refused', () => {
    expect(hostName({ CADRE_HOST: 'build-1.eu' })).toBe('build-1.eu');
    expect(hostName({})).toMatch(/^[A-Za-z0-9]/);
    expect(() => hostName({ CADRE_HOST: 'a b' })).toThrow(/^CADRE_HOST must be 1-100 letters, digits/);
    expect(() => hostName({ CADRE_HOST: '-x' })).toThrow(/CADRE_HOST/);
    expect(hostTaskQueue('build-1', 'cadre')).toBe('cadre@build-1');
  });

  test('up while its own queue is polled, lost after two idle long polls without, shared-only with no queue of its own', () => {
    const now = 1_000_000;
    expect(hostState(1, now - 5_000, now)).toBe('up');
    expect(hostState(1, now - HOST_LOST_AFTER_MS - 1, now)).toBe('lost');
    expect(hostState(0, 0, now)).toBe('shared-only');
  });

  test('a worker with a host name that cannot be part of a queue, or a lost-after that is no duration, does not start', async () => {
    const result = await runCadre(['worker'], tempWorkspace(), { ...testServerEnv(), CADRE_HOST: 'no spaces' });
    expect(result).toMatchObject({ code: 2, stderr: expect.stringContaining('CADRE_HOST must be 1-100 letters, digits') });
    const late = await runCadre(['worker'], tempWorkspace(), { ...testServerEnv(), CADRE_HOST: 'fine', CADRE_HOST_LOST_AFTER: 'soon' });
    expect(late).toMatchObject({ code: 2, stderr: expect.stringContaining('CADRE_HOST_LOST_AFTER must be a duration of at least 1s, like 60s or 5m (got "soon")') });
  });
});

/**
 * Which worker started (or completed) each activity of a run, by activity type: history records
 * each one's identity. A given-up attempt's start may be on another worker than its completion.
 */
async function activityHosts(client: CadreClient, workflowId: string, by: 'started' | 'completed' = 'started'): Promise<[string, string][]> {
  const { events } = await client.client.workflow.getHandle(workflowId).fetchHistory();
  const types = new Map<string, string>();
  const hosts: [string, string][] = [];
  for (const event of events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) types.set(String(event.eventId), scheduled.activityType?.name ?? '?');
    const done = by === 'started' ? event.activityTaskStartedEventAttributes : event.activityTaskCompletedEventAttributes;
    if (done) hosts.push([types.get(String(done.scheduledEventId)) ?? '?', (done.identity ?? '').replace(/^\d+@/, '')]);
  }
  return hosts;
}

const activitiesCompleted = (client: CadreClient, workflowId: string) => activityHosts(client, workflowId, 'completed');

/** Each run its own worktree task: two runs of one plan and task in one repository would share a worktree. */
const FLEET_PLAN = (workspace: string, task: string) => `name: fleet
workspace: ${workspace}
steps:
  - { id: where, tool: shell, with: { command: "pwd" } }
  - { id: note, dependsOn: [where], tool: fs.write, with: { path: note.txt, content: "written on the host that holds me" } }
  - { id: edit, dependsOn: [note], worktree: { repo: ${workspace}, task: ${task} }, tool: shell, with: { command: "echo changed > app.txt" } }
  - { id: save, dependsOn: [edit], worktree: { repo: ${workspace}, task: ${task} }, tool: git.commit, with: { message: "on its host", all: true } }
  - id: agent
    dependsOn: [save]
    agent: { prompt: "Write agent.txt.", model: "scripted:${workspace}/agent-script.yaml", tools: [fs.write], maxTurns: 3 }
`;

/** The agent step's offline model: one write, then its answer. */
const AGENT_SCRIPT = `turns:
  - reply: { toolCalls: [{ name: fs_write, args: { path: agent.txt, content: "by the agent" } }] }
  - reply: { text: "wrote agent.txt" }
`;

describe('workspace affinity', () => {
  test('two hosts with their own workspace roots: cadre workers lists both; each run is bound to the host that holds its workspace, and every activity of it runs there', async () => {
    const root = realpathSync(tempWorkspace());
    const shared = uniqueId('affinity');
    const [alpha, beta] = [uniqueId('alpha'), uniqueId('beta')];
    const roots = { [alpha]: path.join(root, 'alpha'), [beta]: path.join(root, 'beta') };
    const repos = Object.fromEntries(
      Object.entries(roots).map(([host, dir]) => {
        const repo = path.join(dir, 'repo');
        mkdirSync(repo, { recursive: true });
        git(repo, 'init', '--quiet', '--initial-branch=main');
        writeFileSync(path.join(repo, 'app.txt'), 'first\n');
        writeFileSync(path.join(repo, 'agent-script.yaml'), AGENT_SCRIPT);
        git(repo, 'add', '.');
        git(repo, 'commit', '--quiet', '-m', 'first');
        return [host, repo];
      }),
    );
    const env = (host: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: roots[host] });
    const workers = await Promise.all([startCadreWorker([], root, env(alpha)), startCadreWorker([], root, env(beta))]);
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    try {
      // Each polls the shared queue and its own, as Temporal sees it.
      expect(workers[0].stderr()).toContain(`"host":"${alpha}","hostTaskQueue":"${shared}@${alpha}"`);
      const hosts = await listHosts(client.client, shared);
      expect(hosts.map((h) => [h.host, h.taskQueue, h.state, h.pollers, h.runs])).toEqual(
        [alpha, beta].sort().map((host) => [host, `${shared}@${host}`, 'up', { shared: 1, own: 1 }, 0]),
      );
      const listed = await runCadre(['workers', '--task-queue', shared], root, testServerEnv());
      expect(listed.code).toBe(0);
      const lines = listed.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^HOST\s+STATE\s+OWN QUEUE\s+PROCESSES\s+OWN POLLERS\s+RUNS\s+LAST POLL OF OWN QUEUE$/);
      expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 6))).toEqual([alpha, beta].sort().map((host) => [host, 'up', `${shared}@${host}`, '1', '1', '0']));
      // Nothing polls a queue no worker was started on.
      expect(await runCadre(['workers', '--task-queue', uniqueId('nobody')], root, testServerEnv())).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no worker polls task queue/) });
      const runs = await Promise.all(
        [alpha, beta, alpha, beta].map(async (host, i) => {
          const id = uniqueId(`fleet-${i}`);
          writeFileSync(path.join(root, `run-${i}.yaml`), FLEET_PLAN(repos[host], `t${i}`));
          const result = await runCadre(['run', `run-${i}.yaml`, '--id', id, '--wait', '--task-queue', shared], root, testServerEnv());
          if (result.code !== 0) throw new Error(`cadre run run-${i}.yaml on ${host}: ${result.stdout}${result.stderr}`);
          return { host, id, task: `t${i}` };
        }),
      );
      for (const { host, id } of runs) {
        const d = await client.diagnostics(id);
        expect(d).toMatchObject({ status: 'completed', host });
        const started = await activityHosts(client, id);
        // The shell and fs steps, the worktree made and removed, the commit, and the question of where: all on the host.
        expect(started.map(([type]) => type).sort()).toEqual(expect.arrayContaining(['createWorktree', 'removeWorktree', 'runTool']));
        expect(started.filter(([, on]) => on !== host)).toEqual([]);
        // The agent's model turns, its toolset and its tool call too (they read the workspace's blob store and files).
        const agent = await activityHosts(client, `${id}/agent`);
        expect(agent.map(([type]) => type).sort()).toEqual(['agentToolset', 'modelTurnChained', 'modelTurnChained', 'runTool']);
        expect(agent.filter(([, on]) => on !== host)).toEqual([]);
        expect((await client.client.workflow.getHandle(id).describe()).searchAttributes.CadreHost).toEqual([host]);
      }
      // The work is where the host keeps it: the agent's file in its workspace, the commit on the worktree's branch.
      for (const { host, task } of runs) {
        expect(readFileSync(path.join(repos[host], 'agent.txt'), 'utf8')).toBe('by the agent');
        expect(git(repos[host], 'log', '--format=%s', '-1', `cadre/fleet/${task}`)).toBe('on its host');
      }
      const status = await runCadre(['status', runs[0].id], root, testServerEnv());
      expect(status.stdout).toContain(`on host ${alpha} (its workspace's activities run there)`);
      // A run that waits is counted on its host by cadre workers (the CadreHost search attribute).
      writeFileSync(path.join(root, 'wait.yaml'), `name: waits\nworkspace: ${repos[alpha]}\nsteps:\n  - { id: hold, ask: { question: "Go?", choices: [yes] } }\n`);
      const waiting = uniqueId('fleet-wait');
      expect(await runCadre(['run', 'wait.yaml', '--id', waiting, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
      const counted = await until('the waiting run counted on its host', async () => {
        const hosts = await listHosts(client.client, shared);
        return hosts.find((h) => h.host === alpha)?.runs === 1 ? hosts : undefined;
      });
      expect(counted.map((h) => [h.host, h.runs])).toEqual([alpha, beta].sort().map((h) => [h, h === alpha ? 1 : 0]));
      await client.answer(waiting, 'hold', 'yes');
    } finally {
      await client.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
  });

  test('a workspace no host holds fails the run before any step, naming the workspace and the host; a session with tools answers its message with why', async () => {
    const root = realpathSync(tempWorkspace());
    const shared = uniqueId('nowhere');
    const host = uniqueId('solo');
    mkdirSync(path.join(root, 'mine'));
    writeFileSync(path.join(root, 'plan.yaml'), `name: nowhere\nworkspace: ${root}\nsteps:\n  - { id: a, tool: shell, with: { command: "echo a" } }\n`);
    const worker = await startCadreWorker([], root, { ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: path.join(root, 'mine') });
    try {
      const result = await runCadre(['run', 'plan.yaml', '--wait', '--json', '--task-queue', shared], root, testServerEnv());
      expect(result.code).toBe(1);
      const d = JSON.parse(result.stdout) as { status: string; reason: string; steps: { status: string }[] };
      expect(d.status).toBe('failed');
      expect(d.reason).toBe(`workspace ${root} is on no host of the fleet: workspace ${root} is not on host ${host} (its workspaces are under ${path.join(root, 'mine')}), the only host polling`);
      expect(d.steps.map((s) => s.status)).toEqual(['pending']);
      const session = await runCadre(['send', uniqueId('nowhere-session'), 'hello', '--tools', 'shell'], root, { ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_MODEL: 'scripted:none.yaml' });
      expect(session).toMatchObject({ code: 1, stderr: expect.stringContaining(`workspace ${root} is on no host of the fleet: workspace ${root} is not on host ${host}`) });
    } finally {
      await worker.stop();
    }
  });
});

/** A run whose host goes away mid-run: a step running, an ask, an agent whose tool call waits for approval, and a step after the ask. */
const LOST_PLAN = (workspace: string) => `name: lost-host
workspace: ${workspace}
steps:
  - { id: slow, tool: shell, with: { command: "sleep 8 && echo slept" } }
  - { id: hold, ask: { question: "Go on?", choices: [yes] } }
  - { id: after, dependsOn: [hold], tool: shell, with: { command: "pwd" } }
  - id: agent
    agent: { prompt: "Write agent.txt.", model: "scripted:${workspace}/agent-script.yaml", tools: [fs.write], approvals: { fs.write: ask }, maxTurns: 3 }
  - id: loop
    dependsOn: [hold]
    forEach: [${Array.from({ length: 1001 }, (_, n) => n).join(', ')}]
    as: n
    concurrency: 50
    tool: fs.write
    with: { path: "items/{{ n }}.txt", content: "{{ n }}" }
`;

describe('a host that goes away', () => {
  test('a path workspace waits for its lost host, naming it (for the run, its agent and its forEach chunks), and cadre move gives up on it for a host that holds the workspace', async () => {
    const root = realpathSync(tempWorkspace());
    const shared = uniqueId('lost');
    const [alpha, beta, gamma] = [uniqueId('alpha'), uniqueId('beta'), uniqueId('gamma')];
    const [alphaRoot, betaRoot] = [path.join(root, 'alpha'), path.join(root, 'beta')];
    const repo = path.join(alphaRoot, 'repo');
    mkdirSync(repo, { recursive: true });
    mkdirSync(betaRoot);
    writeFileSync(path.join(repo, 'agent-script.yaml'), AGENT_SCRIPT);
    writeFileSync(path.join(root, 'lost.yaml'), LOST_PLAN(repo));
    // Lost after 3 s without a poll (the binding records alpha's setting, for the run and its agent).
    const env = (host: string, workspaces: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: workspaces, CADRE_HOST_LOST_AFTER: '3s' });
    const [first, second] = await Promise.all([startCadreWorker([], root, env(alpha, alphaRoot)), startCadreWorker([], root, env(beta, betaRoot))]);
    const workers = [first, second];
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const id = uniqueId('lost-run');
    try {
      expect(await runCadre(['run', 'lost.yaml', '--id', id, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
      const streamed = (async () => {
        const events = [];
        for await (const e of client.events(id)) if (e.type === 'host_unreachable') events.push([e.waitId, e.prompt]);
        return events;
      })();
      // Awaited below; when the test fails first, closing the client ends it without a stray rejection.
      streamed.catch(() => undefined);
      const asked = await until('the ask and the approval waiting', async () => {
        const d = await client.diagnostics(id);
        return d.waiting.length === 2 ? d : undefined;
      });
      expect(asked.host).toBe(alpha);
      expect(asked.steps.find((s) => s.id === 'slow')?.status).toBe('running');
      // The host dies for good mid-step, while both wait: the step's next attempt and what they do next have to run on it.
      first.child.kill('SIGKILL');
      await first.stop();
      await client.answer(id, 'hold', 'yes');
      await client.approve(id, asked.waiting.find((w) => w.kind === 'approval')!.id);
      // The run's next step, its agent and the forEach's two chunks (child workflows: they tell the run) each find alpha gone.
      const hostWaits = [`agent/host:${alpha}`, `host:${alpha}`, `loop[0-999]/host:${alpha}`, `loop[1000-1000]/host:${alpha}`];
      // Until the server gives up on the dead host's sticky queue, the run's query can wait there unanswered: waitUntil asks again.
      const lost = await waitUntil({ client, taskQueue: shared }, id, (d) => d.waiting.filter((w) => w.kind === 'host').length === 4);
      expect(lost.status).toBe('waiting');
      expect(lost.waiting.map((w) => [w.id, w.prompt]).sort()).toEqual(hostWaits.map((waitId) => [waitId, expect.stringContaining(`host ${alpha} unreachable`)]));
      expect(lost.steps.find((s) => s.id === 'loop')?.status).toBe('waiting');
      const listed = await runCadre(['list', '--status', 'waiting', '--json'], root, testServerEnv());
      expect(JSON.parse(listed.stdout).map((r: { workflowId: string }) => r.workflowId)).toContain(id);
      expect((await runCadre(['status', id], root, testServerEnv())).stdout).toContain(`cadre move ${id} --to <host>`);
      // No answer ends it, and a host without the workspace cannot take it.
      const answered = await runCadre(['answer', id, `host:${alpha}`, 'yes'], root, testServerEnv());
      expect(answered).toMatchObject({ code: 1, stderr: expect.stringContaining('it takes no answer') });
      const refused = await runCadre(['move', id, '--to', beta], root, testServerEnv());
      expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining(`host ${beta} cannot take the run: workspace ${repo} is not on host ${beta}`) });
      // A host that holds the same folder (its disk restored elsewhere) takes the run and its agent.
      workers.push(await startCadreWorker([], root, env(gamma, alphaRoot)));
      const moved = await runCadre(['move', id, '--to', gamma, '--json'], root, testServerEnv());
      expect(JSON.parse(moved.stdout)).toEqual({ workflowId: id, from: alpha, to: gamma, agents: 1, chunks: 2 });
      const done = await waitUntil({ client, taskQueue: shared }, id, (d) => d.status === 'completed' || d.status === 'failed');
      expect(done).toMatchObject({ status: 'completed', host: gamma, hostMoves: [{ from: alpha, to: gamma }], waiting: [] });
      expect(readFileSync(path.join(repo, 'agent.txt'), 'utf8')).toBe('by the agent');
      expect(readdirSync(path.join(repo, 'items'))).toHaveLength(1001);
      // The run's stream said it, for itself, its agent and its chunks.
      expect((await streamed).sort()).toEqual(hostWaits.map((waitId) => [waitId, expect.stringContaining(`host ${alpha} unreachable`)]));
      // What waited for alpha ran on gamma: the step alpha died in (again), the step after the ask, and the agent's approved call and last turn.
      // Moving never failed a workflow task (an activity scheduled again takes an id of its own).
      const { events } = await client.client.workflow.getHandle(id).fetchHistory();
      expect((events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes?.failure?.message)).toEqual([]);
      const ran = (await activitiesCompleted(client, id)).filter(([type]) => type === 'runTool');
      expect(ran).toEqual([['runTool', gamma], ['runTool', gamma]]);
      expect(done.steps.map((s) => [s.id, s.status])).toEqual([['slow', 'completed'], ['hold', 'completed'], ['after', 'completed'], ['agent', 'completed'], ['loop', 'completed']]);
      const agent = await activitiesCompleted(client, `${id}/agent`);
      expect(agent.slice(-2)).toEqual([['runTool', gamma], ['modelTurnChained', gamma]]);
      // Every item was written on gamma: alpha was dead before the chunks started (whether it polls, any host answers).
      for (const chunk of [`${id}/loop/0`, `${id}/loop/1`]) {
        const items = await activitiesCompleted(client, chunk);
        expect(items.filter(([type]) => type === 'runTool').length).toBe(chunk.endsWith('/0') ? 1000 : 1);
        expect(items.filter(([type, on]) => type !== 'hostPolling' && on !== gamma)).toEqual([]);
      }
      expect((await client.client.workflow.getHandle(id).describe()).searchAttributes.CadreHost).toEqual([gamma]);
      // Both histories replay; the first recording is kept under test/histories for replay.test.ts.
      for (const [workflowId, name] of [[id, 'run-plan-host-moved'], [`${id}/agent`, 'agent-task-host-moved']]) {
        const history = await client.client.workflow.getHandle(workflowId).fetchHistory();
        await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, workflowId);
        const file = path.join(__dirname, 'histories', `${name}.json`);
        if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
      }
    } finally {
      await client.close();
      await Promise.all(workers.slice(1).map((w) => w.stop()));
    }
  });
});

/** Local steps (fs.*) around a wait: the run is bound while its host polls alone, and another joins during the wait. */
const JOINED_PLAN = (workspace: string) => `name: joined
workspace: ${workspace}
steps:
  - { id: first, tool: fs.write, with: { path: first.txt, content: "one" } }
  - { id: hold, dependsOn: [first], ask: { question: "Go on?", choices: [yes] } }
  - { id: second, dependsOn: [hold], tool: fs.write, with: { path: second.txt, content: "two" } }
`;

describe('a host that joins later', () => {
  test("a run bound to a lone host runs its local steps there; when a host that joined later runs its workflow task, they go to the host's queue", async () => {
    const root = realpathSync(tempWorkspace());
    const shared = uniqueId('joined');
    const [alpha, beta] = [uniqueId('alpha'), uniqueId('beta')];
    const [alphaRoot, betaRoot] = [path.join(root, 'alpha'), path.join(root, 'beta')];
    const repo = path.join(alphaRoot, 'repo');
    mkdirSync(repo, { recursive: true });
    mkdirSync(betaRoot);
    writeFileSync(path.join(root, 'joined.yaml'), JOINED_PLAN(repo));
    const env = (host: string, workspaces: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: workspaces, CADRE_HOST_LOST_AFTER: '3s' });
    const workers = [await startCadreWorker([], root, env(alpha, alphaRoot))];
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const id = uniqueId('joined-run');
    try {
      expect(await runCadre(['run', 'joined.yaml', '--id', id, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
      await until('the run waiting for its answer', async () => ((await client.diagnostics(id)).waiting.length === 1 ? true : undefined));
      // Bound while alpha polled alone: its first step ran as a local activity, so no activity of it is in history.
      expect(await client.diagnostics(id)).toMatchObject({ host: alpha });
      expect((await activitiesCompleted(client, id)).filter(([type]) => type === 'runTool')).toEqual([]);
      // Beta joins and alpha stops: the run's next workflow task is beta's, and so would be its local activity.
      workers.push(await startCadreWorker([], root, env(beta, betaRoot)));
      await workers[0].stop();
      await client.answer(id, 'hold', 'yes');
      const waiting = await until('the step waiting for alpha', async () => {
        const d = await client.diagnostics(id);
        return d.waiting.some((w) => w.kind === 'host') ? d : undefined;
      }, 60_000);
      expect(waiting.waiting.map((w) => w.id)).toEqual([`host:${alpha}`]);
      workers.push(await startCadreWorker([], root, env(alpha, alphaRoot)));
      const done = await until('the run completed', async () => {
        const d = await client.diagnostics(id);
        return d.status === 'completed' || d.status === 'failed' ? d : undefined;
      }, 60_000);
      expect(done).toMatchObject({ status: 'completed', host: alpha, waiting: [] });
      expect(readFileSync(path.join(repo, 'second.txt'), 'utf8')).toBe('two');
      // The second step ran on alpha, as an activity on its queue, after beta's worker refused it.
      expect((await activitiesCompleted(client, id)).filter(([type]) => type === 'runTool')).toEqual([['runTool', alpha]]);
      const { events } = await client.client.workflow.getHandle(id).fetchHistory();
      const refused = (events ?? []).filter((e) => e.markerRecordedEventAttributes?.failure?.applicationFailureInfo?.type === 'NotOnHost');
      expect(refused).toHaveLength(1);
      expect((events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
    } finally {
      await client.close();
      await Promise.all(workers.slice(1).map((w) => w.stop()));
    }
  });
});

/** A session's offline model: a command for each message, then its reply. */
const SESSION_SCRIPT = `turns:
  - reply: { toolCalls: [{ name: shell, args: { command: "echo one > first.txt" } }] }
  - reply: { text: "one" }
  - reply: { toolCalls: [{ name: shell, args: { command: "echo two > second.txt" } }] }
  - reply: { text: "two" }
`;

describe('a session in a fleet', () => {
  test('a session with tools is bound to the host that holds its workspace; when that host dies its next message waits, naming it, until cadre move', async () => {
    const root = realpathSync(tempWorkspace());
    const shared = uniqueId('session');
    const [alpha, beta, gamma] = [uniqueId('alpha'), uniqueId('beta'), uniqueId('gamma')];
    const [alphaRoot, betaRoot] = [path.join(root, 'alpha'), path.join(root, 'beta')];
    const repo = path.join(alphaRoot, 'repo');
    mkdirSync(repo, { recursive: true });
    mkdirSync(betaRoot);
    writeFileSync(path.join(repo, 'session-script.yaml'), SESSION_SCRIPT);
    const env = (host: string, workspaces: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: workspaces, CADRE_HOST_LOST_AFTER: '3s' });
    const [first, second] = await Promise.all([startCadreWorker([], root, env(alpha, alphaRoot)), startCadreWorker([], root, env(beta, betaRoot))]);
    const workers = [first, second];
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const id = uniqueId('fleet-session');
    const start = sessionInput({ tools: ['shell'], workspace: repo, model: `scripted:${path.join(repo, 'session-script.yaml')}` });
    try {
      expect(await sendMessage(client, id, 'write the first file', start, { taskQueue: shared })).toMatchObject({ reply: 'one' });
      expect(await sessionDiagnostics(client, id)).toMatchObject({ host: alpha, waiting: [] });
      // Its model turn and its command ran on alpha, while beta polled too (whether a host holds the workspace, any host answers).
      const ran = await activitiesCompleted(client, id);
      expect(ran.map(([type]) => type)).toEqual(expect.arrayContaining(['modelTurnChained', 'runTool']));
      expect(ran.filter(([type, on]) => type !== 'locateWorkspace' && on !== alpha)).toEqual([]);
      expect((await client.client.workflow.getHandle(id).describe()).searchAttributes.CadreHost).toEqual([alpha]);

      first.child.kill('SIGKILL');
      await first.stop();
      const reply = sendMessage(client, id, 'write the second file', start, { taskQueue: shared });
      const lost = await until('the session waiting for its host', async () => {
        const d = await sessionDiagnostics(client, id);
        return d.waiting.length > 0 ? d : undefined;
      }, 60_000);
      expect(lost.waiting).toEqual([expect.objectContaining({ id: `session/host:${alpha}`, kind: 'host', prompt: expect.stringContaining(`host ${alpha} unreachable`) })]);
      const refused = await runCadre(['move', id, '--to', beta], root, testServerEnv());
      expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining(`host ${beta} cannot take the run: workspace ${repo} is not on host ${beta}`) });
      workers.push(await startCadreWorker([], root, env(gamma, alphaRoot)));
      const moved = await runCadre(['move', id, '--to', gamma], root, testServerEnv());
      expect(moved).toMatchObject({ code: 0, stdout: `moved ${id} from host ${alpha} to host ${gamma}\n` });
      expect(await reply).toMatchObject({ reply: 'two' });
      expect(readFileSync(path.join(repo, 'second.txt'), 'utf8')).toBe('two\n');
      expect(await sessionDiagnostics(client, id)).toMatchObject({ host: gamma, hostMoves: [{ from: alpha, to: gamma }], waiting: [] });
      const after = (await activitiesCompleted(client, id)).slice(ran.length);
      expect(after.filter(([type, on]) => type !== 'hostPolling' && on !== gamma)).toEqual([]);
      await endSession(client, id);
      const history = await client.client.workflow.getHandle(id).fetchHistory();
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, id);
      const file = path.join(__dirname, 'histories', 'session-host-moved.json');
      if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
    } finally {
      await client.close();
      await Promise.all(workers.slice(1).map((w) => w.stop()));
    }
  });
});

/**
 * A workspace any host can clone. The step the host dies in is an agent's, which dies as it lists
 * its tools (an MCP server holds the listing): only the agent's own activities find the host gone,
 * and the run has to hear it from it.
 */
const CLONED_PLAN = (origin: string, script: string) => `name: cloned
workspace: { repo: ${origin}, ref: main }
steps:
  - { id: first, tool: fs.write, with: { path: first.txt, content: "one" } }
  - { id: branch, dependsOn: [first], worktree: { repo: ".", task: feature }, tool: shell, with: { command: "echo branched > wt.txt" } }
  - id: slow
    dependsOn: [branch]
    agent: { prompt: "Sleep, then write slow.txt.", model: "scripted:${script}", tools: [shell, "mcp:gate/*"], maxTurns: 3 }
  - { id: branch-more, dependsOn: [slow], worktree: { repo: ".", task: feature }, tool: shell, with: { command: "cat wt.txt first.txt > wt2.txt" } }
  - { id: last, dependsOn: [branch-more], tool: shell, with: { command: "cat first.txt slow.txt app.txt > last.txt" } }
`;

const SLEEPY_AGENT = `turns:
  - reply: { toolCalls: [{ name: shell, args: { command: "sleep 6 && echo slept > slow.txt" } }] }
  - reply: { text: "slept" }
`;

describe('a workspace cloned from a repository', () => {
  test('the plan names a repository (a URL as it is, a path resolved) and a branch; what cannot be cloned is refused', () => {
    const issues = (workspace: string, steps = '  - { id: a, tool: shell, with: { command: pwd } }\n') => {
      const result = validatePlan(YAML.parse(`name: p\nworkspace: ${workspace}\nsteps:\n${steps}`), { baseDir: '/plans' });
      return result.ok ? result.plan : result.issues.map((i) => `${i.path}: ${i.message}`);
    };
    expect(issues('{ repo: https://example.com/app.git, ref: release/1.2 }')).toMatchObject({ workspace: '', source: { repo: 'https://example.com/app.git', ref: 'release/1.2' } });
    expect(issues('{ repo: git@example.com:app.git }')).toMatchObject({ source: { repo: 'git@example.com:app.git' } });
    expect(issues('{ repo: ../app }')).toMatchObject({ source: { repo: '/app' } });
    expect(issues('{ repo: "--upload-pack=touch /tmp/x" }')).toEqual(['workspace.repo: a workspace repo is a URL or a path, not an option, with no control characters']);
    expect(issues('{ repo: ../app, ref: "main..x" }')).toEqual([expect.stringMatching(/^workspace\.ref: a workspace ref is a branch name/)]);
    expect(issues('{ repo: ../app, ref: -x }')).toEqual([expect.stringMatching(/^workspace\.ref: a workspace ref is a branch name/)]);
    // A worktree is one of the clone, made again from its pushed branch wherever the run goes; another repository is on one disk.
    expect(issues('{ repo: ../app }', '  - { id: a, worktree: { repo: . }, tool: git.status }\n')).toMatchObject({ steps: [{ worktree: { repo: '.', task: 'a' } }] });
    expect(issues('{ repo: ../app }', '  - { id: a, worktree: { repo: ../other }, tool: git.status }\n')).toEqual([
      'steps[0].worktree.repo: in a workspace cloned from a repository (workspace: { repo }), a worktree is one of the clone: give repo: "."',
    ]);
    // In a path workspace, `.` is where the plan is, as ever.
    expect(issues('../app', '  - { id: a, worktree: { repo: . }, tool: git.status }\n')).toMatchObject({ steps: [{ worktree: { repo: '/plans' } }] });
  });

  test('with no fleet, the worker clones it, the steps run in the clone, and their work is on the run\'s branch', async () => {
    const { home, repo } = tempRepository();
    const before = process.env.CADRE_WORKSPACES;
    process.env.CADRE_WORKSPACES = path.join(home, 'workspaces');
    try {
      await withWorker(async (h) => {
        const plan = compile(`name: one-machine\nworkspace: { repo: ./repo }\nsteps:\n  - { id: edit, tool: shell, with: { command: "echo line 4 >> app.txt && pwd" } }\n`, home);
        const id = await startPlan(h, plan);
        const done = await waitUntil(h, id, (d) => d.status !== 'running');
        expect(done).toMatchObject({ status: 'completed', clone: { repo, branch: expect.stringMatching(/^cadre\/run\/one-machine-/) } });
        expect(done.host).toBeUndefined();
        expect(done.clone!.path.startsWith(path.join(home, 'workspaces', 'runs'))).toBe(true);
        expect(done.clone).toMatchObject({ removed: true });
        expect(existsSync(done.clone!.path)).toBe(false);
        expect(git(repo, 'show', `${done.clone!.branch}:app.txt`)).toBe('line 1\nline 2\nline 3\nline 4');
        // The repository's own branch is untouched.
        expect(readFileSync(path.join(repo, 'app.txt'), 'utf8')).toBe('line 1\nline 2\nline 3\n');
        // A failed run's clone stays to look at; pruning keeps it while it holds work never pushed, and removes it after.
        const failing = compile(`name: one-machine-fails\nworkspace: { repo: ./repo }\nsteps:\n  - { id: half, retry: { maximumAttempts: 1 }, tool: shell, with: { command: "echo half > half.txt; exit 3" } }\n`, home);
        const failed = await waitUntil(h, await startPlan(h, failing), (d) => d.status !== 'running');
        expect(failed).toMatchObject({ status: 'failed', clone: { path: expect.any(String) } });
        expect(failed.clone!.removed).toBeUndefined();
        const ended = async () => ({ open: false });
        expect((await pruneClones(undefined, ended)).kept).toEqual([{ path: failed.clone!.path, why: expect.stringMatching(/^holds work never pushed \(run one-machine-fails-.* ended without it\)$/) }]);
        rmSync(path.join(failed.clone!.path, 'half.txt'));
        expect(await pruneClones(undefined, ended)).toEqual({ removed: [failed.clone!.path], kept: [] });
      });
    } finally {
      if (before === undefined) delete process.env.CADRE_WORKSPACES;
      else process.env.CADRE_WORKSPACES = before;
    }
  });

  test("any host clones it; each step's work is pushed; when its host is lost the run moves itself, and only the step whose work was not pushed runs again", async () => {
    const root = realpathSync(tempWorkspace());
    const { repo } = tempRepository();
    const origin = path.join(root, 'origin.git');
    git(root, 'clone', '--quiet', '--bare', repo, origin);
    const shared = uniqueId('cloned');
    const hosts = [uniqueId('alpha'), uniqueId('beta')];
    writeFileSync(path.join(root, 'agent-script.yaml'), SLEEPY_AGENT);
    writeFileSync(path.join(root, 'cloned.yaml'), CLONED_PLAN(origin, path.join(root, 'agent-script.yaml')));
    // The agent's MCP server answers no one until the host is gone.
    let release = () => undefined as void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const gate = await startMcpHttpServer((mcp) => mcp.registerTool('noop', { description: 'Does nothing.' }, async () => ({ content: [] })), () => released.then(() => false));
    writeFileSync(path.join(root, 'cadre.config.yaml'), `mcp: { servers: { gate: { url: "${gate.url}" } } }\n`);
    const env = (host: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: path.join(root, host), CADRE_HOST_LOST_AFTER: '3s' });
    const workers = await Promise.all(hosts.map((host) => startCadreWorker([], root, env(host))));
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const id = uniqueId('cloned-run');
    try {
      expect(await runCadre(['run', 'cloned.yaml', '--id', id, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
      // The host dies while the agent lists its tools: that attempt heartbeats, so its loss is known in seconds, not at its start-to-close timeout.
      await until('the slow step listing its tools', async () => {
        const agent = await client.client.workflow.getHandle(`${id}/slow`).describe().catch(() => undefined);
        return agent?.raw.pendingActivities?.some((a) => a.activityType?.name === 'agentToolset' && a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED) || undefined;
      });
      const slow = await client.diagnostics(id);
      const [lost, other] = slow.host === hosts[0] ? hosts : [hosts[1], hosts[0]];
      expect(slow.clone).toMatchObject({ repo: origin, branch: expect.stringMatching(/^cadre\/run\/cloned-run-/), path: expect.stringContaining(path.join(root, lost, 'runs')) });
      // The first step's work is on the remote before the next step starts, and the worktree's on a branch of the run's.
      expect(git(origin, 'show', `${slow.clone!.branch}:first.txt`)).toBe('one');
      const feature = slow.clone!.branch.replace(/^cadre\/run\//, 'cadre/worktree/') + '/feature';
      expect(git(origin, 'show', `${feature}:wt.txt`)).toBe('branched');
      expect(slow.worktrees).toEqual([expect.objectContaining({ repo: '.', task: 'feature', state: 'active', path: expect.stringContaining(path.join(root, lost, 'worktrees')) })]);
      const dying = workers[hosts.indexOf(lost)];
      dying.child.kill('SIGKILL');
      await dying.stop();
      release();
      // Until the dead host's sticky task times out, the run's queries go to it and find no worker: waitUntil asks again.
      // A minute was short once in CI, beside the three-host fleet test.
      const done = await waitUntil({ client, taskQueue: shared }, id, (d) => d.status === 'completed' || d.status === 'failed', 120_000);
      expect(done).toMatchObject({ status: 'completed', host: other, hostMoves: [{ from: lost, to: other, reason: 'lost' }], waiting: [] });
      expect(done.clone?.path).toContain(path.join(root, other, 'runs'));
      expect(done.steps.map((s) => [s.id, s.status, s.note])).toEqual([
        ['first', 'completed', undefined],
        ['branch', 'completed', undefined],
        ['slow', 'completed', `ran again on host ${other}: host ${lost} was lost before the step's work was pushed`],
        ['branch-more', 'completed', undefined],
        ['last', 'completed', undefined],
      ]);
      // The worktree was made again on the other host from its push: the work before the move is in it, and what came after is pushed too.
      expect(git(origin, 'show', `${feature}:wt2.txt`)).toBe('branched\none');
      expect(git(origin, 'log', '--format=%s', feature).split('\n').slice(0, 2)).toEqual([`cadre: step branch-more of run ${id}`, `cadre: step branch of run ${id}`]);
      expect(done.worktrees).toEqual([expect.objectContaining({ task: 'feature', state: 'removed', path: expect.stringContaining(path.join(root, other, 'worktrees')) })]);
      // Every step's work is on the run's branch, the last push is what the run says, and the clone the run moved to has it.
      expect(git(origin, 'show', `${done.clone!.branch}:last.txt`)).toBe('oneslept\nline 1\nline 2\nline 3');
      expect(git(origin, 'rev-parse', done.clone!.branch)).toBe(done.clone!.commit);
      // The completed run's clone is gone; the lost host's stays on its disk.
      expect(done.clone).toMatchObject({ removed: true });
      expect(existsSync(done.clone!.path)).toBe(false);
      expect(readFileSync(path.join(slow.clone!.path, 'first.txt'), 'utf8')).toBe('one');
      // The lost host comes back: it removes its clone of the run, which went on elsewhere with all of that clone's work.
      const back = await startCadreWorker([], root, env(lost));
      workers.push(back);
      // A loaded machine (CI's five test files at once) has taken over 30 s to start a worker and prune.
      await until('the returning host pruned its clone', () => (back.stderr().includes('removed 1 clone(s) of runs that ended or moved on') ? true : undefined), 90_000);
      expect(existsSync(slow.clone!.path)).toBe(false);
      expect(readdirSync(path.join(root, lost, 'worktrees'))).toEqual([]);
      // The first steps ran once, on the lost host; what came after their push ran on the other host; no workflow task failed.
      const tools = (await activitiesCompleted(client, id)).filter(([type]) => ['runTool', 'checkpointWorkspace', 'createWorktree'].includes(type));
      const stepOn = (host: string, worktree = false) => [...(worktree ? [['createWorktree', host]] : []), ['runTool', host], ['checkpointWorkspace', host]];
      expect(tools).toEqual([...stepOn(lost), ...stepOn(lost, true), ['checkpointWorkspace', other], ...stepOn(other, true), ...stepOn(other)]);
      // The agent given up on was cancelled; the one that ran again did its work on the other host.
      expect(done.steps.find((s) => s.id === 'slow')?.agent).toMatchObject({ workflowId: `${id}/slow#2`, turns: 2, toolCalls: 1 });
      expect((await activitiesCompleted(client, `${id}/slow#2`)).filter(([type]) => type === 'runTool')).toEqual([['runTool', other]]);
      expect((await client.client.workflow.getHandle(`${id}/slow`).describe()).status.name).toBe('CANCELLED');
      // The attempt the host died under was given up on at its heartbeat timeout, not its start-to-close timeout's minute.
      const agentEvents = (await client.client.workflow.getHandle(`${id}/slow`).fetchHistory()).events ?? [];
      const listing = agentEvents.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'agentToolset');
      const listingEnd = agentEvents.find((e) => e.activityTaskTimedOutEventAttributes && Number(e.activityTaskTimedOutEventAttributes.scheduledEventId) === Number(listing?.eventId));
      expect(listingEnd?.activityTaskTimedOutEventAttributes?.failure?.cause?.timeoutFailureInfo?.timeoutType).toBe(temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT);
      const history = await client.client.workflow.getHandle(id).fetchHistory();
      expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
      const status = await runCadre(['status', id], root, testServerEnv());
      expect(status.stdout).toContain(`moved from host ${lost} to ${other}`);
      expect(status.stdout).toContain(`${lost} was lost; ${other} cloned the run's branch`);
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, id);
      const file = path.join(__dirname, 'histories', 'run-plan-clone-moved.json');
      if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
    } finally {
      release();
      await gate.close();
      await client.close();
      await Promise.all(workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null).map((w) => w.stop()));
    }
  }, 300_000);
});

/** A team in a workspace cloned from a repository: each worker in a worktree of the clone. */
const CLONED_TEAM_PLAN = (origin: string, root: string) => `name: cloned-team
workspace: { repo: ${origin}, ref: main }
team: {}
steps:
  - id: lead
    worktree: { repo: ".", task: lead }
    agent: { prompt: "Write lead.txt.", model: "scripted:${root}/lead-script.yaml", tools: [fs.write] }
  - id: dev
    dependsOn: [lead]
    worktree: { repo: ".", task: dev }
    agent: { prompt: "Sleep, then write dev.txt.", model: "scripted:${root}/dev-script.yaml", tools: [shell] }
`;

const LEAD_SCRIPT = `turns:
  - reply: { toolCalls: [{ name: fs_write, args: { path: lead.txt, content: "planned" } }] }
  - reply: { toolCalls: [{ name: signal_state, args: { state: completing, reason: planned, result: { ok: true } } }] }
`;

const DEV_SCRIPT = `turns:
  - reply: { toolCalls: [{ name: shell, args: { command: "sleep 4 && echo built > dev.txt" } }] }
  - reply: { toolCalls: [{ name: signal_state, args: { state: completing, reason: built, result: { ok: true } } }] }
`;

describe('a team in a workspace cloned from a repository', () => {
  test("each worker's work is pushed when it ends; when the host is lost, the run moves and only the worker whose work was not pushed runs again", async () => {
    const root = realpathSync(tempWorkspace());
    const { repo } = tempRepository();
    const origin = path.join(root, 'origin.git');
    git(root, 'clone', '--quiet', '--bare', repo, origin);
    const shared = uniqueId('cloned-team');
    const hosts = [uniqueId('alpha'), uniqueId('beta')];
    writeFileSync(path.join(root, 'lead-script.yaml'), LEAD_SCRIPT);
    writeFileSync(path.join(root, 'dev-script.yaml'), DEV_SCRIPT);
    writeFileSync(path.join(root, 'team.yaml'), CLONED_TEAM_PLAN(origin, root));
    const env = (host: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: path.join(root, host), CADRE_HOST_LOST_AFTER: '3s' });
    const workers = await Promise.all(hosts.map((host) => startCadreWorker([], root, env(host))));
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const id = uniqueId('cloned-team-run');
    try {
      expect(await runCadre(['run', 'team.yaml', '--id', id, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
      // Killed in the dev worker's 4 s command: its agent has started, and said it runs.
      const dev = await until('the dev worker running', async () => {
        const d = await client.diagnostics(id);
        return d.workers?.some((w) => w.step === 'dev' && w.state === 'running') ? d : undefined;
      });
      await new Promise((r) => setTimeout(r, 1500));
      const [lost, other] = dev.host === hosts[0] ? hosts : [hosts[1], hosts[0]];
      // The lead's work is on its task's branch at the remote before the dev worker starts.
      const branch = (task: string) => `${dev.clone!.branch.replace(/^cadre\/run\//, 'cadre/worktree/')}/${task}`;
      expect(git(origin, 'show', `${branch('lead')}:lead.txt`)).toBe('planned');
      const dying = workers[hosts.indexOf(lost)];
      dying.child.kill('SIGKILL');
      await dying.stop();
      const done = await waitUntil({ client, taskQueue: shared }, id, (d) => d.status === 'completed' || d.status === 'failed', 120_000);
      expect(done).toMatchObject({ status: 'completed', host: other, hostMoves: [{ from: lost, to: other, reason: 'lost' }], waiting: [] });
      expect(done.steps.map((s) => [s.id, s.status, s.note])).toEqual([
        ['lead', 'completed', undefined],
        ['dev', 'completed', `ran again on host ${other}: host ${lost} was lost before the step's work was pushed`],
      ]);
      expect(git(origin, 'show', `${branch('dev')}:dev.txt`)).toBe('built');
      // The lead ran once, on the lost host; the dev worker that ran again did its work on the other.
      expect((await activitiesCompleted(client, `${id}/lead`)).filter(([type]) => type === 'runTool')).toEqual([['runTool', lost]]);
      expect(done.steps.find((s) => s.id === 'dev')?.agent?.workflowId).toBe(`${id}/dev#2`);
      expect((await activitiesCompleted(client, `${id}/dev#2`)).filter(([type]) => type === 'runTool')).toEqual([['runTool', other]]);
      expect((await client.client.workflow.getHandle(`${id}/dev`).describe()).status.name).toBe('CANCELLED');
      expect(done.workers?.map((w) => [w.step, w.state]).sort()).toEqual([['dev', 'cancelled'], ['dev', 'completed'], ['lead', 'completed']]);
      const history = await client.client.workflow.getHandle(id).fetchHistory();
      expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, id);
    } finally {
      await client.close();
      await Promise.all(workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null).map((w) => w.stop()));
    }
  }, 300_000);
});

/** A forEach long enough to run in chunks, over a list big enough to be stored: 1,001 items of ~80 bytes. */
const CHUNKED_PLAN = (workspace: string) => `name: chunked
workspace: ${workspace}
steps:
  - { id: list, tool: shell, with: { command: "node -e \\"console.log(JSON.stringify(Array.from({ length: 1001 }, (_, n) => ({ n, pad: 'p'.repeat(64) }))))\\"" } }
  - id: loop
    forEach: "{{ steps.list.output.json }}"
    as: it
    concurrency: 50
    tool: fs.write
    with: { path: "items/{{ it.n }}.txt", content: "{{ it.pad }}" }
`;

describe('a fleet of hosts and the work a run hands to children', () => {
  test('a forEach in chunks and its stored list run on the host that holds the workspace, while another host polls', async () => {
    const root = realpathSync(tempWorkspace());
    const shared = uniqueId('chunks');
    const [alpha, beta] = [uniqueId('alpha'), uniqueId('beta')];
    const [alphaRoot, betaRoot] = [path.join(root, 'alpha'), path.join(root, 'beta')];
    const repo = path.join(alphaRoot, 'repo');
    mkdirSync(repo, { recursive: true });
    mkdirSync(betaRoot);
    writeFileSync(path.join(root, 'chunked.yaml'), CHUNKED_PLAN(repo));
    const env = (host: string, workspaces: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_WORKSPACES: workspaces });
    const workers = await Promise.all([startCadreWorker([], root, env(alpha, alphaRoot)), startCadreWorker([], root, env(beta, betaRoot))]);
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    try {
      const id = uniqueId('chunked');
      const result = await runCadre(['run', 'chunked.yaml', '--id', id, '--wait', '--task-queue', shared], root, testServerEnv());
      if (result.code !== 0) throw new Error(`cadre run chunked.yaml: ${result.stdout}${result.stderr}`);
      expect(await client.diagnostics(id)).toMatchObject({ status: 'completed', host: alpha });
      expect(readdirSync(path.join(repo, 'items'))).toHaveLength(1001);
      // The run's stored list was read on alpha, as an activity (another host polls: a local one could run on beta).
      const { events } = await client.client.workflow.getHandle(id).fetchHistory();
      const local = (events ?? [])
        .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
        .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data ?? []).toString()).activity_type);
      // (Run analytics go to whichever worker: they read no workspace.)
      expect(local.filter((type) => type !== 'recordRunAnalytics')).toEqual([]);
      expect((await activitiesCompleted(client, id)).filter(([, on]) => on !== alpha)).toEqual([]);
      // Both chunks' items, and their stored outputs, on alpha too.
      const chunks = (events ?? []).map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId).filter((w): w is string => typeof w === 'string');
      expect(chunks).toHaveLength(2);
      for (const chunk of chunks) {
        const done = await activitiesCompleted(client, chunk);
        expect(done.length).toBeGreaterThan(0);
        expect(done.filter(([, on]) => on !== alpha)).toEqual([]);
      }
    } finally {
      await client.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
  });
});
