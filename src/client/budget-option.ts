/** `--budget tokens=50000,cost=0.5[,toolCalls=100][,warnAt=0.8][,onBudget=ask|stop]`: a session's budget (docs/budgets.md). */
import { InvalidArgumentError } from 'commander';
import { type Budget, DEFAULT_WARN_AT } from '../protocol/budget';

const CAPS = new Set(['tokens', 'toolCalls', 'cost']);

export function parseBudgetOption(text: string): Budget {
  const budget: Budget = { warnAt: DEFAULT_WARN_AT, onBudget: 'ask' };
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [key, value = ''] = part.split('=').map((p) => p.trim());
    const number = Number(value);
    if (key === 'onBudget') {
      if (value !== 'ask' && value !== 'stop') throw new InvalidArgumentError(`onBudget: ask or stop, not "${value}"`);
      budget.onBudget = value;
    } else if (key === 'warnAt') {
      if (!(number > 0 && number < 1)) throw new InvalidArgumentError(`warnAt: a share between 0 and 1, as in warnAt=0.8, not "${value}"`);
      budget.warnAt = number;
    } else if (CAPS.has(key)) {
      const whole = key !== 'cost';
      if (value === '' || !Number.isFinite(number) || number <= 0 || (whole && !Number.isInteger(number))) {
        throw new InvalidArgumentError(`${key}: ${whole ? 'a whole number above 0' : 'USD above 0'}, not "${value}"`);
      }
      budget[key as 'tokens' | 'toolCalls' | 'cost'] = number;
    } else throw new InvalidArgumentError(`unknown "${key}": a budget is tokens=N, toolCalls=N, cost=USD, warnAt=0.8, onBudget=ask|stop, comma-separated`);
  }
  if (budget.tokens === undefined && budget.toolCalls === undefined && budget.cost === undefined) throw new InvalidArgumentError('a budget caps tokens, toolCalls or cost, as in tokens=50000');
  return budget;
}
