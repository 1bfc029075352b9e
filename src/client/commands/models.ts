/** `cadre models test [model]`: which `toolCalls` mode reads the model's tool calls (logic in providers/mode-trials.ts). */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { durationMs, isDuration } from '../../plan-format/duration';
import { UsageError } from '../../errors/cadre-error';
import { info, out } from './shared';

export function registerModelsCommand(program: Command): void {
  const models = program.command('models').description('check the models of cadre.config.yaml (CADRE_CONFIG) and the environment');
  models
    .command('test [model]')
    .description('send one small tool task to the model in each toolCalls mode (required, native, json, xml, qwen) and say which works')
    .addOption(new Option('--timeout <duration>', 'how long one mode may take to answer').argParser(duration).default(120_000, '2m'))
    .option('--json', 'print {model, endpoint, trials, recommended, advice} as JSON')
    .addHelpText('after', '\nExamples:\n  cadre models test openai-compatible:local\n  cadre models test openai-compatible:local/qwen2.5-coder --timeout 5m --json')
    .action(async (model: string | undefined, opts: { timeout: number; json?: boolean }) => {
      // Loaded here: the AI SDK costs startup time every other command would pay.
      const { TOOL_CALL_MODES, loadModelSettings } = await import('../../providers/config');
      const { tryToolCallModes } = await import('../../providers/mode-trials');
      const settings = loadModelSettings(process.env.CADRE_CONFIG || 'cadre.config.yaml');
      const name = model ?? settings.defaultModel;
      if (!name) throw new UsageError('name a model (cadre models test openai-compatible:<endpoint>), or set CADRE_MODEL or models.default');
      if (!opts.json) info(`testing ${name}: one fs_read call asked for in each mode, required first`);
      const width = Math.max(...TOOL_CALL_MODES.map((mode) => mode.length));
      const report = await tryToolCallModes(name, settings, {
        timeoutMs: opts.timeout,
        onTrial: opts.json ? undefined : (t) => out(`${t.mode.padEnd(width)}  ${t.outcome.padEnd(7)}  ${t.detail}${t.ms === undefined ? '' : ` (${(t.ms / 1000).toFixed(1)} s)`}`),
      });
      if (opts.json) out(JSON.stringify(report, null, 2));
      else out(report.recommended ? `recommended: ${report.recommended}; ${report.advice}` : `no mode works: ${report.advice}`);
      // Scripts can tell a model that calls tools in some mode from one that does not.
      if (!report.recommended) process.exitCode = 1;
    });
}

function duration(value: string): number {
  if (!isDuration(value)) throw new InvalidArgumentError(`not a duration (30s, 5m): ${value}`);
  return durationMs(value);
}
