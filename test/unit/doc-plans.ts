/**
 * The plans the README and docs show, completed as docs.test.ts completes them (the same
 * extraction, shared from here so more tests can run the plans the docs show).
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export const root = path.join(__dirname, '..', '..');
export const DOCS = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

export interface Block {
  file: string;
  lang: string;
  code: string;
}

/** The fenced blocks of a markdown file, with the language of each. */
export function codeBlocks(file: string): Block[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ file, lang: m[1], code: m[2] }));
}

export const named = (b: Block) => `${b.file}: ${b.code.trim().split('\n')[0].slice(0, 60)}`;

/**
 * A plan, or a plan's fragment completed with what it names and does not define: a name, steps
 * (`- id: ...` lists), the steps and inputs its templates read (as stand-ins), a step for a
 * fragment that only sets plan fields.
 */
export function asPlan(code: string): Record<string, unknown> | undefined {
  if (code.startsWith('# roles/')) return undefined;
  const doc = YAML.parse(code) as unknown;
  let plan: Record<string, unknown>;
  if (Array.isArray(doc) && doc.every((s) => typeof s === 'object' && s !== null && 'id' in s)) plan = { steps: doc };
  else if (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && ('steps' in doc || 'team' in doc || 'sandbox' in doc || 'egress' in doc)) plan = { ...doc };
  else return undefined;
  const steps = (plan.steps as { id: string }[] | undefined) ?? [];
  const ids = new Set(steps.map((s) => s.id));
  const read = (kind: string) => [...new Set([...code.matchAll(new RegExp(`${kind}\\.([A-Za-z][\\w-]*)`, 'g'))].map((m) => m[1]))];
  const standIns = read('steps').filter((id) => !ids.has(id)).map((id) => ({ id, tool: 'shell', with: { command: 'true' } }));
  const inputs = Object.fromEntries(read('inputs').filter((name) => !(plan.inputs as Record<string, unknown> | undefined)?.[name]).map((name) => [name, { type: 'string', default: 'x' }]));
  return {
    name: 'docs-example',
    ...plan,
    ...(Object.keys(inputs).length > 0 && { inputs: { ...(plan.inputs as object), ...inputs } }),
    steps: [...standIns, ...steps, ...(steps.length === 0 ? [{ id: 'only', tool: 'shell', with: { command: 'true' } }] : [])],
  };
}

/** Every plan and plan fragment in the README and docs, with the block it came from. */
export function docPlans(): { block: Block; plan: Record<string, unknown> }[] {
  return DOCS.flatMap(codeBlocks)
    .filter((b) => b.lang === 'yaml')
    .flatMap((block) => {
      const plan = asPlan(block.code);
      return plan ? [{ block, plan }] : [];
    });
}
