/** The `cadre` command line, on top of the typed client in ./client. */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { PlanError, loadPlan, loadPlanWithWarnings } from '../spec/load';
import { resolveInputs } from '../spec/inputs';
import { formatIssues } from '../spec/validate';
import { CadreClient, CadreError, SERVER_INFO_FILE, UsageError, errorChain, readServerInfo, resolveConnection } from './client';
import { connectionOptions, setConnectionFlags } from './connection-config';
import { packageVersion } from '../package-root';
import { taskQueue } from './task-queue';
/** The minimum length of a codec token (codec/server.ts), here so the help text needs no server. */
const MIN_TOKEN_LENGTH = 16;
import { codecKeysFromEnv } from '../codec/keys';
import { printPaged } from './pager';
import { sendMessage, sessionInput } from './sessions';
import { ProgressPrinter, renderDiagnostics } from './format';
import { RUN_STATUSES, isFinal } from './run-status';
import type { CompiledPlan } from '../spec/types';
import type { Diagnostics } from '../workflows/common/definitions';
import { registerRolesCommand } from './roles-command';
import { etaReporter, registerStatsCommand } from './stats-command';
import { checkWorkflowId } from './workflow-ids';
import { colourOn, paintStatus } from './style';
import { completionScript } from './completion';
import { formatProblems } from '../preflight/codes';
import { environmentProblems } from '../preflight/environment';
import { checkPlan, checkServer, checkWorkers } from '../preflight/preflight';

const out = (line: string) => process.stdout.write(`${line}\n`);
const info = (line: string) => process.stderr.write(`${line}\n`);

function collectInput(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected name=value, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0 || n > 65535) throw new InvalidArgumentError(`not a port: ${value}`);
  return n;
}

function commaList(value: string): string[] {
  return value.split(',').map((v) => v.trim()).filter(Boolean);
}

type SessionCliOptions = { model?: string; system?: string; tools?: string[]; ask?: string[]; workspace: string };

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`not a positive whole number: ${value}`);
  return n;
}

async function withClient<T>(fn: (client: CadreClient) => Promise<T>): Promise<T> {
  const client = await CadreClient.connect();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** Commands about one run check its id first: a bad id is the user's to fix, whatever the server. */
async function withRun<T>(id: string, fn: (client: CadreClient) => Promise<T>): Promise<T> {
  checkWorkflowId(id);
  return withClient(fn);
}

/** 1 for a run that ended without completing (failed, cancelled, terminated, timed out), else 0. */
function exitCodeOf(status: string): number {
  return isFinal(status) && status !== 'completed' ? 1 : 0;
}

/** Workers may start before their server (containers, reboots): wait for it instead of exiting. */
async function connectWhenUp(): Promise<CadreClient> {
  let waiting = false;
  for (;;) {
    try {
      const client = await CadreClient.connect();
      if (waiting) info(`reached Temporal at ${client.server.address}`);
      return client;
    } catch (err) {
      if (!(err instanceof CadreError)) throw err;
      if (!waiting) info(`${err.message}; trying again every ${RECONNECT_MS / 1000}s (Ctrl-C stops)`);
      waiting = true;
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  }
}

const RECONNECT_MS = 2000;

/** Ctrl-C while following a run stops the following, not the run. */
function leaveRunOnCtrlC(workflowId: string): void {
  process.once('SIGINT', () => {
    info(`\nstopped following; the run goes on (cadre watch ${workflowId}, cadre cancel ${workflowId})`);
    process.exit(130);
  });
}

/** Resolves on Ctrl-C or SIGTERM. */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

export function buildProgram(): Command {
  const program = new Command('cadre')
    .description('Durable plans and agents on Temporal')
    .version(packageVersion(), '-V, --version', 'print the version of cadre')
    .option('--address <host:port>', 'the Temporal server (default: TEMPORAL_ADDRESS, the profile, `cadre dev` here, 127.0.0.1:7233)')
    .option('--namespace <name>', 'the Temporal namespace (default: TEMPORAL_NAMESPACE, the profile, "default")')
    .option('--profile <name>', 'a profile of the Temporal config file, as the temporal CLI reads it (TLS, API key)')
    .showHelpAfterError()
    .exitOverride();
  // Every command connects through the same settings: flags over Temporal's variables and config file.
  program.hook('preAction', () => setConnectionFlags(program.opts<{ address?: string; namespace?: string; profile?: string }>()));

  program
    .command('dev')
    .description('run a Temporal dev server (state in .cadre/, Web UI on) and a worker, in the foreground')
    .addHelpText('after', '\nExamples:\n  cadre dev\n  cadre dev --port 7233 --ui-port 8233')
    .option('--port <port>', 'gRPC port of the dev server', port, 7233)
    .option('--ui-port <port>', 'Web UI port', port, 8233)
    .option('--data-dir <dir>', 'where the dev server keeps its state', '.cadre')
    .action(async (opts: { port: number; uiPort: number; dataDir: string }) => {
      const running = readServerInfo(process.cwd());
      if (running) throw new CadreError(`cadre dev already runs here (pid ${running.pid}, ${running.address}); two servers on one .cadre/ would corrupt it`);
      const [{ installConciseLogging }, { startEmbedded }, { AesGcmCodec }, { randomCodecToken, startCodecServer }, { workerSandboxWarning }] = await Promise.all([
        import('../worker/logging'),
        import('../worker/embedded'),
        import('../codec/aes-gcm'),
        import('../codec/server'),
        import('../activities/sandbox-settings'),
      ]);
      installConciseLogging('WARN');
      // With payload encryption on, the Web UI decodes through a codec server of its own, its
      // token (new at each start) in the endpoint's path: the UI sends no header of its own.
      const keys = codecKeysFromEnv();
      const uiOrigins: string[] = [];
      const codecToken = randomCodecToken();
      const codec = keys ? await startCodecServer({ codec: new AesGcmCodec(keys), port: 0, origins: uiOrigins, token: codecToken, log: info }) : undefined;
      const embedded = await startEmbedded({ dataDir: opts.dataDir, port: opts.port, uiPort: opts.uiPort, log: info, ...(codec && { codecEndpoint: `${codec.url}/${codecToken}` }) });
      if (embedded.server.uiUrl) uiOrigins.push(embedded.server.uiUrl, embedded.server.uiUrl.replace('127.0.0.1', 'localhost'));
      const infoFile = path.join(process.cwd(), SERVER_INFO_FILE);
      if (embedded.server.owned) {
        mkdirSync(path.dirname(infoFile), { recursive: true });
        const { address, namespace, uiUrl } = embedded.server;
        writeFileSync(infoFile, JSON.stringify({ address, namespace, uiUrl, pid: process.pid }, null, 2));
      }
      out(`Temporal gRPC: ${embedded.server.address} (namespace ${embedded.server.namespace})`);
      if (embedded.server.uiUrl) out(`Web UI:        ${embedded.server.uiUrl}`);
      if (codec) out(`codec server:  ${codec.url} (payloads encrypted; the Web UI decodes through it)`);
      out(`worker:        task queue "${taskQueue()}"; Ctrl-C stops both`);
      const sandboxWarning = workerSandboxWarning();
      if (sandboxWarning) info(`warning: ${sandboxWarning}`);
      const signal = await Promise.race([untilSignal(), embedded.running.then(() => 'worker stopped')]);
      info(`${signal}: shutting down...`);
      await embedded.stop();
      await codec?.close();
      if (embedded.server.owned) rmSync(infoFile, { force: true });
      info('stopped');
    });

  program
    .command('codec-server')
    .description('serve /encode and /decode for the Web UI and `temporal --codec-endpoint` (keys: CADRE_CODEC_KEYS or CADRE_CODEC_KEY_FILE)')
    .addHelpText('after', '\nExamples:\n  CADRE_CODEC_KEY_FILE=keys.txt CADRE_CODEC_TOKEN=$(openssl rand -hex 24) cadre codec-server --port 8081 --origin https://temporal.example.com')
    .option('--port <port>', 'port to listen on', port, 8081)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .addOption(new Option('--origin <url>', 'a browser origin allowed to call it, such as the Web UI\'s (repeatable)').argParser((v: string, prev: string[]) => [...prev, v]).default(['http://localhost:8233', 'http://127.0.0.1:8233'], 'the dev server\'s Web UI'))
    .option('--token-env <name>', `the variable holding the token every request must carry, at least ${MIN_TOKEN_LENGTH} characters: as \`Authorization: Bearer <token>\`, or in the endpoint, http://host:port/<token>`, 'CADRE_CODEC_TOKEN')
    .action(async (opts: { port: number; host: string; origin: string[]; tokenEnv: string }) => {
      const keys = codecKeysFromEnv();
      if (!keys) throw new CadreError('no keys: set CADRE_CODEC_KEYS (id=base64key, newest last) or CADRE_CODEC_KEY_FILE');
      const token = process.env[opts.tokenEnv];
      if (!token) throw new CadreError(`no token for the codec server: set ${opts.tokenEnv}, or --token-env NAME`);
      if (token.length < MIN_TOKEN_LENGTH) throw new CadreError(`${opts.tokenEnv} is too short for a codec token: at least ${MIN_TOKEN_LENGTH} characters (openssl rand -hex 24)`);
      const [{ AesGcmCodec }, { startCodecServer }] = await Promise.all([import('../codec/aes-gcm'), import('../codec/server')]);
      const server = await startCodecServer({ codec: new AesGcmCodec(keys), port: opts.port, host: opts.host, origins: opts.origin, token, log: info });
      out(`codec server: ${server.url} (keys ${keys.map((k) => k.id).join(', ')}; encrypting with ${keys[keys.length - 1].id}; requests carry the token in $${opts.tokenEnv})`);
      out(`Web UI: set ${server.url}/<token> as the codec server; CLI: temporal --codec-endpoint ${server.url} --codec-auth "Bearer $${opts.tokenEnv}" ...`);
      await untilSignal();
      await server.close();
    });

  program
    .command('worker')
    .description('run a worker only, against TEMPORAL_ADDRESS (or the `cadre dev` server); scale out by starting more')
    .addHelpText('after', '\nExamples:\n  cadre worker\n  TEMPORAL_ADDRESS=temporal:7233 cadre worker --metrics-port 9464\n  cadre worker --profile prod')
    .option('--metrics-port <port>', 'serve Prometheus metrics at http://0.0.0.0:<port>/metrics (default: CADRE_METRICS_PORT; off)', port)
    .action(async (opts: { metricsPort?: number }) => {
      const metricsPort = opts.metricsPort ?? (process.env.CADRE_METRICS_PORT ? port(process.env.CADRE_METRICS_PORT) : undefined);
      const [{ installConciseLogging, statusLine }, { SetupPermissionError, ensureSearchAttributes }, { createCadreWorker }, { workerSandboxWarning }] = await Promise.all([
        import('../worker/logging'),
        import('../worker/search-attributes'),
        import('../worker/worker'),
        import('../activities/sandbox-settings'),
      ]);
      installConciseLogging('WARN', metricsPort === undefined ? {} : { metricsAddress: `0.0.0.0:${metricsPort}` });
      const server = resolveConnection();
      const client = await connectWhenUp();
      try {
        const report = await ensureSearchAttributes(client.connection, server.namespace);
        if (report.added.length > 0) statusLine(`registered search attributes ${report.added.join(', ')}`);
      } catch (err) {
        if (!(err instanceof SetupPermissionError)) throw err;
        statusLine(`warning: ${err.message}`);
      } finally {
        await client.close();
      }
      const sandboxWarning = workerSandboxWarning();
      if (sandboxWarning) statusLine(`warning: ${sandboxWarning}`);
      statusLine(`worker on ${server.address}, namespace ${server.namespace}, task queue "${taskQueue()}" (bundling workflows...)`, { address: server.address, namespace: server.namespace, taskQueue: taskQueue() });
      const { worker, connection, tracing } = await createCadreWorker({ ...connectionOptions(server), namespace: server.namespace });
      const running = worker.run();
      statusLine('worker running; Ctrl-C stops it after running tools finish', metricsPort === undefined ? {} : { metrics: `http://0.0.0.0:${metricsPort}/metrics` });
      await Promise.race([untilSignal(), running]);
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await tracing?.shutdown();
      await connection.close();
    });

  program
    .command('setup')
    .description("register cadre's search attributes on the namespace (needs operator rights)")
    .addHelpText('after', '\nExamples:\n  cadre setup\n  cadre --profile prod setup')
    .action(async () => {
      const { ensureSearchAttributes } = await import('../worker/search-attributes');
      await withClient(async (client) => {
        const report = await ensureSearchAttributes(client.connection, client.server.namespace);
        if (report.added.length > 0) out(`registered: ${report.added.join(', ')}`);
        if (report.present.length > 0) out(`already present: ${report.present.join(', ')}`);
      });
    });

  program
    .command('validate <plan>')
    .description('check a plan file and report every problem with its path')
    .option('--preflight', 'also check what the plan needs here and on the server: commands, workspaces, hosts, variables, a worker (codes CADRE-E1xx/E2xx/E3xx)')
    .addOption(new Option('-i, --input <name=value>', 'a plan input, for --preflight (repeatable)').argParser(collectInput).default({}, 'none'))
    .option('--task-queue <queue>', 'the task queue whose workers --preflight looks for', taskQueue())
    .option('--json', 'print {ok, plan, steps, warnings} or {ok: false, issues} as JSON (with --preflight: {ok, problems})')
    .addHelpText('after', '\nExamples:\n  cadre validate plan.yaml\n  cadre validate plan.yaml --json | jq \'.issues[].path\'\n  cadre validate plan.yaml --preflight -i vip=me@example.com')
    .action(async (file: string, opts: { json?: boolean; preflight?: boolean; input: Record<string, string>; taskQueue: string }) => {
      if (opts.preflight) return preflightCommand(file, opts);
      if (opts.json) {
        try {
          const { plan, warnings } = await loadPlanWithWarnings(file, process.cwd());
          out(JSON.stringify({ ok: true, file, plan: plan.name, steps: plan.steps.length, warnings }, null, 2));
        } catch (err) {
          if (!(err instanceof PlanError)) throw err;
          out(JSON.stringify({ ok: false, file, issues: err.issues }, null, 2));
          process.exitCode = 2;
        }
        return;
      }
      const { plan, warnings } = await loadPlanWithWarnings(file, process.cwd());
      // Warnings (a run close to Temporal's limits) do not make the plan invalid: exit 0.
      if (warnings.length > 0) {
        info(`${file}: ${warnings.length} warning${warnings.length === 1 ? '' : 's'}\n${formatIssues(warnings).replace(/^/gm, '  ')}`);
      }
      out(`${file}: ok (plan "${plan.name}", ${plan.steps.length} steps)`);
    });

  program
    .command('run <plan>')
    .description('start a plan')
    .addHelpText('after', '\nExamples:\n  cadre run plan.yaml -i vip=me@example.com\n  cadre run plan.yaml --wait\n  cadre run plan.yaml --id nightly-2026-11-23 --json')
    .addOption(new Option('-i, --input <name=value>', 'a plan input (repeatable)').argParser(collectInput).default({}, 'none'))
    .option('--id <id>', 'workflow id (default: derived from the plan and inputs)')
    .option('--task-queue <queue>', 'task queue of the workers', taskQueue())
    .option('-w, --wait', 'follow progress and exit 0 only when the plan completed')
    .option('--json', 'print JSON')
    .option('--no-preflight', 'start without checking commands, workspaces, hosts and variables here (workers on another machine)')
    .action(async (file: string, opts: { input: Record<string, string>; id?: string; taskQueue: string; wait?: boolean; json?: boolean; preflight: boolean }) => {
      if (opts.id !== undefined) checkWorkflowId(opts.id);
      const plan = await loadPlan(file, process.cwd());
      if (plan.sandbox?.mode === 'none') info(`warning: ${file} says sandbox: none: its tools run unconfined, with the worker's permissions, files and network (docs/security.md)`);
      // Bad inputs are the user's to fix before any server is involved.
      const inputs = resolveInputs(plan, opts.input);
      if (!inputs.ok) throw new CadreError(`bad inputs:\n${formatIssues(inputs.issues)}`);
      if (opts.preflight) {
        const problems = await environmentProblems(plan);
        if (problems.length > 0) {
          throw new UsageError(`${file}: the plan would fail here (\`cadre run --no-preflight\` starts it anyway, for workers elsewhere):\n${formatProblems(problems).replace(/^/gm, '  ')}`);
        }
      }
      await startAndFollow(plan, inputs.values, { ...opts, warnWithoutWorker: opts.preflight });
    });

  program
    .command('team <goal-or-plan>')
    .description('hand a goal (its lead takes the role that fits) or a plan file to a team of agents')
    .option('--id <id>', 'workflow id (default: derived from the plan and goal)')
    .option('--task-queue <queue>', 'task queue of the workers', taskQueue())
    .option('-w, --wait', 'follow progress and exit 0 only when the team completed')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  cadre team "Write unit tests for the parser" --wait\n  cadre team examples/feature-team/plan.yaml --wait')
    .action(async (goalOrPlan: string, opts: { id?: string; taskQueue: string; wait?: boolean; json?: boolean }) => {
      if (opts.id !== undefined) checkWorkflowId(opts.id);
      const { teamStart } = await import('./team');
      const { plan, inputs, lead } = await teamStart(goalOrPlan, process.cwd());
      if (lead && !opts.json) info(`lead: ${lead.role}${lead.matched.length ? ` (matched: ${lead.matched.join(', ')})` : ' (no role matched the goal: the default)'}`);
      await startAndFollow(plan, inputs, opts);
    });

  program
    .command('status <id>')
    .description("a run's steps, what it waits for, its errors; exits 1 when it ended without completing")
    .addHelpText('after', '\nExamples:\n  cadre status plan-triage-1a2b3c\n  cadre status plan-triage-1a2b3c --json | jq \'.steps[] | select(.status == "failed")\'')
    .option('--json', 'print the diagnostics as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        const d = await client.diagnostics(id);
        if (opts.json) out(JSON.stringify(d, null, 2));
        else await printPaged(renderDiagnostics(id, d), out);
        process.exitCode = exitCodeOf(d.status);
      });
    });

  program
    .command('list')
    .description('recent runs')
    .addHelpText('after', '\nExamples:\n  cadre list\n  cadre list --status waiting\n  cadre list --plan email-triage --limit 5 --json')
    .addOption(new Option('--status <status>', 'only runs in this state').choices(RUN_STATUSES))
    .option('--plan <name>', 'only runs of this plan')
    .option('--limit <n>', 'how many', positive, 20)
    .option('--json', 'print JSON')
    .action(async (opts: { status?: string; plan?: string; limit: number; json?: boolean }) => {
      await withClient(async (client) => {
        const runs = await client.list(opts);
        if (opts.json) return out(JSON.stringify(runs, null, 2));
        if (runs.length === 0) return out('no runs');
        const colour = colourOn();
        out(`${'WORKFLOW ID'.padEnd(40)} ${'PLAN'.padEnd(20)} ${'STATUS'.padEnd(10)} STARTED`);
        for (const run of runs) out(`${run.workflowId.padEnd(40)} ${String(run.plan ?? '').padEnd(20)} ${paintStatus(run.status, colour)}${' '.repeat(Math.max(1, 11 - run.status.length))}${run.startTime.toISOString()}`);
      });
    });

  program
    .command('watch <id>')
    .description('follow a run live until it ends')
    .option('--json', 'print the diagnostics as a JSON line at every change')
    .addHelpText('after', '\nExamples:\n  cadre watch plan-triage-1a2b3c\n  cadre watch plan-triage-1a2b3c --json | jq -c \'{status, waiting: [.waiting[].id]}\'')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        leaveRunOnCtrlC(id);
        const final = await follow(client, id, out, opts.json ? (d) => out(JSON.stringify(d)) : undefined);
        process.exitCode = exitCodeOf(final.status);
      });
    });

  program
    .command('answer <id> <waitId> <value>')
    .description('answer a question or decide about a failed step (retry | skip | abort | extend[:10m])')
    .option('--json', 'print {workflowId, waitId, value, accepted} as JSON')
    .addHelpText('after', '\nExamples:\n  cadre answer plan-triage-1a2b3c confirm yes\n  cadre answer plan-triage-1a2b3c archive extend:10m')
    .action(async (id: string, waitId: string, value: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.answer(id, waitId, value);
        out(opts.json ? JSON.stringify({ workflowId: id, waitId, value, accepted: true }) : `answered ${waitId}: ${value}`);
      });
    });

  program
    .command('approve <id> <waitId>')
    .description("let an agent's tool call that waits for approval run (`cadre status <id>` shows it whole)")
    .option('--always', 'and let this agent run exactly the same call (tool and arguments) again without asking')
    .option('--json', 'print {workflowId, waitId, value, accepted} as JSON')
    .action(async (id: string, waitId: string, opts: { json?: boolean; always?: boolean }) => {
      const value = opts.always ? 'always' : 'approve';
      await withRun(id, async (client) => {
        await client.answer(id, waitId, value);
        out(opts.json ? JSON.stringify({ workflowId: id, waitId, value, accepted: true }) : `approved ${waitId}${opts.always ? ' (and the same call from now on)' : ''}`);
      });
    });

  program
    .command('deny <id> <waitId>')
    .description("refuse an agent's tool call; the agent reads the denial (and the reason) as the call's result")
    .option('--reason <text>', 'why, for the agent to read')
    .option('--json', 'print {workflowId, waitId, value, accepted} as JSON')
    .action(async (id: string, waitId: string, opts: { reason?: string; json?: boolean }) => {
      await withRun(id, async (client) => {
        const value = opts.reason ? `deny:${opts.reason}` : 'deny';
        await client.answer(id, waitId, value);
        out(opts.json ? JSON.stringify({ workflowId: id, waitId, value, accepted: true }) : `denied ${waitId}`);
      });
    });

  program
    .command('audit <id>')
    .description("a run's audit log: its agents' messages, model turns, tool calls and approvals, as JSON lines without content")
    .option('--dir <path>', 'where the worker writes audit logs (default: CADRE_AUDIT_DIR or ~/.cadre/audit)')
    .action(async (id: string, opts: { dir?: string }) => {
      const lines = CadreClient.readAuditLog(id, opts.dir);
      for (const line of lines) out(line);
    });

  program
    .command('ask <request>')
    .description('a request in words, routed by the ask section of cadre.config.yaml to a plan that answers it; prints the answer')
    .option('--model <provider:model>', 'route with this model instead of the rules')
    .option('--config <file>', 'the config file with the ask section (default: CADRE_CONFIG or ./cadre.config.yaml)')
    .option('--json', 'print the route, the run id and the answer as JSON')
    .action(async (request: string, opts: { model?: string; config?: string; json?: boolean }) => {
      const { ask } = await import('../ask/ask');
      await withClient(async (client) => {
        const started = await ask(client, request, { ...(opts.model && { model: opts.model }), ...(opts.config && { configPath: opts.config }) });
        const how = 'rules' in started.by ? `rule "${started.by.rules.pattern}"` : `model ${started.by.model}`;
        const slots = Object.entries(started.slots).map(([k, v]) => `${k}=${v}`).join(', ');
        info(`intent ${started.intent} (by ${how}${slots ? `; ${slots}` : ''}); run ${started.workflowId}`);
        for (const a of started.asking) info(`  it will ask for ${a.slot}: ${a.why}`);
        leaveRunOnCtrlC(started.workflowId);
        const printer = new ProgressPrinter(started.workflowId, info);
        const final = await client.watch(started.workflowId, (d) => {
          // Only what waits for the person asking: a question to answer.
          if (d.waiting.length > 0) printer.update(d);
        });
        const result = final.status === 'completed' ? await client.result(started.workflowId) : final;
        if (opts.json) out(JSON.stringify({ intent: started.intent, by: started.by, slots: started.slots, workflowId: started.workflowId, status: result.status, output: result.output }, null, 2));
        else if (result.status === 'completed') out(JSON.stringify(result.output, null, 2));
        else out(renderDiagnostics(started.workflowId, result));
        process.exitCode = exitCodeOf(result.status);
      });
    });

  const sessionOptions = (command: Command) =>
    command
      .option('--model <provider:model>', 'the model (default: CADRE_MODEL or the worker\'s models.default)')
      .option('--system <text>', 'system prompt')
      .option('--tools <names>', 'tools the agent may call, comma-separated (fs.read,shell,ts:name,mcp:server/*)', commaList)
      .option('--ask <names>', 'tools whose calls wait for your approval, comma-separated', commaList)
      .option('--workspace <dir>', 'where its tools run', '.');

  sessionOptions(
    program
      .command('send <session> <message>')
      .description('send a message to a session, starting it if it is not running, and print the reply')
      .option('--json', 'print the reply and counts as JSON'),
  ).action(async (id: string, message: string, opts: SessionCliOptions & { json?: boolean }) => {
    await withRun(id, async (client) => {
      const result = await sendMessage(client, id, message, sessionInput(opts));
      out(opts.json ? JSON.stringify(result) : result.reply);
    });
  });

  sessionOptions(program.command('chat [session]').description('talk with an agent in a session that survives restarts; /end ends it, Ctrl-D leaves it')).action(
    async (id: string | undefined, opts: SessionCliOptions) => {
      const sessionId = id ?? `chat-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}`;
      const { chat } = await import('./chat');
      await withRun(sessionId, (client) => chat(client, sessionId, sessionInput(opts), { input: process.stdin, out, info }));
    },
  );

  program
    .command('pause <id>')
    .description('let running steps finish and start no new ones')
    .addHelpText('after', '\nExamples:\n  cadre pause plan-triage-1a2b3c')
    .option('--json', 'print {workflowId, paused} as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.pause(id);
        out(opts.json ? JSON.stringify({ workflowId: id, paused: true }) : `paused ${id}`);
      });
    });

  program
    .command('resume <id>')
    .description('start steps again after a pause')
    .addHelpText('after', '\nExamples:\n  cadre resume plan-triage-1a2b3c')
    .option('--json', 'print {workflowId, paused} as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.resume(id);
        out(opts.json ? JSON.stringify({ workflowId: id, paused: false }) : `resumed ${id}`);
      });
    });

  program
    .command('cancel <id>')
    .description('cancel a run (compensations run); the same as `temporal workflow cancel`')
    .addHelpText('after', '\nExamples:\n  cadre cancel plan-triage-1a2b3c --reason \'wrong inbox\'')
    .option('--reason <text>', 'why')
    .option('--json', 'print {workflowId, cancelRequested} as JSON')
    .action(async (id: string, opts: { reason?: string; json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.cancel(id, opts.reason);
        out(opts.json ? JSON.stringify({ workflowId: id, cancelRequested: true, ...(opts.reason && { reason: opts.reason }) }) : `cancellation requested for ${id}`);
      });
    });

  program
    .command('worktrees [action]')
    .description("the git worktrees cadre made for runs' tasks; `prune` removes those of closed runs that hold nothing unsaved")
    .option('--repo <dir>', 'the repository', '.')
    .option('--json', 'print JSON')
    .action(async (action: string | undefined, opts: { repo: string; json?: boolean }) => {
      if (action !== undefined && action !== 'prune') throw new UsageError(`unknown action "${action}": the only one is prune`);
      const { pruneWorktrees, runWorktrees } = await import('./worktrees');
      await withClient(async (client) => {
        if (action === 'prune') {
          const outcomes = await pruneWorktrees(client, opts.repo);
          if (opts.json) return out(JSON.stringify(outcomes, null, 2));
          if (outcomes.length === 0) return out('no worktrees made by cadre');
          for (const o of outcomes) out(`${o.removed ? 'removed' : 'kept'} ${o.path} (${o.branch}): ${o.reason}`);
          return;
        }
        const worktrees = await runWorktrees(client, opts.repo);
        if (opts.json) return out(JSON.stringify(worktrees, null, 2));
        if (worktrees.length === 0) return out('no worktrees made by cadre');
        out(`${'PATH'.padEnd(50)} ${'BRANCH'.padEnd(30)} ${'STATE'.padEnd(8)} ${'RUN'.padEnd(40)} STEP`);
        for (const w of worktrees) {
          const run = w.run ? `${w.run} (${w.runOpen ? 'open' : 'closed'})` : '-';
          out(`${w.path.padEnd(50)} ${w.branch.padEnd(30)} ${w.state.padEnd(8)} ${run.padEnd(40)} ${w.step ?? '-'}`);
        }
      });
    });

  program
    .command('result <id>')
    .description("wait for a run to end and print its output")
    .addHelpText('after', '\nExamples:\n  cadre result plan-triage-1a2b3c\n  cadre result plan-triage-1a2b3c --json')
    .option('--json', 'print the final diagnostics as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        const d = await client.result(id);
        if (opts.json) out(JSON.stringify(d, null, 2));
        else if (d.status === 'completed') out(JSON.stringify(d.output ?? null, null, 2));
        else out(renderDiagnostics(id, d));
        process.exitCode = exitCodeOf(d.status);
      });
    });

  registerRolesCommand(program);
  registerStatsCommand(program);

  program
    .command('completion <shell>')
    .description('print a shell completion script (bash or zsh)')
    .addHelpText('after', '\nExamples:\n  source <(cadre completion bash)     # in ~/.bashrc\n  source <(cadre completion zsh)      # in ~/.zshrc')
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh') throw new UsageError(`unknown shell "${shell}": bash or zsh`);
      out(completionScript(program, shell).trimEnd());
    });

  program
    .command('demo')
    .description('run the example plan end to end on an embedded server, non-interactively')
    .option('--data-dir <dir>', 'where the dev server keeps its state', '.cadre')
    .action(async (opts: { dataDir: string }) => {
      const [{ installConciseLogging }, { runDemo }] = await Promise.all([import('../worker/logging'), import('./demo')]);
      // Failed attempts show as step progress: keep worker logs to errors.
      installConciseLogging('ERROR');
      const final = await runDemo({ dataDir: opts.dataDir, out, info });
      process.exitCode = final === 'completed' ? 0 : 1;
    });

  return program;
}

/** Starts a plan; with `wait`, follows it to the end and exits by how it ended. */
async function startAndFollow(
  plan: CompiledPlan,
  inputs: Record<string, unknown>,
  opts: { id?: string; taskQueue: string; wait?: boolean; json?: boolean; warnWithoutWorker?: boolean },
): Promise<void> {
  await withClient(async (client) => {
    if (opts.warnWithoutWorker) {
      // The run would wait for a worker: say so, and start it all the same.
      const problems = await checkWorkers(client.connection, client.server.namespace, opts.taskQueue).catch(() => []);
      for (const p of problems) info(`warning: ${formatProblems([p])}`);
    }
    const started = await client.start(plan, inputs, { workflowId: opts.id, taskQueue: opts.taskQueue });
    const link = client.uiLink(started.workflowId);
    if (!opts.wait) {
      if (opts.json) out(JSON.stringify({ ...started, ...(link && { ui: link }) }));
      else {
        out(started.workflowId);
        if (link) info(`Web UI: ${link}`);
        info(`follow it with: cadre watch ${started.workflowId}`);
      }
      return;
    }
    if (!opts.json) info(`started ${started.workflowId}${link ? `\nWeb UI: ${link}` : ''}`);
    leaveRunOnCtrlC(started.workflowId);
    const final = await follow(client, started.workflowId, info, opts.json ? () => undefined : undefined);
    out(opts.json ? JSON.stringify({ workflowId: started.workflowId, ...final }, null, 2) : renderDiagnostics(started.workflowId, final));
    process.exitCode = exitCodeOf(final.status);
  });
}

/** Follows a run to its end: its progress and, once, its ETA; or each change to `instead` (--json). */
async function follow(client: CadreClient, workflowId: string, write: (line: string) => void, instead?: (d: Diagnostics) => void): Promise<Diagnostics> {
  const printer = new ProgressPrinter(workflowId, write);
  const eta = etaReporter(write);
  const final = await client.watch(workflowId, (d) => {
    if (instead) return instead(d);
    printer.update(d);
    eta.seen(d);
  });
  await eta.done();
  return final;
}

/** `cadre validate --preflight`: exit 0 when ready, 2 for problems of the plan or this machine, 1 for the server's. */
async function preflightCommand(file: string, opts: { json?: boolean; input: Record<string, string>; taskQueue: string }): Promise<void> {
  const { plan, problems } = await checkPlan(file, process.cwd(), opts.input);
  if (plan) {
    try {
      await withClient(async (client) => problems.push(...(await checkServer(client.connection, client.server.namespace, opts.taskQueue))));
    } catch (err) {
      if (!(err instanceof CadreError)) throw err;
      problems.push({ code: 'CADRE-E301', path: '', message: err.message });
    }
  }
  const local = problems.some((p) => p.code < 'CADRE-E3');
  process.exitCode = problems.length === 0 ? 0 : local ? 2 : 1;
  if (opts.json) out(JSON.stringify({ ok: problems.length === 0, file, ...(plan && { plan: plan.name }), problems }, null, 2));
  else if (problems.length === 0) out(`${file}: ready to run (plan "${plan?.name}", ${plan?.steps.length} steps; a worker polls "${opts.taskQueue}")`);
  else out(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n${formatProblems(problems).replace(/^/gm, '  ')}`);
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    process.exitCode = reportError(err);
  }
}

/** One clear line (or one line per plan problem), no stack trace unless CADRE_DEBUG is set. */
function reportError(err: unknown): number {
  // Commander has printed its message. It would exit 1; cadre keeps 1 for failed runs and requests.
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
  if (process.env.CADRE_DEBUG) console.error(err);
  if (err instanceof PlanError) {
    process.stderr.write(`${err.message}\n${formatIssues(err.issues).replace(/^/gm, '  ')}\n`);
    return 2;
  }
  if (err instanceof CadreError) {
    process.stderr.write(`cadre: ${err.message}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
  process.stderr.write(`cadre: ${errorChain(err).split('\n')[0]}\n`);
  return 1;
}

