/**
 * `cadre ask "<request>"`: a request in words, routed to an intent and answered by a plan run.
 * The intent comes from the rules (rules.ts) or, with a model, from an agent step whose
 * structured answer names it; either way the plan is built by plan.ts, validated like a plan file
 * and run by `runPlan`. The answer is the run's output; a slot the request left out is asked for.
 */
import path from 'node:path';
import type { CadreClient } from '../client/client';
import { CadreError, UsageError } from '../errors/cadre-error';
import { formatIssues, validatePlan } from '../plan-format/validate';
import { type AskPlan, buildPlan } from './plan';
import { type Intent, loadRoutes } from './routes';
import { MAX_REQUEST_CHARS, classify } from './rules';

export interface AskOptions {
  /** The config file with the `ask` section; default CADRE_CONFIG or ./cadre.config.yaml. */
  configPath?: string;
  /** Where the plan's tools run; default the config file's directory. */
  workspace?: string;
  /** Classify with this model (an agent step) instead of the rules. */
  model?: string;
  taskQueue?: string;
}

export interface AskStarted extends AskPlan {
  workflowId: string;
  intent: string;
  /** How the intent was found: the rule that matched, or the model. */
  by: { rules: { pattern: string; alsoMatched: string[] } } | { model: string };
  slots: Record<string, string>;
}

export async function ask(client: CadreClient, request: string, options: AskOptions = {}): Promise<AskStarted> {
  const text = request.trim();
  if (text === '') throw new UsageError('ask what? Give the request as one argument, in quotes');
  if (text.length > MAX_REQUEST_CHARS) throw new UsageError(`the request has ${text.length} characters; a request has at most ${MAX_REQUEST_CHARS}`);
  const configPath = path.resolve(options.configPath ?? process.env.CADRE_CONFIG ?? 'cadre.config.yaml');
  const intents = loadRoutes(configPath);
  const workspace = path.resolve(options.workspace ?? path.dirname(configPath));
  const routed = options.model ? await classifyWithModel(client, text, intents, options.model, workspace, options.taskQueue) : byRules(text, intents);
  const built = buildPlan(routed.intent, routed.slots, workspace);
  const workflowId = `ask-${routed.intent.name.replace(/_/g, '-')}-${Date.now().toString(36)}`;
  await client.start(built.plan, built.inputs, { workflowId, ...(options.taskQueue && { taskQueue: options.taskQueue }) });
  return { ...built, workflowId, intent: routed.intent.name, by: routed.by, slots: routed.slots };
}

interface Routed {
  intent: Intent;
  slots: Record<string, string>;
  by: AskStarted['by'];
}

function byRules(text: string, intents: Intent[]): Routed {
  const match = classify(text, intents);
  if (!match) throw noIntent(text, intents);
  return { intent: match.intent, slots: match.slots, by: { rules: { pattern: match.pattern, alsoMatched: match.alsoMatched } } };
}

function noIntent(text: string, intents: Intent[]): CadreError {
  const examples = intents.map((i) => `  ${i.name}: ${i.description} (e.g. "${i.patterns[0].replace(/\{(\w+)\}/g, '<$1>')}")`);
  return new CadreError(`no intent matches "${text}"; cadre can answer:\n${examples.join('\n')}`);
}

/** A one-step plan whose agent names the intent and its slots, as structured output checked against the routes. */
async function classifyWithModel(client: CadreClient, text: string, intents: Intent[], model: string, workspace: string, taskQueue?: string): Promise<Routed> {
  const slotNames = [...new Set(intents.flatMap((i) => Object.keys(i.slots)))];
  const menu = intents.map((i) => `- ${i.name}: ${i.description}; slots: ${Object.keys(i.slots).join(', ') || 'none'}; e.g. ${i.patterns.map((p) => `"${p}"`).join(', ')}`);
  const raw = {
    name: 'ask-route',
    workspace,
    steps: [
      {
        id: 'route',
        agent: {
          model,
          maxTurns: 2,
          system: `Route the request to one intent and fill the slots it states; leave out slots it does not state. Answer "none" when no intent fits.\nIntents:\n${menu.join('\n')}`,
          prompt: text,
          output: {
            type: 'object',
            properties: {
              intent: { type: 'string', enum: [...intents.map((i) => i.name), 'none'] },
              slots: { type: 'object', properties: Object.fromEntries(slotNames.map((s) => [s, { type: 'string' }])), additionalProperties: false },
            },
            required: ['intent'],
            additionalProperties: false,
          },
        },
      },
    ],
    output: '{{ steps.route.output }}',
  };
  const checked = validatePlan(raw, { baseDir: workspace });
  if (!checked.ok) throw new CadreError(`the routing plan does not validate (a bug in cadre): ${formatIssues(checked.issues)}`);
  const { workflowId } = await client.start(checked.plan, {}, { workflowId: `ask-route-${Date.now().toString(36)}`, ...(taskQueue && { taskQueue }) });
  const d = await client.result(workflowId);
  if (d.status !== 'completed') throw new CadreError(`the model could not route the request (${workflowId}): ${d.reason ?? d.status}`);
  const answer = d.output as { intent: string; slots?: Record<string, string> };
  const intent = intents.find((i) => i.name === answer.intent);
  if (!intent) throw noIntent(text, intents);
  // Only the intent's own slots, whatever else the model filled in.
  const slots = Object.fromEntries(Object.entries(answer.slots ?? {}).filter(([name, value]) => name in intent.slots && typeof value === 'string' && value.trim() !== ''));
  return { intent, slots, by: { model } };
}
