/**
 * `npm run demo`: the examples end to end on an embedded Temporal server, non-interactively (the
 * demo answers the plans' questions itself): email-triage, then the feature-team. Offline on
 * scripted models, or with CADRE_MODEL set on that model instead.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadPlan } from '../plan-format/load';
import type { CompiledPlan } from '../plan-format/types';
import { type Embedded, startEmbedded } from '../worker/embedded';
import { CadreClient, type ServerInfo, readServerInfo } from './client';
import { ProgressPrinter, renderDiagnostics } from './format';
import { packageRoot } from '../package-root';
import { INSTALL_HINT, bubblewrapAvailability } from '../sandbox/bubblewrap';


export const DEMO_DIR = path.join(packageRoot(), 'examples', 'email-triage');
export const TEAM_DEMO_DIR = path.join(packageRoot(), 'examples', 'feature-team');

export interface DemoOptions {
  dataDir: string;
  out: (line: string) => void;
  info: (line: string) => void;
}

export async function runDemo({ dataDir, out, info }: DemoOptions): Promise<string> {
  // A `cadre dev` running here already has a server and a worker: use both.
  const live = process.env.TEMPORAL_ADDRESS ? undefined : readServerInfo(process.cwd());
  let embedded: Embedded | undefined;
  if (live) info(`using the running \`cadre dev\` at ${live.address} and its worker`);
  else {
    const sandbox = bubblewrapAvailability();
    if (!sandbox.ok && !process.env.CADRE_SANDBOX) {
      // The examples' tools are cadre's own scripts: run unconfined rather than not at all, and say so.
      info(`warning: ${sandbox.reason.split(':')[0]} (${INSTALL_HINT}): the demo runs its example tools unconfined (sandbox: none)`);
      process.env.CADRE_SANDBOX = 'none';
    }
    info('starting Temporal and a worker...');
    embedded = await startEmbedded({ dataDir, port: 7233, uiPort: 8233, log: info });
  }
  const server: ServerInfo = embedded?.server ?? (live as ServerInfo);
  const interrupted = () => {
    info('interrupted: stopping...');
    void (embedded?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const client = await CadreClient.connect({ address: server.address, namespace: server.namespace, uiUrl: server.uiUrl });
  try {
    out(`Temporal: ${server.address}${server.uiUrl ? `   Web UI: ${server.uiUrl}` : ''}`);
    let status = 'completed';
    for (const example of [DEMO_DIR, TEAM_DEMO_DIR]) {
      status = await runExample(client, example, dataDir, out, live !== undefined);
      if (status !== 'completed') break;
    }
    return status;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await client.close();
    await embedded?.stop();
  }
}

async function runExample(client: CadreClient, example: string, dataDir: string, out: (line: string) => void, live: boolean): Promise<string> {
  // A fresh copy of the example, so the demo can write files and be run again.
  const workspacesDir = path.resolve(dataDir, 'demo');
  mkdirSync(workspacesDir, { recursive: true });
  const workspace = mkdtempSync(path.join(workspacesDir, `${path.basename(example)}-`));
  cpSync(example, workspace, { recursive: true });
  const plan = onModel(await loadPlan(path.join(workspace, 'plan.yaml'), workspace), process.env.CADRE_MODEL);
  out('');
  const { workflowId } = await client.start(plan, {}, { workflowId: `demo-${path.basename(workspace)}` });
  out(`started plan "${plan.name}" as ${workflowId} in ${workspace}`);
  const link = client.uiLink(workflowId);
  if (link) out(`follow it in the Web UI: ${link}`);
  const printer = new ProgressPrinter(workflowId, out);
  const answered = new Set<string>();
  const final = await client.watch(workflowId, (d) => {
    printer.update(d);
    for (const w of d.waiting) {
      if ((w.kind !== 'ask' && w.kind !== 'approval') || answered.has(w.id)) continue;
      answered.add(w.id);
      const answer = w.choices?.[0] ?? 'yes';
      const command = w.kind === 'approval' ? `cadre approve ${workflowId} ${w.id}` : `cadre answer ${workflowId} ${w.id} ${answer}`;
      out(`  (the demo answers "${answer}" for you, as \`${command}\` would)`);
      void client.answer(workflowId, w.id, answer).catch((err: Error) => out(`answer failed: ${err.message}`));
    }
  });
  out('');
  out(renderDiagnostics(workflowId, final));
  const report = path.join(workspace, 'REPORT.md');
  if (final.status === 'completed' && existsSync(report)) out(`\n${readFileSync(report, 'utf8').trim()}`);
  if (link) out(`\nhistory in the Web UI${live ? '' : ' (while `npx cadre dev` runs)'}: ${link}`);
  return final.status;
}

/** With CADRE_MODEL set, the examples' scripted models give way to it (a real provider, with its key). */
function onModel(plan: CompiledPlan, model: string | undefined): CompiledPlan {
  if (!model) return plan;
  const swap = (m: string | undefined) => (m?.startsWith('scripted:') ? model : m);
  return {
    ...plan,
    ...(plan.team && { team: { ...plan.team, ...(plan.team.model !== undefined && { model: swap(plan.team.model) }) } }),
    steps: plan.steps.map((step) => {
      const { action } = step;
      if (action.kind === 'agent') return { ...step, action: { ...action, agent: { ...action.agent, model: swap(action.agent.model) } } };
      if (action.kind === 'decide') return { ...step, action: { ...action, decide: { ...action.decide, model: swap(action.decide.model) } } };
      return step;
    }),
  };
}
