/**
 * docker-compose.yml's production topology without Docker: the real Temporal server (the version of
 * its temporalio/auto-setup image, built with Go into ~/.cache/cadre/bin) on PostgreSQL from
 * Debian's packages, schemas set up by temporal-sql-tool, `cadre setup`, and two `cadre worker`
 * processes on one task queue. A plan fans out over both workers; one is SIGKILLed mid-run and the
 * run completes on the other; the run's state is read back from PostgreSQL's tables, and both
 * workers' run analytics from the `cadre` database docker-compose's Postgres creates.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { PlanStats } from '../src/analytics/stats';
import { SEARCH_ATTRIBUTES } from '../src/protocol/definitions';
import { type RunningWorker, exited, runCadre, spawnCadre, startCadreWorker } from './support/cli';
import { until } from './support/until';
import { kill, tempWorkspace, uniqueId } from './support/harness';
import { type Postgres, startPostgres } from './support/postgres';
import { type RealTemporalServer, startTemporalServer, waitForSearchAttributes } from './support/temporal-server';

type CadreWorker = RunningWorker & { name: string };

const say = (line: string) => process.stderr.write(`production-shape: ${line}\n`);

/** `cadre worker` in a child process; CADRE_TEST_WORKER=name reaches its shell steps. */
async function startWorker(name: string, cwd: string, env: NodeJS.ProcessEnv): Promise<CadreWorker> {
  return { name, ...(await startCadreWorker([], cwd, { ...env, CADRE_TEST_WORKER: name }, 120_000)) };
}

const FAN_ITEMS = 12;
const CHAIN = ['s1', 's2', 's3', 's4'];

/**
 * Twelve items at once, each printing the name of the worker that ran it. Which worker takes an
 * item is Temporal's choice (eager execution gives the worker that scheduled them a head start), so
 * each worker takes at most half: an item on a worker that ran its share fails that attempt, and
 * Temporal retries it on whichever worker polls first. Only a second worker that takes work ends it.
 */
const FAN_PLAN = `name: production-fan
# The worker's name comes from its environment, which the sandbox passes only when told.
sandbox: { env: [CADRE_TEST_WORKER] }
steps:
  - id: fan
    forEach: [${Array.from({ length: FAN_ITEMS }, (_, i) => i + 1).join(', ')}]
    concurrency: ${FAN_ITEMS}
    retry: { maximumAttempts: 100, initialInterval: 100ms, backoffCoefficient: 1 }
    tool: shell
    with:
      command: >-
        mkdir -p slots; for k in $(seq ${FAN_ITEMS / 2}); do
        if mkdir "slots/$CADRE_TEST_WORKER-$k" 2>/dev/null; then sleep 2; printf %s "$CADRE_TEST_WORKER"; exit 0; fi;
        done; echo "worker $CADRE_TEST_WORKER ran its share" >&2; exit 1
output: "{{ steps.fan.output[*].stdout }}"
`;

/** One step after another, logging who ran them; s2 runs long enough to SIGKILL its worker. */
const CHAIN_PLAN = `name: production-chain
sandbox: { env: [CADRE_TEST_WORKER] }
steps:
${CHAIN.map(
  (id, i) => `  - id: ${id}
${i > 0 ? `    dependsOn: [${CHAIN[i - 1]}]\n` : ''}    tool: shell
    with: { command: 'echo "${id} $CADRE_TEST_WORKER" >> chain.log; sleep ${id === 's2' ? 5 : 1}; printf %s "$CADRE_TEST_WORKER"' }`,
).join('\n')}
output:
${CHAIN.map((id) => `  ${id}: "{{ steps.${id}.output.stdout }}"`).join('\n')}
`;

describe('production shape: the real Temporal server on PostgreSQL with two cadre workers', () => {
  let pg: Postgres | undefined;
  let server: RealTemporalServer | undefined;
  const workers: CadreWorker[] = [];

  beforeAll(async () => {
    const started = Date.now();
    pg = await startPostgres({ user: 'temporal' });
    say(`PostgreSQL on ${pg.host}:${pg.port} in ${Date.now() - started} ms`);
    // Builds the server with Go on a machine that has none cached (minutes); fails when it cannot.
    server = await startTemporalServer(pg, { log: say });
    say(`server ready ${Date.now() - started} ms after the start of the test`);
  }, 30 * 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => kill(w.child, 'SIGKILL')));
    await server?.stop();
    await pg?.stop();
  }, 60_000);

  test('cadre setup; a fan-out over both workers; a worker SIGKILLed mid-run and the run completed on the other; the runs stored in PostgreSQL', async () => {
    const { address, namespace } = server!;
    const ws = tempWorkspace();
    // docker-compose's Postgres creates the `cadre` database on its first start, and its workers record run analytics there.
    await pg!.query(readFileSync(path.join(__dirname, '..', 'deploy', 'postgres-init.sql'), 'utf8'));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      CADRE_TASK_QUEUE: uniqueId('production'),
      // As the compose file's replicas: one host, one shared workspace, so a killed worker's runs go on on the other.
      CADRE_HOST: 'compose',
      CADRE_LOG_LEVEL: 'ERROR',
      CADRE_DATABASE_URL: pg!.urlFor('cadre'),
    };
    delete env.CADRE_ANALYTICS;
    const cadre = (args: string[]) => runCadre(args, ws, env);

    // docker-compose's cadre-setup service.
    const names = SEARCH_ATTRIBUTES.map((key) => key.name);
    expect(await cadre(['setup'])).toMatchObject({ code: 0, stdout: `registered: ${names.join(', ')}\n` });
    // A fresh server caches search attributes: wait until a start with them is accepted, not a fixed time.
    say(`search attributes usable after ${await waitForSearchAttributes(address, namespace, names)} ms`);

    // docker-compose's cadre-worker service, two replicas.
    workers.push(...(await Promise.all([startWorker('a', ws, env), startWorker('b', ws, env)])));
    const byName = new Map(workers.map((w) => [w.name, w]));

    writeFileSync(path.join(ws, 'fan.yaml'), FAN_PLAN);
    writeFileSync(path.join(ws, 'chain.yaml'), CHAIN_PLAN);
    // --no-preflight: CADRE_TEST_WORKER is set on the workers only, as for workers in containers.
    const start = (file: string, id: string, ...more: string[]) => cadre(['run', file, '--no-preflight', '--id', id, ...more]);

    // 1. A fan-out, followed with `cadre run --wait`: both workers take items.
    const fanId = uniqueId('production-fan');
    const fan = await start('fan.yaml', fanId, '--wait');
    expect(fan).toMatchObject({ code: 0, stdout: expect.stringMatching(/production-fan \(.*\): completed/) });
    const fanResult = await cadre(['result', fanId, '--json']);
    expect(fanResult.code).toBe(0);
    const fanDiagnostics = JSON.parse(fanResult.stdout) as { output: string[]; steps: { id: string; attempts: number }[] };
    const fanOutput = fanDiagnostics.output;
    expect(fanOutput).toHaveLength(FAN_ITEMS);
    expect(fanOutput.filter((w) => w === 'a')).toHaveLength(FAN_ITEMS / 2);
    expect(fanOutput.filter((w) => w === 'b')).toHaveLength(FAN_ITEMS / 2);
    say(`fan-out: ${fanDiagnostics.steps.find((st) => st.id === 'fan')?.attempts} attempts for ${FAN_ITEMS} items, half on each worker`);
    // Temporal's own record agrees: its activities were started by the two worker processes.
    const connection = await Connection.connect({ address });
    try {
      const history = await new Client({ connection, namespace }).workflow.getHandle(fanId).fetchHistory();
      const identities = (history.events ?? []).map((e) => e.activityTaskStartedEventAttributes?.identity).filter((x): x is string => !!x);
      expect(new Set(identities.map((identity) => Number(identity.split('@')[0])))).toEqual(new Set(workers.map((w) => w.child.pid)));
    } finally {
      await connection.close();
    }

    // 2. A chain; the worker running s2 is SIGKILLed, and the run completes on the other one.
    const chainId = uniqueId('production-chain');
    const started = Date.now();
    // Followed with `cadre run --wait`, which rides out the loss of the worker that had the run.
    const follow = spawnCadre(['run', 'chain.yaml', '--no-preflight', '--id', chainId, '--wait'], ws, env);
    let followed = '';
    follow.stdout!.on('data', (chunk: Buffer) => (followed += chunk.toString()));
    follow.stderr!.on('data', (chunk: Buffer) => (followed += chunk.toString()));
    const followEnded = exited(follow);
    const chainLog = path.join(ws, 'chain.log');
    const victimName = await until('s2 running', () => (existsSync(chainLog) ? /^s2 (\w+)$/m.exec(readFileSync(chainLog, 'utf8'))?.[1] : undefined));
    await new Promise((r) => setTimeout(r, 1000)); // into s2's 5 s
    const victim = byName.get(victimName)!;
    const survivor = workers.find((w) => w !== victim)!;
    await kill(victim.child, 'SIGKILL');
    say(`SIGKILLed worker ${victim.name} (pid ${victim.child.pid}) while it ran s2, ${Date.now() - started} ms into the run`);
    expect({ code: await followEnded, followed }).toMatchObject({ code: 0, followed: expect.stringMatching(/production-chain \(.*\): completed/) });
    say(`chain run ended ${Date.now() - started} ms after its start`);
    const chainResult = await cadre(['result', chainId, '--json']);
    // Whether the victim had run the run's workflow tasks too (then the run waited out its sticky queue).
    const chainConnection = await Connection.connect({ address });
    try {
      const events = (await new Client({ connection: chainConnection, namespace }).workflow.getHandle(chainId).fetchHistory()).events ?? [];
      const ranWorkflow = events.some((e) => Number(e.workflowTaskStartedEventAttributes?.identity?.split('@')[0]) === victim.child.pid);
      say(`the killed worker ${ranWorkflow ? 'had' : 'had not'} run the chain's workflow tasks`);
    } finally {
      await chainConnection.close();
    }
    expect(chainResult.code).toBe(0);
    const chainDiagnostics = JSON.parse(chainResult.stdout) as { status: string; output: Record<string, string> };
    expect(chainDiagnostics.status).toBe('completed');
    expect([chainDiagnostics.output.s2, chainDiagnostics.output.s3, chainDiagnostics.output.s4]).toEqual([survivor.name, survivor.name, survivor.name]);
    const chain = readFileSync(chainLog, 'utf8').trim().split('\n');
    // s1 ran once; s2 started on the victim and ran again on the survivor; s3 and s4 on the survivor only.
    expect(chain.filter((line) => line.startsWith('s1 '))).toHaveLength(1);
    expect(chain.filter((line) => line.startsWith('s2 '))).toEqual([`s2 ${victim.name}`, `s2 ${survivor.name}`]);
    expect(chain.filter((line) => /^s[34] /.test(line))).toEqual([`s3 ${survivor.name}`, `s4 ${survivor.name}`]);

    // 3. The runs live in PostgreSQL: their mutable state in `temporal`, their visibility records
    // (with cadre's CadrePlan and CadreStatus search attributes) in `temporal_visibility`, which `cadre list` reads.
    for (const [id, plan] of [[fanId, 'production-fan'], [chainId, 'production-chain']]) {
      const executions = await pg!.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE workflow_id = $1', [id], 'temporal');
      expect(executions[0].n).toBe(1);
      const visibility = await until(`the visibility record of ${id} closed`, async () => {
        const rows = await pg!.query<{ status: number; search_attributes: Record<string, unknown> }>(
          'SELECT status, search_attributes FROM executions_visibility WHERE workflow_id = $1',
          [id],
          'temporal_visibility',
        );
        return rows[0]?.status === 2 ? rows[0] : undefined; // WORKFLOW_EXECUTION_STATUS_COMPLETED
      }, 60_000);
      expect(Object.values(visibility.search_attributes)).toEqual(expect.arrayContaining([plan, 'completed']));
      const list = await cadre(['list', '--plan', plan, '--json']);
      expect(list.code).toBe(0);
      expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ workflowId: id, status: 'completed' })]);
    }
    const historyNodes = await pg!.query<{ n: number }>('SELECT count(*)::int AS n FROM history_node', [], 'temporal');
    expect(historyNodes[0].n).toBeGreaterThan(0);

    // 4. Run analytics from both workers in the one `cadre` database; `cadre stats` reads it.
    const recorded = await until('both runs in the analytics database', async () => {
      const rows = await pg!.query<{ workflow_id: string; plan: string; status: string }>('SELECT workflow_id, plan, status FROM cadre_runs ORDER BY plan', [], 'cadre');
      return rows.length === 2 ? rows : undefined;
    }, 60_000);
    expect(recorded).toEqual([
      { workflow_id: chainId, plan: 'production-chain', status: 'completed' },
      { workflow_id: fanId, plan: 'production-fan', status: 'completed' },
    ]);
    const stats = await cadre(['stats', '--json']);
    expect(stats.code).toBe(0);
    const byPlan = Object.fromEntries((JSON.parse(stats.stdout) as PlanStats[]).map((p) => [p.plan, p]));
    expect(byPlan['production-chain']).toMatchObject({ runs: 1, completed: 1 });
    // s2 ran twice: on the worker that was killed, then on the survivor.
    expect(byPlan['production-chain'].steps.map((st) => [st.step, st.retried])).toEqual([['s1', 0], ['s2', 1], ['s3', 0], ['s4', 0]]);
    expect(byPlan['production-fan'].steps).toEqual([expect.objectContaining({ step: 'fan', tool: 'shell', completed: 1, retried: 1 })]);

    // The survivor shuts down cleanly on Ctrl-C, as docker's SIGTERM would have it.
    survivor.child.kill('SIGINT');
    expect(await exited(survivor.child)).toBe(0);
  }, 10 * 60_000);
});
