/**
 * Records histories of `runPlan` for the replay test. Run it when a new workflow
 * feature needs coverage: add a scenario, then `npx tsx test/support/record-history.ts`.
 * It records only scenarios that have no file yet: old histories are what running
 * workflows look like, so workflow changes must keep replaying them (use `patched()`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import YAML from 'yaml';
import { CadreClient } from '../../src/client/client';
import { endSession, sendMessage, sessionInput } from '../../src/client/sessions';
import { validatePlan, formatIssues } from '../../src/plan-format/validate';
import { startEmbedded } from '../../src/worker/embedded';
import { installConciseLogging } from '../../src/worker/logging';
import { followByPolls } from './poll-follower';

/** A forEach of 1,001 items: two chunks, the second of one item. */
function twoChunks(name: string): string {
  return `
name: ${name}
steps:
  - { id: list, tool: shell, with: { command: "node -e 'console.log(JSON.stringify(Array.from({ length: 1001 }, (_, i) => i)))'" } }
  - { id: loop, forEach: "{{ steps.list.output.json }}", concurrency: 20, tool: fs.write, with: { path: "out/{{ item }}.txt", content: "{{ index }}" } }
output: "{{ steps.loop.output[1000].path }}"
`;
}

interface Scenario {
  name: string;
  plan: string;
  /** Answers to give, by wait id, in order. */
  answers: Record<string, string[]>;
  cancelWhenWaitingOn?: string;
  /** Child workflows to record too: file name to the child id's suffix after the run's id. */
  children?: Record<string, string>;
  /** Prepares the workspace before the plan is compiled. */
  setup?: (workspace: string) => void;
  /** Start with the plan document, as any Temporal client does, instead of the compiled plan. */
  document?: true;
  /** Follow the run's stream with Temporal's own client (poll updates, as Python's does) while it runs. */
  followStream?: true;
  /** Follow these children's streams too (agents with streams of their own), by the suffix of their ids. */
  followChildren?: string[];
  /** Record every run of a run that continued as new: file names of its first and last runs. */
  runs?: { first: string; last: string };
}

/** A git repository with one commit at <workspace>/repo. */
function gitRepository(workspace: string): void {
  const repo = path.join(workspace, 'repo');
  mkdirSync(repo);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=cadre', '-c', 'user.email=cadre@localhost', ...args], { cwd: repo });
  git('init', '--quiet', '--initial-branch=main');
  writeFileSync(path.join(repo, 'app.txt'), 'line 1\n');
  git('add', '.');
  git('commit', '--quiet', '-m', 'first');
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

/** Scripted models for the agent scenario: a decision, and an agent that reads, asks to write, writes. */
function agentScenarios(workspace: string): void {
  writeFileSync(path.join(workspace, 'notes.txt'), 'three notes\n');
  writeFileSync(path.join(workspace, 'decide.yaml'), 'turns:\n  - reply: { text: "Go." }\n');
  writeFileSync(
    path.join(workspace, 'agent.yaml'),
    `turns:
  - reply: { toolCalls: [{ name: fs_read, args: { path: notes.txt } }, { name: shell, args: { command: "echo hi" } }], usage: { inputTokens: 10, outputTokens: 4 } }
  - expect: { lastContains: "three notes" }
    reply: { toolCalls: [{ name: fs_write, args: { path: out.txt, content: done } }], usage: { inputTokens: 20, outputTokens: 5 } }
  - reply: { text: "wrote out.txt", usage: { inputTokens: 30, outputTokens: 3 } }
`,
  );
}

/** A scripted agent whose shell calls meet command rules: allowed, denied, asked (answered always), then allowed as always. */
function ruleScenario(workspace: string): void {
  writeFileSync(
    path.join(workspace, 'rules.yaml'),
    `turns:
  - reply: { toolCalls: [{ name: shell, args: { command: "echo one" } }, { name: shell, args: { command: "true && rm -rf x" } }] }
  - reply: { toolCalls: [{ name: shell, args: { command: "touch made" } }] }
  - reply: { toolCalls: [{ name: shell, args: { command: "touch made" } }] }
  - reply: { text: "done" }
`,
  );
}

/** A scripted agent that writes a call as text (corrected once), then makes the same call three turns in a row (told once). */
/** Three reads of three files, then the answer: each turn after the first goes on from the stored conversation. */
function chainScenario(workspace: string): void {
  const read = (n: number) => `  - reply: { toolCalls: [{ name: fs_read, args: { path: notes-${n}.txt } }] }`;
  for (const n of [1, 2, 3]) writeFileSync(path.join(workspace, `notes-${n}.txt`), `note ${n}\n`);
  writeFileSync(path.join(workspace, 'chain.yaml'), `turns:\n${[1, 2, 3].map(read).join('\n')}\n  - expect: { lastContains: "note 3" }\n    reply: { text: "three notes read" }\n`);
}

function guardScenario(workspace: string): void {
  writeFileSync(path.join(workspace, 'notes.txt'), 'three notes\n');
  const call = '{ toolCalls: [{ name: fs_read, args: { path: notes.txt } }] }';
  writeFileSync(
    path.join(workspace, 'guards.yaml'),
    `turns:
  - reply:
      text: |
        \`\`\`json
        {"name": "fs_read", "arguments": {"path": "notes.txt"}}
        \`\`\`
  - expect: { lastContains: "written as text" }
    reply: ${call}
  - reply: ${call}
  - reply: ${call}
  - expect: { lastContains: "times in a row" }
    reply: { text: "three notes" }
`,
  );
}

/** Scripted models for the team scenario: a worker that asks the architect, then starts a subtask. */
function teamScenarios(workspace: string): void {
  const say = (state: string, extra: string) => `{ name: signal_state, args: { state: ${state}, reason: ok${extra} } }`;
  writeFileSync(
    path.join(workspace, 'worker.yaml'),
    `turns:
  - reply: { toolCalls: [{ name: ask_question, args: { question: "Where does retry go?", canBeAnsweredBy: architect } }] }
  - expect: { lastContains: "The architect answered" }
    reply: { toolCalls: [{ name: spawn_subtask, args: { role: tester, prompt: "test retries" } }] }
  - expect: { lastContains: "impl/sub-1" }
    reply: { toolCalls: [${say('completing', ', result: done')}] }
`,
  );
  writeFileSync(path.join(workspace, 'team.yaml'), `turns:
  - reply: { toolCalls: [${say('completing', ', result: { answer: src/retry.ts, confidence: 0.9 }')}] }
`);
}

/** A team of one worker (scenarios above): it asks the architect, then waits for a subtask. */
const teamPlan = (name: string) => `
name: ${name}
team: { model: "scripted:team.yaml" }
steps:
  - { id: impl, agent: { role: implementer, prompt: "Add retries", model: "scripted:worker.yaml" } }
output: "{{ steps.impl.output }}"
`;

/** One agent that reads, asks to write and writes (agentScenarios), its stream followed. */
const streamedAgentPlan = (name: string) => `
name: ${name}
steps:
  - { id: act, agent: { prompt: "Read notes.txt, write out.txt", model: "scripted:agent.yaml", tools: [fs.read, fs.write, shell], approvals: { fs.write: ask } } }
output: "{{ steps.act.output }}"
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
  // Recorded after the engine-hardening patch: stored outputs read by when, forEach, ask and
  // templates; local activities; default(); a failure decided by a human; a durable sleep.
  {
    name: 'run-plan-hardened',
    plan: `
name: replay-hardened
steps:
  - { id: big, tool: shell, with: { command: "node -e 'console.log(JSON.stringify({ count: 300, items: Array.from({ length: 300 }, (_, i) => ({ name: \\"item-\\" + i, pad: \\"x\\".repeat(300) })) }))'" } }
  - { id: check, when: "steps.big.output.json.items[0].name == 'item-0'", tool: fs.write, with: { path: checked.txt, content: "{{ steps.big.output.json.count }}" } }
  - { id: each, forEach: "{{ steps.big.output.json.items }}", as: it, concurrency: 5, tool: fs.write, with: { path: "out/{{ index }}.txt", content: "{{ it.name }}" } }
  - { id: skipped, when: "false", tool: shell, with: { command: "echo never" } }
  - { id: confirm, dependsOn: [each], ask: { question: "Last is {{ steps.big.output.json.items[299].name }}?", choices: [yes, no] } }
  - { id: flaky, dependsOn: [confirm], onFailure: ask, retry: { maximumAttempts: 1 }, tool: shell, with: { command: "[ -f marker ] || { touch marker; exit 1; }" } }
  - { id: nap, dependsOn: [flaky], tool: sleep, with: { duration: 100ms } }
output: { alert: "{{ steps.skipped.output.stdout | default('none') }}", stdout: "{{ steps.big.output.stdout }}" }
`,
    answers: { confirm: ['yes'], flaky: ['retry'] },
  },
  // Recorded after lean steps (patch lean-steps): successors start as a step settles, the common step
  // is its action's promise; a fan-out and fan-in, a failure skipped and one decided by a human, and
  // the steps that still take the full path (when, forEach).
  {
    name: 'run-plan-lean-steps',
    plan: `
name: replay-lean-steps
steps:
  - { id: big, tool: shell, with: { command: "node -e 'console.log(JSON.stringify({ count: 300, items: Array.from({ length: 300 }, (_, i) => ({ name: \\"item-\\" + i, pad: \\"x\\".repeat(300) })) }))'" } }
  - { id: left, dependsOn: [big], tool: fs.write, with: { path: left.txt, content: "left" } }
  - { id: right, dependsOn: [big], tool: shell, with: { command: "echo right" } }
  - { id: join, dependsOn: [left, right], tool: fs.read, with: { path: left.txt } }
  - { id: broken, dependsOn: [join], onFailure: skip, tool: fs.read, with: { path: missing.txt } }
  - { id: check, when: "steps.big.output.json.items[0].name == 'item-0'", tool: fs.write, with: { path: checked.txt, content: "{{ steps.big.output.json.count }}" } }
  - { id: each, forEach: "{{ steps.big.output.json.items }}", as: it, concurrency: 5, tool: fs.write, with: { path: "out/{{ index }}.txt", content: "{{ it.name }}" } }
  - { id: skipped, when: "false", tool: shell, with: { command: "echo never" } }
  - { id: confirm, dependsOn: [each, broken], ask: { question: "Last is {{ steps.big.output.json.items[299].name }}?", choices: [yes, no] } }
  - { id: flaky, dependsOn: [confirm], onFailure: ask, retry: { maximumAttempts: 1 }, tool: shell, with: { command: "[ -f marker ] || { touch marker; exit 1; }" } }
  - { id: nap, dependsOn: [flaky], tool: sleep, with: { duration: 100ms } }
output: { joined: "{{ steps.join.output.content }}", alert: "{{ steps.skipped.output.stdout | default('none') }}" }
`,
    answers: { confirm: ['yes'], flaky: ['retry'] },
  },
  // Recorded after the patch baseline (patch plan-baseline): one marker for the eight patches a run
  // took before; a fan-out and fan-in, a skip, a `when`, a forEach of 1,001 items in two chunks, an
  // ask and a failure decided by a human. Run with CADRE_ANALYTICS_DIR set, as for the analytics runs.
  {
    name: 'run-plan-baseline',
    plan: `
name: replay-baseline
steps:
  - { id: list, tool: shell, with: { command: "node -e 'console.log(JSON.stringify(Array.from({ length: 1001 }, (_, i) => i)))'" } }
  - { id: left, dependsOn: [list], tool: fs.write, with: { path: left.txt, content: "left" } }
  - { id: right, dependsOn: [list], tool: shell, with: { command: "echo right" } }
  - { id: join, dependsOn: [left, right], tool: fs.read, with: { path: left.txt } }
  - { id: broken, dependsOn: [join], onFailure: skip, tool: fs.read, with: { path: missing.txt } }
  - { id: check, when: "steps.list.output.json[0] == 0", tool: fs.write, with: { path: checked.txt, content: "{{ steps.list.output.json[1000] }}" } }
  - { id: loop, forEach: "{{ steps.list.output.json }}", concurrency: 20, tool: fs.write, with: { path: "out/{{ item }}.txt", content: "{{ index }}" } }
  - { id: confirm, dependsOn: [loop, broken], ask: { question: "Last is {{ steps.loop.output[1000].path }}?", choices: [yes, no] } }
  - { id: flaky, dependsOn: [confirm], onFailure: ask, retry: { maximumAttempts: 1 }, tool: shell, with: { command: "[ -f marker ] || { touch marker; exit 1; }" } }
  - { id: nap, dependsOn: [flaky], tool: sleep, with: { duration: 100ms } }
output: { joined: "{{ steps.join.output.content }}", checked: "{{ steps.check.output.path }}" }
`,
    answers: { confirm: ['yes'], flaky: ['retry'] },
  },
  // Steps in git worktrees: two tasks edited, committed and merged; leases released at the end.
  {
    name: 'run-plan-worktrees',
    plan: `
name: replay-worktrees
steps:
  - { id: edit_a, worktree: { repo: repo, task: a }, tool: fs.write, with: { path: a.txt, content: "from a" } }
  - { id: save_a, dependsOn: [edit_a], worktree: { repo: repo, task: a }, tool: git.commit, with: { message: "task a" } }
  - { id: edit_b, worktree: { repo: repo, task: b, cleanup: always }, tool: shell, with: { command: "echo b > b.txt" } }
  - { id: merge_a, dependsOn: [save_a], worktree: { repo: repo, task: a }, tool: git.merge }
  - { id: status_b, dependsOn: [edit_b], worktree: { repo: repo, task: b, cleanup: always }, tool: git.status }
`,
    answers: {},
    setup: gitRepository,
  },
  // A run bound to its worker's host (patch workspace-hosts): tool, fs and worktree activities on the host's queue.
  {
    name: 'run-plan-workspace-host',
    plan: `
name: replay-workspace-host
steps:
  - { id: where, tool: shell, with: { command: "pwd" } }
  - { id: note, dependsOn: [where], tool: fs.write, with: { path: note.txt, content: "on its host" } }
  - { id: edit, dependsOn: [note], worktree: { repo: repo, task: t }, tool: shell, with: { command: "echo changed > app.txt" } }
  - { id: save, dependsOn: [edit], worktree: { repo: repo, task: t }, tool: git.commit, with: { message: "on its host", all: true } }
  - { id: act, dependsOn: [save], agent: { prompt: "Read notes.txt, write out.txt", model: "scripted:agent.yaml", tools: [fs.read, fs.write, shell], approvals: { fs.write: ask } } }
`,
    answers: { 'act/call-2.1': ['approve'] },
    children: { 'agent-task-workspace-host': '/act' },
    setup: (workspace) => {
      gitRepository(workspace);
      agentScenarios(workspace);
    },
  },
  // A forEach of 1,200 items: its run (two chunks) and its first chunk, a runItems child workflow.
  {
    name: 'run-plan-foreach-chunks',
    plan: `
name: replay-chunks
steps:
  - { id: list, tool: shell, with: { command: "node -e 'console.log(JSON.stringify(Array.from({ length: 1200 }, (_, i) => i)))'" } }
  - { id: loop, forEach: "{{ steps.list.output.json }}", concurrency: 20, tool: fs.write, with: { path: "out/{{ item }}.txt", content: "{{ index }}" } }
output: "{{ steps.loop.output[1199].path }}"
`,
    answers: {},
    children: { 'run-items-chunk': '/loop/0' },
  },
  // Recorded after chunks got a longer workflow task timeout (patch foreach-chunk-task-timeout): 1,001 items, two chunks.
  {
    name: 'run-plan-foreach-chunk-timeout',
    plan: twoChunks('replay-chunk-timeout'),
    answers: {},
  },
  // Recorded after a chunk's items awaited no condition unless paused (patch lean-items): 1,001 items, and the chunk of the last.
  {
    name: 'run-plan-lean-items',
    plan: twoChunks('replay-lean-items'),
    answers: {},
    children: { 'run-items-lean': '/loop/1' },
  },
  // Agent steps: a decision, then an agent whose parallel tool calls run and whose write waits for approval.
  {
    name: 'run-plan-agents',
    plan: `
name: replay-agents
steps:
  - { id: gate, decide: { prompt: "Go or stop?", choices: [go, stop], model: "scripted:decide.yaml" } }
  - id: act
    when: "steps.gate.output == 'go'"
    agent: { prompt: "Read notes.txt, write out.txt", model: "scripted:agent.yaml", tools: [fs.read, fs.write, shell], approvals: { fs.write: ask } }
output: "{{ steps.act.output }}"
`,
    answers: { 'act/call-2.1': ['approve'] },
    children: { 'agent-task': '/act', 'agent-task-decide': '/gate' },
    setup: agentScenarios,
  },
  // A streamed agent (patch run-stream): its turns publish to the run's stream, which drains before the run ends.
  {
    name: 'run-plan-streamed',
    plan: streamedAgentPlan('replay-streamed'),
    answers: { 'act/call-2.1': ['approve'] },
    children: { 'agent-task-streamed': '/act' },
    setup: agentScenarios,
    followStream: true,
  },
  // Shell calls judged by command rules in a local activity (patch command-rules); an answer of always.
  {
    name: 'run-plan-command-rules',
    plan: `
name: replay-command-rules
steps:
  - id: act
    agent:
      prompt: "Work"
      model: "scripted:rules.yaml"
      tools: [shell]
      approvals: { shell: { rules: [{ prefix: [echo], decision: allow }, { prefix: [rm], decision: deny }], otherwise: ask } }
output: "{{ steps.act.output }}"
`,
    answers: { 'act/call-2.1': ['always'] },
    children: { 'agent-task-command-rules': '/act' },
    setup: ruleScenario,
  },
  // The turn guards (patch turn-guards): a call written as text corrected once, a loop of one call pointed out once.
  {
    name: 'run-plan-turn-guards',
    plan: `
name: replay-turn-guards
steps:
  - { id: act, agent: { prompt: "Read notes.txt", model: "scripted:guards.yaml", tools: [fs.read] } }
output: "{{ steps.act.output }}"
`,
    answers: {},
    children: { 'agent-task-turn-guards': '/act' },
    setup: guardScenario,
  },
  // A team: a worker asks a question a specialist answers, then waits for a subtask.
  {
    name: 'run-plan-team',
    plan: teamPlan('replay-team'),
    answers: {},
    children: { 'team-worker': '/impl', 'team-specialist': '/consult-1', 'team-subtask': '/impl/sub-1' },
    setup: teamScenarios,
  },
  // The same team after the stuck watch moved into an activity (patch stuck-watch): each worker runs one.
  {
    name: 'run-plan-team-watch',
    plan: teamPlan('replay-team-watch'),
    answers: {},
    children: { 'team-worker-watch': '/impl', 'team-subtask-watch': '/impl/sub-1' },
    setup: teamScenarios,
  },
  // Agents with streams of their own (patch agent-streams, in plan-baseline-2): the run's stream says
  // where, each agent's holds its turns; both read by poll updates while they run, which pins what
  // each publishes. The worker's moves go to the run in batches (patch worker-reports).
  {
    name: 'run-plan-agent-streams',
    plan: streamedAgentPlan('replay-agent-streams'),
    answers: { 'act/call-2.1': ['approve'] },
    children: { 'agent-task-own-stream': '/act' },
    setup: agentScenarios,
    followStream: true,
    followChildren: ['/act'],
  },
  // A team whose workers report their moves in batches (patch worker-reports) and stream on their own.
  {
    name: 'run-plan-team-reports',
    plan: teamPlan('replay-team-reports'),
    answers: {},
    children: { 'team-worker-reports': '/impl', 'team-subtask-reports': '/impl/sub-1' },
    setup: teamScenarios,
  },
  // A run past its history budget (the recorder's server suggests continuing as new at 150 events)
  // continues as new between steps (patch plan-continue-as-new): its first run, and its last.
  {
    name: 'run-plan-continued',
    plan: `
name: replay-continued
steps:
${Array.from({ length: 40 }, (_, i) => `  - { id: s${i}, ${i > 0 ? `dependsOn: [s${i - 1}], ` : ''}tool: shell, with: { command: "echo ${i}" } }`).join('\n')}
  - { id: last, dependsOn: [s39], echo: { first: "{{ steps.s0.output.stdout }}", last: "{{ steps.s39.output.stdout }}" } }
output: "{{ steps.last.output }}"
`,
    answers: {},
    runs: { first: 'run-plan-continued', last: 'run-plan-continued-last' },
  },
  // Started with the plan document (as the temporal CLI or Python would): validated by a local activity.
  {
    name: 'run-plan-document',
    plan: `
name: replay-document
workspace: .
steps:
  - { id: hello, tool: shell, with: { command: "echo hello" } }
  - { id: confirm, dependsOn: [hello], ask: { question: "Go?", choices: [yes, no] } }
output: "{{ steps.hello.output.stdout }} {{ steps.confirm.output }}"
`,
    answers: { confirm: ['yes'] },
    document: true,
  },
  // An ask without a timeout, shown in the timeline by a renewed timer (patch visible-waits).
  {
    name: 'run-plan-visible-waits',
    plan: `
name: replay-visible-waits
steps:
  - { id: confirm, ask: { question: "Go?", choices: [yes, no] } }
  - { id: after, dependsOn: [confirm], tool: shell, with: { command: "echo {{ steps.confirm.output }}" } }
`,
    answers: { confirm: ['yes'] },
  },
  // A finished run recorded in the analytics database by a local activity (patch run-analytics);
  // run with CADRE_ANALYTICS_DIR set to a temporary folder.
  {
    name: 'run-plan-analytics',
    plan: `
name: replay-analytics
steps:
  - { id: fetch-data, tool: shell, with: { command: "echo fetched" } }
  - { id: confirm, dependsOn: [fetch-data], ask: { question: "Go?", choices: [yes, no] } }
  - { id: never, dependsOn: [confirm], when: "false", tool: shell, with: { command: "echo never" } }
`,
    answers: { confirm: ['yes'] },
  },
  {
    name: 'run-plan-analytics-cancelled',
    plan: `
name: replay-analytics-cancelled
steps:
  - { id: fetch-data, tool: shell, with: { command: "echo fetched" } }
  - { id: confirm, dependsOn: [fetch-data], ask: { question: "Go?", choices: [yes, no] } }
`,
    answers: {},
    cancelWhenWaitingOn: 'confirm',
  },
  // Turns sent as the messages since the last, the conversation before them stored (patch agent-conversation-chain).
  {
    name: 'run-plan-conversation-chain',
    plan: `
name: replay-conversation-chain
steps:
  - { id: act, agent: { prompt: "Read the notes", model: "scripted:chain.yaml", tools: [fs.read] } }
output: "{{ steps.act.output }}"
`,
    answers: {},
    children: { 'agent-task-conversation-chain': '/act' },
    setup: chainScenario,
  },
  // Patch baselines: the run records one marker (plan-baseline-3 then, with workspace-hosts), and each of
  // its team's workers one (agent-baseline) for the ten patches an agent took by itself before.
  {
    name: 'run-plan-baselines',
    plan: teamPlan('replay-baselines'),
    answers: {},
    children: { 'team-worker-baseline': '/impl', 'team-subtask-baseline': '/impl/sub-1' },
    setup: teamScenarios,
  },
  // plan-baseline-4: no upsert of the `running` the run started with (waiting and back, and the end, still upserted),
  // a wait's visible timer and forEach items without a patch marker of their own, items awaiting no condition unless paused.
  {
    name: 'run-plan-status-as-started',
    plan: `
name: replay-status-as-started
steps:
  - { id: first, tool: shell, with: { command: "echo '[1, 2, 3, 4, 5]'" } }
  - { id: confirm, dependsOn: [first], ask: { question: "Go on?", choices: [yes, no] } }
  - { id: each, dependsOn: [confirm], forEach: "{{ steps.first.output.json }}", concurrency: 2, tool: fs.write, with: { path: "out/{{ item }}.txt", content: "{{ index }}" } }
  - { id: last, dependsOn: [each], tool: fs.write, with: { path: last.txt, content: "{{ steps.confirm.output }}" } }
`,
    answers: { confirm: ['yes'] },
  },
];

interface SessionScenario {
  files: { first: string; last: string };
  id: string;
  reply: string;
  messages: number;
  continueEvery: number;
  /** Follow the session's stream by poll updates from its second message on. */
  follow?: true;
}

/**
 * A session that keeps 4 messages in context and continues as new every few: its first run (ending
 * in continue-as-new) and its last (starting from the carried state, ended by signal).
 */
const SESSIONS: SessionScenario[] = [
  { files: { first: 'session-first-run', last: 'session-after-continue' }, id: 'replay-session', reply: 'noted', messages: 7, continueEvery: 3 },
  // Streamed: its stream carried across continue-as-new, and read by poll updates while it runs.
  { files: { first: 'session-streamed-first-run', last: 'session-streamed-after-continue' }, id: 'replay-session-streamed', reply: 'streamed and noted', messages: 5, continueEvery: 2, follow: true },
  // The session publishes its turns' ends itself, its activities only the text (patch session-own-events).
  { files: { first: 'session-own-events-first-run', last: 'session-own-events-after-continue' }, id: 'replay-session-own-events', reply: 'noted in its own words', messages: 5, continueEvery: 2, follow: true },
  // Each run records one patch marker (session-baseline) for the five a run took by itself before.
  { files: { first: 'session-baseline-first-run', last: 'session-baseline-after-continue' }, id: 'replay-session-baseline', reply: 'noted once', messages: 5, continueEvery: 2 },
  // Followed by poll updates: each continued run carries that a reader follows, and its end waits for the reader (streamFollowed).
  { files: { first: 'session-followed-first-run', last: 'session-followed-after-continue' }, id: 'replay-session-followed', reply: 'noted for the reader', messages: 5, continueEvery: 2, follow: true },
];

async function recordSession(client: CadreClient, scenario: SessionScenario, dir: string): Promise<void> {
  const { files, id } = scenario;
  const target = (name: string) => path.join(__dirname, '..', 'histories', `${name}.json`);
  if (existsSync(target(files.first))) {
    console.error(`kept ${target(files.first)}`);
    return;
  }
  const workspace = mkdtempSync(path.join(dir, 'ws-'));
  writeFileSync(path.join(workspace, 'chat.yaml'), `cycle: true\nturns:\n  - expect: { lastRole: user }\n    reply: { text: "${scenario.reply}", usage: { inputTokens: 5, outputTokens: 1 } }\n`);
  const start = sessionInput({ model: `scripted:${path.join(workspace, 'chat.yaml')}`, workspace, keep: 4, continueEvery: scenario.continueEvery });
  await sendMessage(client, id, 'message 1', start, { taskQueue: 'record' });
  const firstRunId = (await client.client.workflow.getHandle(id).describe()).runId;
  const following = scenario.follow ? followByPolls(client.client, id, 'run_completed') : undefined;
  for (let i = 2; i <= scenario.messages; i++) await sendMessage(client, id, `message ${i}`, start, { taskQueue: 'record' });
  await endSession(client, id);
  await client.client.workflow.getHandle(id).result();
  if (following) console.error(`read ${await following} stream items by poll update across continue-as-new`);
  for (const [name, runId] of [[files.first, firstRunId], [files.last, undefined]] as const) {
    const history = await client.client.workflow.getHandle(id, runId).fetchHistory();
    writeFileSync(target(name), `${historyToJSON(history)}\n`);
    console.error(`wrote ${target(name)} (${history.events?.length} events)`);
  }
}

async function main(): Promise<void> {
  installConciseLogging('ERROR');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-record-'));
  // Temporal suggests continuing as new at 150 events, not 4,096: runs recorded now that pass that continue as new (run-plan-continued).
  const embedded = await startEmbedded({ dataDir: dir, ephemeral: true, taskQueue: 'record', log: (l) => console.error(l), dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 150 } });
  const client = await CadreClient.connect({ address: embedded.server.address, namespace: embedded.server.namespace });
  try {
    for (const scenario of scenarios) {
      const file = path.join(__dirname, '..', 'histories', `${scenario.name}.json`);
      if (existsSync(file)) {
        console.error(`kept ${file}`);
        continue;
      }
      const workspace = mkdtempSync(path.join(dir, 'ws-'));
      scenario.setup?.(workspace);
      const result = validatePlan(YAML.parse(scenario.plan), { baseDir: workspace });
      if (!result.ok) throw new Error(formatIssues(result.issues));
      const { workflowId } = scenario.document
        ? await client.client.workflow.start('runPlan', { workflowId: scenario.name, taskQueue: 'record', args: [{ document: YAML.parse(scenario.plan), baseDir: workspace }] })
        : await client.start(result.plan, {}, { workflowId: scenario.name, taskQueue: 'record' });
      const following = scenario.followStream ? followByPolls(client.client, workflowId, 'run_completed') : undefined;
      const children = (scenario.followChildren ?? []).map((suffix) => followByPolls(client.client, `${workflowId}${suffix}`, 'agent_ended'));
      const pending = Object.fromEntries(Object.entries(scenario.answers).map(([k, v]) => [k, [...v]]));
      await client.watch(workflowId, (d) => {
        for (const w of d.waiting) {
          if (w.id === scenario.cancelWhenWaitingOn) void client.cancel(workflowId, 'recording');
          const answer = pending[w.id]?.shift();
          if (answer) void client.answer(workflowId, w.id, answer).catch((err) => console.error(`answer ${w.id}=${answer}: ${err}`, JSON.stringify(d.waiting)));
        }
      });
      if (following) console.error(`read ${await following} stream items by poll update`);
      for (const child of children) console.error(`read ${await child} items of a child's stream by poll update`);
      const records: Record<string, [string, string?]> = {
        [scenario.name]: [workflowId],
        ...Object.fromEntries(Object.entries(scenario.children ?? {}).map(([name, suffix]) => [name, [`${workflowId}${suffix}`]])),
      };
      if (scenario.runs) {
        // Back from the last run to the first, by the run each continued.
        let first: string | undefined;
        for (let runId: string | undefined; ; ) {
          const history = await client.client.workflow.getHandle(workflowId, runId).fetchHistory();
          const before = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
          if (!before) break;
          first = runId = before;
        }
        if (!first) throw new Error(`${scenario.name} did not continue as new`);
        records[scenario.runs.first] = [workflowId, first];
        records[scenario.runs.last] = [workflowId];
      }
      for (const [name, [id, runId]] of Object.entries(records)) {
        const history = await client.client.workflow.getHandle(id, runId).fetchHistory();
        const target = path.join(__dirname, '..', 'histories', `${name}.json`);
        writeFileSync(target, `${historyToJSON(history)}\n`);
        console.error(`wrote ${target} (${history.events?.length} events)`);
      }
    }
    for (const session of SESSIONS) await recordSession(client, session, dir);
  } finally {
    await client.close();
    await embedded.stop();
    // The server's data and the scenarios' workspaces: what is kept is in test/histories.
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
