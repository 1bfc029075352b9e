/**
 * The `ask` section of cadre.config.yaml: the intents `cadre ask` routes requests to. Each has
 * patterns (words and `{slot}`s), slots (with the question to ask when a request leaves one out,
 * and what a value may be), and the plan steps that answer it, reading slots as `inputs.<slot>`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { CadreError } from '../errors/cadre-error';

const name = z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, 'a name of a-z, 0-9 and _ (at most 40)');
/** Slots are read in templates as `inputs.<slot>`: plain names. */
const slotName = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,39}$/, 'a slot name of letters, digits and _ (at most 40)');

const slotSchema = z.strictObject({
  question: z.string().min(1).max(500),
  /** The values it may take (matched without regard to case); or `match`, a regular expression a value must match. */
  choices: z.array(z.string().min(1).max(100)).min(1).max(50).optional(),
  match: z
    .string()
    .max(200)
    .refine((re) => {
      try {
        new RegExp(re);
        return true;
      } catch {
        return false;
      }
    }, 'not a regular expression')
    .optional(),
});

const intentSchema = z.strictObject({
  name,
  description: z.string().min(1).max(500),
  patterns: z.array(z.string().min(1).max(200)).min(1).max(50),
  slots: z.record(slotName, slotSchema).default({}),
  steps: z.array(z.record(z.string(), z.unknown())).min(1),
  output: z.unknown().optional(),
});

const askSchema = z.object({
  ask: z.strictObject({ intents: z.array(intentSchema).min(1) }),
});

export type Intent = z.infer<typeof intentSchema>;
export type Slot = z.infer<typeof slotSchema>;

export function parseRoutes(doc: unknown, source: string): Intent[] {
  const parsed = askSchema.safeParse(doc);
  if (!parsed.success) {
    throw new CadreError(`${source}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`);
  }
  const intents = parsed.data.ask.intents;
  const names = new Set<string>();
  for (const intent of intents) {
    if (names.has(intent.name)) throw new CadreError(`${source}: two intents are named ${intent.name}`);
    names.add(intent.name);
    for (const pattern of intent.patterns) {
      for (const slot of pattern.match(/\{([^}]*)\}/g) ?? []) {
        const slotName = slot.slice(1, -1);
        if (!Object.prototype.hasOwnProperty.call(intent.slots, slotName)) throw new CadreError(`${source}: intent ${intent.name}: pattern "${pattern}" names slot "${slotName}", which is not under its slots`);
      }
    }
  }
  return intents;
}

/** The intents of a config file; a clear error when there is none. */
export function loadRoutes(file: string): Intent[] {
  if (!existsSync(file)) throw new CadreError(`no ${file} here: \`cadre ask\` routes requests with the \`ask\` section of cadre.config.yaml (see examples/people)`);
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CadreError(`${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  return parseRoutes(doc, file);
}
