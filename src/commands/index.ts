/** Shell commands parsed into the simple commands they run, and the prefix rules that judge them. */
export { parseCommand, programsRun, programsOf, SHELL_BUILTINS, type CommandSegment, type ParsedCommand } from './parse';
export { commandRuleSetSchema, decideCommand, decideParsed, checkRuleExamples, type CommandDecision, type DecidedSegment, type RuleExampleIssue } from './rules';
export {
  normalizeRuleSet,
  strictest,
  RULE_DECISIONS,
  type RuleDecision,
  type CommandRule,
  type CommandRuleSet,
  type CommandRuleShorthand,
  type CommandRuleSetInput,
} from './rule-set';
