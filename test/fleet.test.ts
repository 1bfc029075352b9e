/**
 * A fleet on one machine: `cadre worker` processes as hosts (CADRE_HOST), each polling the shared
 * task queue and a queue of its own; `cadre workers` lists them as Temporal sees them.
 */
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { HOST_LOST_AFTER_MS, hostState, listHosts } from '../src/client/hosts';
import { CadreClient } from '../src/client/client';
import { hostTaskQueue } from '../src/protocol/task-queue';
import { hostName } from '../src/worker/host-name';
import { runCadre, startCadreWorker, testServerEnv } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';
import { git } from './support/git-repo';
import { until } from './support/until';

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

  test('two workers as two hosts: each polls its own queue, and cadre workers lists both', async () => {
    const dir = tempWorkspace();
    const shared = uniqueId('fleet');
    const [alpha, beta] = [uniqueId('alpha'), uniqueId('beta')];
    const env = (host: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host });
    const workers = await Promise.all([startCadreWorker([], dir, env(alpha)), startCadreWorker([], dir, env(beta))]);
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    try {
      expect(workers[0].stderr()).toContain(`"host":"${alpha}","hostTaskQueue":"${shared}@${alpha}"`);
      const hosts = await listHosts(client.client, shared);
      expect(hosts.map((h) => [h.host, h.taskQueue, h.state, h.pollers, h.runs])).toEqual(
        [alpha, beta].sort().map((host) => [host, `${shared}@${host}`, 'up', { shared: 1, own: 1 }, 0]),
      );
      const listed = await runCadre(['workers', '--task-queue', shared], dir, testServerEnv());
      expect(listed.code).toBe(0);
      const lines = listed.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^HOST\s+STATE\s+OWN QUEUE\s+PROCESSES\s+OWN POLLERS\s+RUNS\s+LAST POLL OF OWN QUEUE$/);
      expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 6))).toEqual([alpha, beta].sort().map((host) => [host, 'up', `${shared}@${host}`, '1', '1', '0']));
      // Nothing polls a queue no worker was started on.
      expect(await runCadre(['workers', '--task-queue', uniqueId('nobody')], dir, testServerEnv())).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no worker polls task queue/) });
    } finally {
      await client.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
  });

  test('a worker with a host name that cannot be part of a queue does not start', async () => {
    const result = await runCadre(['worker'], tempWorkspace(), { ...testServerEnv(), CADRE_HOST: 'no spaces' });
    expect(result).toMatchObject({ code: 2, stderr: expect.stringContaining('CADRE_HOST must be 1-100 letters, digits') });
  });
});

/** Which worker started each activity of a run, by activity type: history records each start's identity. */
async function activityHosts(client: CadreClient, workflowId: string): Promise<[string, string][]> {
  const { events } = await client.client.workflow.getHandle(workflowId).fetchHistory();
  const types = new Map<string, string>();
  const hosts: [string, string][] = [];
  for (const event of events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) types.set(String(event.eventId), scheduled.activityType?.name ?? '?');
    const started = event.activityTaskStartedEventAttributes;
    if (started) hosts.push([types.get(String(started.scheduledEventId)) ?? '?', (started.identity ?? '').replace(/^\d+@/, '')]);
  }
  return hosts;
}

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
  test('two hosts with their own workspace roots: each run is bound to the host that holds its workspace, and every activity of it runs there', async () => {
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
        expect(agent.map(([type]) => type).sort()).toEqual(['agentToolset', 'modelTurn', 'modelTurn', 'runTool']);
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

  test('a workspace no host holds fails the run before any step, naming the workspace and the host', async () => {
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
    } finally {
      await worker.stop();
    }
  });
});

