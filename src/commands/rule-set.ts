/**
 * Command rule sets as data: the types, the shorthand map read as prefixes, and which decision is
 * strictest. No parser and no schema here, so workflow code and the plan compiler can use it.
 */

export const RULE_DECISIONS = ['allow', 'ask', 'deny'] as const;
export type RuleDecision = (typeof RULE_DECISIONS)[number];

export interface CommandRule {
  /** The first words of the command: the program (a bare name also matches /usr/bin/NAME), then arguments. */
  prefix: string[];
  decision: RuleDecision;
  /** Commands this rule must match (checked by checkRuleExamples): documentation that is tested. */
  match?: string[];
  /** Commands this rule must not match. */
  notMatch?: string[];
}

export interface CommandRuleSet {
  rules: CommandRule[];
  /** For a segment no rule matches; `ask` when left out. */
  otherwise?: RuleDecision;
}

/** `{ "git push": "deny", "rm -rf *": "ask", "*": "allow" }`: a prefix per key; `*` (or `otherwise`) alone is `otherwise`. */
export type CommandRuleShorthand = Record<string, RuleDecision>;

export type CommandRuleSetInput = CommandRuleSet | CommandRuleShorthand;

export const MAX_RULES = 200;
export const MAX_PREFIX_WORDS = 32;
export const MAX_EXAMPLE_LENGTH = 4096;
export const MAX_EXAMPLES = 32;

/** Below KEPT_WORD_LENGTH (segments.ts), so a clipped argv word never equals a rule's word by accident. */
export const MAX_WORD_LENGTH = 200;

/** The object form is told apart by its `rules` list; anything else is the shorthand map. */
export function isObjectForm(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Array.isArray((value as { rules?: unknown }).rules);
}

const GLOB_CHARACTERS = /[*?[\]]/;
const SHELL_CHARACTERS = /['"`$;&|<>(){}\\]/;

/** Why a shorthand key is not a prefix, or undefined when it is one. */
export function shorthandKeyProblem(key: string): string | undefined {
  const words = shorthandWords(key);
  if (words === undefined) return undefined; // `*`: otherwise
  const stripped = words.join(' ');
  if (GLOB_CHARACTERS.test(stripped)) {
    return `"${key}" is a glob; rules are now prefixes of words, matched against every command the shell runs: write the words commands start with, e.g. "git push": deny (it also matches "git push origin main"); only a final * is accepted, for old keys like "git push*"`;
  }
  if (SHELL_CHARACTERS.test(stripped)) {
    return `"${key}" holds quotes or shell syntax; a key is plain words separated by spaces (for a word with a space or quote, use { rules: [{ prefix: [...], decision }] })`;
  }
  if (words.length === 0) return 'a rule needs at least the program name';
  if (words.length > MAX_PREFIX_WORDS) return `a prefix has at most ${MAX_PREFIX_WORDS} words`;
  if (words.some((word) => word.length > MAX_WORD_LENGTH)) return `a word of a prefix has at most ${MAX_WORD_LENGTH} characters`;
  return undefined;
}

/** A shorthand key's words, legacy trailing `*` dropped; undefined for the catch-all (`*` or `otherwise`). */
function shorthandWords(key: string): string[] | undefined {
  const trimmed = key.trim();
  if (trimmed === '*' || trimmed === 'otherwise') return undefined;
  return trimmed
    .replace(/\s*\*$/, '')
    .split(/\s+/)
    .filter((word) => word !== '');
}

/** Either form as `{ rules, otherwise }`; a shorthand's `*` key becomes `otherwise`. Throws on a key that is no prefix. */
export function normalizeRuleSet(input: CommandRuleSetInput): CommandRuleSet {
  if (isObjectForm(input)) return input as CommandRuleSet;
  const rules: CommandRule[] = [];
  let otherwise: RuleDecision | undefined;
  for (const [key, decision] of Object.entries(input as CommandRuleShorthand)) {
    const problem = shorthandKeyProblem(key);
    if (problem) throw new Error(problem);
    const prefix = shorthandWords(key);
    if (prefix === undefined) otherwise = decision;
    else rules.push({ prefix, decision });
  }
  return { rules, ...(otherwise && { otherwise }) };
}

export const STRICTNESS: Record<RuleDecision, number> = { allow: 0, ask: 1, deny: 2 };

export function strictest(decisions: RuleDecision[]): RuleDecision {
  return decisions.reduce<RuleDecision>((worst, decision) => (STRICTNESS[decision] > STRICTNESS[worst] ? decision : worst), 'allow');
}

