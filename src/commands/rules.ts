/**
 * Command rules: people write prefixes of words (`git push: deny`), and every simple command a
 * shell command runs (see parse.ts) is judged by them. The strictest decision wins, for a segment
 * over the rules matching it and for a command over its segments, so no `&&`, `$(...)` or
 * `sh -c` can step around a deny. What the rules cannot see is at least `ask`: a computed program,
 * a script file a shell runs, a program of the workspace (`./zap`) no rule names by its path. A
 * redirection that writes a file is judged as a command no rule names (`otherwise`). Pure apart
 * from the parser's one-time load.
 */
import { z } from 'zod';
import { baseName, parseCommand, PRIVILEGED_WRAPPERS, type CommandSegment, type ParsedCommand } from './parse';
import {
  MAX_EXAMPLE_LENGTH,
  MAX_EXAMPLES,
  MAX_PREFIX_WORDS,
  MAX_RULES,
  MAX_WORD_LENGTH,
  RULE_DECISIONS,
  STRICTNESS,
  isObjectForm,
  normalizeRuleSet,
  shorthandKeyProblem,
  strictest,
  type CommandRule,
  type CommandRuleSet,
  type CommandRuleSetInput,
  type RuleDecision,
} from './rule-set';

export { normalizeRuleSet, strictest };

// ---------------------------------------------------------------------------------------------
// Schema.

const decisionSchema = z.enum(RULE_DECISIONS, { error: (issue) => `${JSON.stringify(issue.input)} is not a decision: use allow, ask or deny` });
const exampleSchema = z.string().min(1).max(MAX_EXAMPLE_LENGTH);

const ruleSchema = z.strictObject({
  prefix: z.array(z.string().min(1).max(MAX_WORD_LENGTH)).min(1).max(MAX_PREFIX_WORDS),
  decision: decisionSchema,
  match: z.array(exampleSchema).max(MAX_EXAMPLES).optional(),
  notMatch: z.array(exampleSchema).max(MAX_EXAMPLES).optional(),
});

const ruleSetObjectSchema = z.strictObject({
  rules: z.array(ruleSchema).max(MAX_RULES),
  otherwise: decisionSchema.optional(),
});

const shorthandSchema = z
  .record(z.string().max(MAX_WORD_LENGTH * 8), decisionSchema)
  .refine((map) => Object.keys(map).length <= MAX_RULES, { error: `at most ${MAX_RULES} rules` })
  .superRefine((map, ctx) => {
    for (const key of Object.keys(map)) {
      const problem = shorthandKeyProblem(key);
      if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem, input: key });
    }
  });

/**
 * A rule set as written: `{ rules: [{ prefix, decision, match?, notMatch? }], otherwise? }`, or the
 * shorthand `{ "git push": deny, "rm -rf *": ask }` (legacy globs ending in `*` are read as prefixes).
 * Parsing keeps the form written; normalizeRuleSet gives the object form.
 */
export const commandRuleSetSchema: z.ZodType<CommandRuleSetInput> = z.unknown().transform((value, ctx) => {
  // One form's issues only: a union would report both forms' complaints as "Invalid input".
  const result = isObjectForm(value) ? ruleSetObjectSchema.safeParse(value) : shorthandSchema.safeParse(value);
  if (result.success) return result.data;
  for (const issue of result.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path, input: value });
  return z.NEVER;
});

// ---------------------------------------------------------------------------------------------
// Matching and deciding.

type Match = 'yes' | 'maybe' | 'no';

/** Directories whose programs an allow rule's bare name stands for (a program elsewhere could be anything). */
const SYSTEM_PROGRAM = /^\/(usr\/(local\/)?)?s?bin\/[^/]+$|^\/opt\/homebrew\/bin\/[^/]+$/;

/** Does the rule's first word name argv[0]? */
function programMatches(ruleProgram: string, argv0: string, forAllow: boolean): Match {
  if (ruleProgram.includes('/')) return ruleProgram === argv0 ? 'yes' : 'no';
  const name = baseName(argv0);
  if (name !== ruleProgram) {
    // On a case-insensitive file system (macOS) `RM` runs rm: a person looks.
    return !forAllow && name.toLowerCase() === ruleProgram.toLowerCase() ? 'maybe' : 'no';
  }
  // `/tmp/x/git status` or `./git status` may be any program: it is a `git` for deny and ask, not for allow.
  return !argv0.includes('/') || !forAllow || SYSTEM_PROGRAM.test(argv0) ? 'yes' : 'maybe';
}

function prefixMatches(prefix: string[], argv: string[], dynamic: ReadonlySet<number>, moreArgs: boolean, forAllow: boolean): Match {
  let result: Match = 'yes';
  for (let i = 0; i < prefix.length; i++) {
    if (i >= argv.length) return moreArgs ? 'maybe' : 'no';
    // A word known only at run time may be anything, or several words, or none.
    if (dynamic.has(i)) return 'maybe';
    if (i === 0) {
      const program = programMatches(prefix[0], argv[0], forAllow);
      if (program === 'no') return 'no';
      if (program === 'maybe') result = 'maybe';
    } else if (argv[i] !== prefix[i]) return 'no';
  }
  return result;
}

/**
 * Allow rules match only the program that really runs, so `timeout: allow` cannot allow
 * `timeout 5 rm x`; deny and ask rules also match each wrapper (`sudo: deny`).
 */
export function ruleMatches(rule: Pick<CommandRule, 'prefix' | 'decision'>, segment: CommandSegment): Match {
  if (segment.argv.length === 0) return 'no';
  const forAllow = rule.decision === 'allow';
  const own = prefixMatches(rule.prefix, segment.argv, new Set(segment.dynamicArgs), segment.moreArgs === true, forAllow);
  if (forAllow || own === 'yes') return own;
  let best = own;
  for (const wrapper of segment.wrappers ?? []) {
    const layer = prefixMatches(rule.prefix, wrapper, new Set(), false, false);
    if (layer === 'yes') return 'yes';
    if (layer === 'maybe') best = 'maybe';
  }
  return best;
}

export function ruleLabel(rule: Pick<CommandRule, 'prefix' | 'decision'>): string {
  return `${rule.prefix.join(' ')}: ${rule.decision}`;
}

export interface DecidedSegment {
  text: string;
  argv: string[];
  program: string;
  via?: string[];
  computed?: string;
  hazard?: string;
  /** A script file the program runs, which the rules cannot see into. */
  scriptFile?: string;
  /** The file a redirection writes: the segment is that write. */
  writes?: string;
  decision: RuleDecision;
  /**
   * What decided: `git push: deny`, `otherwise`, `possibly git push: deny`, `computed: ...`,
   * `hazard: ...`, `runs the script file x.sh, which the rules cannot see into`,
   * `runs ./zap, a program of the workspace, not a known one`, `writes out.txt`.
   */
  rule: string;
}

export interface CommandDecision {
  decision: RuleDecision;
  segments: DecidedSegment[];
  unparsable?: string;
}

type Candidate = { decision: RuleDecision; rule: string };

/** What the rules say of one argv: the strictest definite match, else `otherwise`, raised by possible deny/ask matches. */
function judgeArgv(segment: CommandSegment, ruleSet: CommandRuleSet): Candidate[] {
  const definite: Candidate[] = [];
  const possible: Candidate[] = [];
  for (const rule of ruleSet.rules) {
    const match = ruleMatches(rule, segment);
    if (match === 'yes') definite.push({ decision: rule.decision, rule: ruleLabel(rule) });
    // Might be `git push` (`git $x`): a person looks. A possible allow grants nothing.
    else if (match === 'maybe' && rule.decision !== 'allow') possible.push({ decision: 'ask', rule: `possibly ${ruleLabel(rule)}` });
  }
  return [...(definite.length > 0 ? definite : [{ decision: ruleSet.otherwise ?? 'ask', rule: 'otherwise' }]), ...possible];
}

function strictestCandidate(candidates: Candidate[]): Candidate {
  return candidates.reduce((worst, candidate) => (STRICTNESS[candidate.decision] > STRICTNESS[worst.decision] ? candidate : worst));
}

/**
 * The first program of the segment given by a path that is no system program's (`./zap`, `bin/x`,
 * `/tmp/x`, `~/x`), wrappers first, unless a rule naming exactly that path matches it: whatever
 * file is there now (a copy of rm, a link to it) is no program the rules know.
 */
function workspaceProgram(segment: CommandSegment, ruleSet: CommandRuleSet): string | undefined {
  const layers: { argv: string[]; dynamic: Set<number>; moreArgs: boolean }[] = [
    ...(segment.wrappers ?? []).map((argv) => ({ argv, dynamic: new Set<number>(), moreArgs: false })),
    { argv: segment.argv, dynamic: new Set(segment.dynamicArgs), moreArgs: segment.moreArgs === true },
  ];
  for (const { argv, dynamic, moreArgs } of layers) {
    const program = argv[0];
    // A computed name (`$X`) is at least ask already.
    if (program === undefined || !program.includes('/') || dynamic.has(0) || SYSTEM_PROGRAM.test(program)) continue;
    const named = ruleSet.rules.some((rule) => rule.prefix[0] === program && prefixMatches(rule.prefix, argv, dynamic, moreArgs, rule.decision === 'allow') === 'yes');
    if (!named) return program;
  }
  return undefined;
}

/** Does a rule matching the segment name its script file (`{ prefix: [bash, ./build.sh] }`)? */
function namesScriptFile(segment: CommandSegment, ruleSet: CommandRuleSet): boolean {
  const index = segment.scriptFileArg;
  if (index === undefined) return false;
  const dynamic = new Set(segment.dynamicArgs);
  return ruleSet.rules.some(
    (rule) => rule.prefix.length > index && prefixMatches(rule.prefix, segment.argv, dynamic, segment.moreArgs === true, rule.decision === 'allow') === 'yes',
  );
}

/** A write is judged as a command no rule names; to a file only known at run time, at least ask. */
function judgeWrite(segment: CommandSegment & { writes: string }, ruleSet: CommandRuleSet): Candidate {
  const otherwise = ruleSet.otherwise ?? 'ask';
  if (!segment.computed) return { decision: otherwise, rule: `writes ${segment.writes}` };
  return { decision: strictest([otherwise, 'ask']), rule: `writes ${segment.writes}, a file only known at run time` };
}

export function decideSegment(segment: CommandSegment, ruleSet: CommandRuleSet): DecidedSegment {
  const candidates: Candidate[] = [];
  if (segment.argv.length > 0) {
    candidates.push(...judgeArgv(segment, ruleSet));
    // `sudo cat x` needs `sudo` (or `sudo cat`) allowed as well as `cat`.
    for (const wrapper of segment.wrappers ?? []) {
      const name = baseName(wrapper[0] ?? '');
      if (!PRIVILEGED_WRAPPERS.has(name)) continue;
      const layer = strictestCandidate(judgeArgv({ text: segment.text, argv: wrapper, program: name }, ruleSet));
      candidates.push({ decision: layer.decision, rule: `${layer.rule} (for ${name})` });
    }
    const unknown = workspaceProgram(segment, ruleSet);
    if (unknown !== undefined) candidates.push({ decision: 'ask', rule: `runs ${unknown}, a program of the workspace, not a known one` });
  }
  if (segment.scriptFile !== undefined && !namesScriptFile(segment, ruleSet)) {
    candidates.push({ decision: 'ask', rule: `runs the script file ${segment.scriptFile}, which the rules cannot see into` });
  }
  if (segment.writes !== undefined) candidates.push(judgeWrite({ ...segment, writes: segment.writes }, ruleSet));
  if (segment.computed) candidates.push({ decision: 'ask', rule: `computed: ${segment.computed}` });
  if (segment.hazard) candidates.push({ decision: 'ask', rule: `hazard: ${segment.hazard}` });
  const decided = candidates.length > 0 ? strictestCandidate(candidates) : { decision: 'allow' as const, rule: 'nothing runs' };
  return {
    text: segment.text,
    argv: segment.argv,
    program: segment.program,
    ...(segment.via && { via: segment.via }),
    ...(segment.computed && { computed: segment.computed }),
    ...(segment.hazard && { hazard: segment.hazard }),
    ...(segment.scriptFile !== undefined && { scriptFile: segment.scriptFile }),
    ...(segment.writes !== undefined && { writes: segment.writes }),
    decision: decided.decision,
    rule: decided.rule,
  };
}

/** The decision over a parsed command: the strictest of its segments; unparsable is at least ask. */
export function decideParsed(parsed: ParsedCommand, ruleSet: CommandRuleSet): CommandDecision {
  const segments = parsed.segments.map((segment) => decideSegment(segment, ruleSet));
  const decisions = segments.map((segment) => segment.decision);
  if (parsed.unparsable !== undefined) decisions.push('ask');
  return {
    decision: strictest(decisions),
    segments,
    ...(parsed.unparsable !== undefined && { unparsable: parsed.unparsable }),
  };
}

/**
 * Decides a shell command: every simple command in it is judged by the rules, and the strictest
 * decision wins. A command that runs nothing (`''`, `a=1`, a comment) is allowed.
 */
export async function decideCommand(command: string, rules: CommandRuleSetInput): Promise<CommandDecision> {
  return decideParsed(await parseCommand(command), normalizeRuleSet(rules));
}

// ---------------------------------------------------------------------------------------------
// Examples: each rule's `match` and `notMatch` commands, checked against the rule.

export interface RuleExampleIssue {
  path: string;
  message: string;
}

/** Issues for examples their rule does not match (`match`) or does (`notMatch`), with `${at}.rules[i].match[j]` paths. */
export async function checkRuleExamples(ruleSet: CommandRuleSetInput, at: string): Promise<RuleExampleIssue[]> {
  const issues: RuleExampleIssue[] = [];
  const { rules } = normalizeRuleSet(ruleSet);
  for (const [i, rule] of rules.entries()) {
    const prefix = JSON.stringify(rule.prefix.join(' '));
    for (const [j, example] of (rule.match ?? []).entries()) {
      const parsed = await parseCommand(example);
      if (parsed.unparsable !== undefined) {
        issues.push({ path: `${at}.rules[${i}].match[${j}]`, message: unparsableExample(example, parsed.unparsable) });
        continue;
      }
      const matches = parsed.segments.map((segment) => ruleMatches(rule, segment));
      if (matches.includes('yes')) continue;
      const how = matches.includes('maybe') ? 'only possibly matches' : 'does not match';
      issues.push({ path: `${at}.rules[${i}].match[${j}]`, message: `${JSON.stringify(example)} ${how} the prefix ${prefix}: ${describeParsed(parsed)}` });
    }
    for (const [j, example] of (rule.notMatch ?? []).entries()) {
      const parsed = await parseCommand(example);
      if (parsed.unparsable !== undefined) {
        issues.push({ path: `${at}.rules[${i}].notMatch[${j}]`, message: unparsableExample(example, parsed.unparsable) });
        continue;
      }
      // A possible match matters only where it changes a decision: for deny and ask rules.
      const hit = parsed.segments.find((segment) => {
        const match = ruleMatches(rule, segment);
        return match === 'yes' || (match === 'maybe' && rule.decision !== 'allow');
      });
      if (!hit) continue;
      issues.push({
        path: `${at}.rules[${i}].notMatch[${j}]`,
        message: `${JSON.stringify(example)} matches the prefix ${prefix} (it runs ${describeSegment(hit)}), but is listed under notMatch`,
      });
    }
  }
  return issues;
}

function unparsableExample(example: string, why: string): string {
  return `${JSON.stringify(example)} is not a command the rules can check (${why}): an example must parse`;
}

function describeParsed(parsed: ParsedCommand): string {
  const runs = parsed.segments.filter((segment) => segment.argv.length > 0).map(describeSegment);
  return runs.length === 0 ? 'it runs no command' : `it runs ${runs.join('; ')}`;
}

function describeSegment(segment: CommandSegment): string {
  const via = segment.via ? ` (via ${segment.via.join(', ')})` : '';
  return `\`${segment.argv.join(' ')}\`${via}`;
}
