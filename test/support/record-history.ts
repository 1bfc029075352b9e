/**
 * Records histories of `runPlan` for the replay test. Run it when a new workflow
 * feature needs coverage: add a scenario, then `npx tsx test/support/record-history.ts`.
 * It records only scenarios that have no file yet: old histories are what running
 * workflows look like, so workflow changes must keep replaying them (use `patched()`).
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import YAML from 'yaml';
import { CadreClient } from '../../src/client/client';
import { validatePlan, formatIssues } from '../../src/spec/validate';
import { startEmbedded } from '../../src/worker/embedded';
import { installConciseLogging } from '../../src/worker/logging';

interface Scenario {
  name: string;
  plan: string;
  /** Answers to give, by wait id, in order. */
  answers: Record<string, string[]>;
  cancelWhenWaitingOn?: string;
}

/** A plan that touches most of runPlan: fan-out, a false `when`, an ask, a failure decided by a human, a timer. */
const fullTour = (name: string) => `
name: ${name}
steps:
  - { id: search, tool: shell, with: { command: "echo '{\\"emails\\": [\\"a\\", \\"b\\", \\"c\\"], \\"urgent\\": false}'" } }
  - { id: enrich, forEach: "{{ steps.search.output.json.emails }}", as: mail, concurrency: 2, tool: shell, with: { command: "echo {{ mail }}-{{ index }}" } }
  - { id: alert, when: "steps.search.output.json.urgent == true", tool: shell, with: { command: "echo alert" } }
  - { id: confirm, ask: { question: "Go?", choices: [yes, no] } }
  - { id: flaky, dependsOn: [confirm], onFailure: ask, retry: { maximumAttempts: 1 }, tool: shell, with: { command: "[ -f marker ] || { touch marker; exit 1; }" } }
  - { id: nap, dependsOn: [flaky], tool: sleep, with: { duration: 100ms } }
output: { enriched: "{{ steps.enrich.output[*].stdout }}", answer: "{{ steps.confirm.output }}" }
`;

const scenarios: Scenario[] = [
  { name: 'run-plan-completed', plan: fullTour('replay-completed'), answers: { confirm: ['yes'], flaky: ['retry'] } },
  // Recorded after activities were named after steps (patch step-activity-ids).
  { name: 'run-plan-step-activity-ids', plan: fullTour('replay-step-ids'), answers: { confirm: ['yes'], flaky: ['retry'] } },
  {
    name: 'run-plan-cancelled',
    plan: `
name: replay-cancelled
steps:
  - { id: booked, tool: shell, with: { command: "echo booked" }, compensate: { tool: shell, with: { command: "echo unbooked" } } }
  - { id: confirm, dependsOn: [booked], ask: { question: "Go on?" } }
`,
    answers: {},
    cancelWhenWaitingOn: 'confirm',
  },
];

async function main(): Promise<void> {
  installConciseLogging('ERROR');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-record-'));
  const embedded = await startEmbedded({ dataDir: dir, ephemeral: true, taskQueue: 'record', log: (l) => console.error(l) });
  const client = await CadreClient.connect({ address: embedded.server.address, namespace: embedded.server.namespace });
  try {
    for (const scenario of scenarios) {
      const file = path.join(__dirname, '..', 'histories', `${scenario.name}.json`);
      if (existsSync(file)) {
        console.error(`kept ${file}`);
        continue;
      }
      const workspace = mkdtempSync(path.join(os.tmpdir(), 'cadre-record-ws-'));
      const result = validatePlan(YAML.parse(scenario.plan), { baseDir: workspace });
      if (!result.ok) throw new Error(formatIssues(result.issues));
      const { workflowId } = await client.start(result.plan, {}, { workflowId: scenario.name, taskQueue: 'record' });
      const pending = Object.fromEntries(Object.entries(scenario.answers).map(([k, v]) => [k, [...v]]));
      await client.watch(workflowId, (d) => {
        for (const w of d.waiting) {
          if (w.id === scenario.cancelWhenWaitingOn) void client.cancel(workflowId, 'recording');
          const answer = pending[w.id]?.shift();
          if (answer) void client.answer(workflowId, w.id, answer).catch((err) => console.error(`answer ${w.id}=${answer}: ${err}`, JSON.stringify(d.waiting)));
        }
      });
      const history = await client.client.workflow.getHandle(workflowId).fetchHistory();
      writeFileSync(file, `${historyToJSON(history)}\n`);
      console.error(`wrote ${file} (${history.events?.length} events)`);
    }
  } finally {
    await client.close();
    await embedded.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
