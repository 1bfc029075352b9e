/** A plan's budget: its format, what a turn is held to under it and an agent's own, and how clients show its ledger. */
import YAML from 'yaml';
import { validatePlan } from '../../src/plan-format/validate';
import { formatIssues } from '../../src/plan-format/issues';
import { describeRunSpend, narrowBudget } from '../../src/protocol/budget';
import { withRole } from '../../src/roles/team-roles';
import { turnBudget } from '../../src/budget/lease';
import { BudgetPool } from '../../src/budget/pool';

const plan = (budget: string) => validatePlan(YAML.parse(`name: p\nbudget: ${budget}\nsteps:\n  - { id: w, agent: { prompt: hi } }\n`), { baseDir: '/tmp' });

test('a plan budget takes tokens, toolCalls, cost and time, with warnAt 0.8 and onBudget ask unless given', () => {
  const ok = plan('{ tokens: 20000, time: 30m }');
  expect(ok.ok && ok.plan.budget).toEqual({ tokens: 20000, time: '30m', warnAt: 0.8, onBudget: 'ask' });
  const stop = plan('{ cost: 2.5, toolCalls: 40, onBudget: stop, warnAt: 0.5 }');
  expect(stop.ok && stop.plan.budget).toEqual({ cost: 2.5, toolCalls: 40, warnAt: 0.5, onBudget: 'stop' });
});

test('a plan budget that caps nothing, or caps with nonsense, is refused with where and why', () => {
  const problems = (budget: string) => {
    const result = plan(budget);
    return result.ok ? '' : formatIssues(result.issues);
  };
  expect(problems('{ warnAt: 0.5 }')).toContain('a budget caps tokens, toolCalls, cost (USD) or time');
  expect(problems('{ time: soon }')).toContain('budget.time');
  expect(problems('{ tokens: -5 }')).toContain('budget.tokens');
  expect(problems('{ tokens: 5, turns: 3 }')).toContain('turns');
});

test("a turn is held to the tighter of an agent's own budget and its lease on the plan's", () => {
  expect(turnBudget(undefined, undefined)).toBeUndefined();
  expect(turnBudget({ tokens: 500 }, undefined)).toEqual({ tokens: 500 });
  expect(turnBudget(undefined, { tokens: 300, toolCalls: 4 })).toEqual({ tokens: 300 });
  expect(turnBudget({ tokens: 500, cost: 1 }, { tokens: 800, cost: 0.2 })).toEqual({ tokens: 500, cost: 0.2 });
});

test("a plan's ledger as cadre status and the Web UI show it", () => {
  const spent = { tokens: 14500, toolCalls: 3, cost: 0 };
  expect(describeRunSpend({ limits: { tokens: 20000 }, spent, reserved: { tokens: 0, toolCalls: 0, cost: 0 } })).toBe('14500 of 20000 tokens spent');
  expect(describeRunSpend({ limits: { tokens: 20000 }, spent, reserved: { tokens: 2000, toolCalls: 0, cost: 0.004 }, deadline: '2026-11-30T03:00:00.000Z' })).toBe(
    '14500 of 20000 tokens spent; 2000 tokens, $0.0040 held by running agents; time ends 2026-11-30T03:00:00.000Z',
  );
});

describe("the run's pool of leases", () => {
  const spent = (tokens = 0) => ({ tokens, toolCalls: 0, cost: 0 });
  const ask = (agent: string, seq: number, need: number, want: number, used = 0) => ({ workflowId: `run/${agent}`, lease: `run/${agent}@1`, seq, need: { tokens: need }, want: { tokens: want }, spent: spent(used) });
  const granted = (out: { send: { grant: { lease: string; grant?: { tokens?: number } } }[] }) => out.send.filter((s) => s.grant.grant).map((s) => [s.grant.lease, s.grant.grant?.tokens]);

  test('asks are granted what they want up to a fair share of what is free; never more than is free', () => {
    const pool = new BudgetPool({ tokens: 10_000, warnAt: 0.8 });
    expect(granted(pool.ask(ask('a', 1, 0, 30_000)))).toEqual([['run/a@1', 5000]]);
    expect(granted(pool.ask(ask('b', 1, 0, 1000)))).toEqual([['run/b@1', 1000]]);
    expect(granted(pool.ask(ask('c', 1, 0, 30_000)))).toEqual([['run/c@1', 1000]]);
    expect(pool.summary()).toMatchObject({ spent: spent(0), reserved: spent(7000) });
  });

  test('a turn that does not fit recalls the others first; what comes back lets it go on; a second settle counts nothing', () => {
    const pool = new BudgetPool({ tokens: 10_000, warnAt: 0.9 });
    pool.ask(ask('a', 1, 0, 30_000)); // 5000
    pool.ask(ask('b', 1, 0, 30_000)); // 1666
    const short = pool.ask(ask('c', 1, 4000, 4000));
    expect(short.recalling).toBe(true);
    expect(short.send.filter((s) => s.grant.recall).map((s) => [s.grant.lease, s.grant.after])).toEqual([
      ['run/a@1', 1],
      ['run/b@1', 1],
    ]);
    expect(granted(pool.giveBack('run/a@1', 'run/a', { tokens: 4000, toolCalls: 0, cost: 0 }))).toEqual([['run/c@1', 4000]]);
    expect(pool.giveBack('run/b@1', 'run/b', spent(0)).short).toBeUndefined();
    pool.settle('run/a@1', 'run/a', spent(1000));
    pool.settle('run/a@1', 'run/a', spent(1000));
    expect(pool.summary()).toMatchObject({ spent: spent(1000), reserved: spent(1666 + 4000) });
  });

  test('when even what came back is not enough, the shortage goes to onBudget; stopped, every ask is refused and every agent told', () => {
    const pool = new BudgetPool({ tokens: 1000, warnAt: 0.8 });
    pool.ask(ask('a', 1, 0, 900)); // 500
    const recalled = pool.ask(ask('b', 1, 800, 800));
    expect(recalled.short).toBeUndefined();
    const short = pool.giveBack('run/a@1', 'run/a', spent(100));
    expect(short.short).toMatchObject({ dimension: 'tokens', ask: { workflowId: 'run/b' } });
    const stopped = pool.stop('the run spent its budget');
    expect(stopped.send.map((s) => [s.grant.lease, s.grant.seq, s.grant.stop])).toEqual([
      ['run/a@1', 0, 'the run spent its budget'],
      ['run/b@1', 0, 'the run spent its budget'],
      ['run/b@1', 1, 'the run spent its budget'],
    ]);
    expect(pool.carry()).toEqual({ limits: { tokens: 1000 }, spent: spent(400), warned: false });
  });

  test('past warnAt every agent is told once; an extension lets the warning come again at the new cap', () => {
    const pool = new BudgetPool({ tokens: 1000, warnAt: 0.5 });
    pool.ask(ask('a', 1, 0, 100));
    const warned = pool.ask(ask('b', 1, 0, 100, 600));
    expect(warned.warned).toBe("the run's budget: 600 of 1000 tokens used (warning at 50%)");
    expect(warned.send.map((s) => [s.grant.lease, s.grant.warning !== undefined])).toEqual([
      ['run/a@1', true],
      ['run/b@1', true],
    ]);
    expect(pool.ask(ask('a', 2, 0, 100, 100)).warned).toBeUndefined();
    expect(pool.extend('tokens', 1000).send).toEqual([]);
    expect(pool.ask(ask('a', 3, 0, 100, 1000)).warned).toBe("the run's budget: 1600 of 2000 tokens used (warning at 50%)");
  });
});

test('a role can only narrow the budget its agent is given: each cap the lower, the earlier warning', () => {
  expect(narrowBudget(undefined, { tokens: 5000 })).toEqual({ tokens: 5000, warnAt: 0.8, onBudget: 'ask' });
  expect(narrowBudget({ tokens: 2000, cost: 1, warnAt: 0.9, onBudget: 'ask' }, { tokens: 5000, toolCalls: 10, warnAt: 0.5, onBudget: 'stop' })).toEqual({
    tokens: 2000,
    cost: 1,
    toolCalls: 10,
    warnAt: 0.5,
    onBudget: 'stop',
  });
  const role = { name: 'capped', description: 'd', competencies: ['x'], system: 's', tools: ['fs.read'], authority: [], consultWhen: [], budget: { tokens: 1000 } };
  const agent = { role: 'capped', prompt: 'p', tools: [], maxTurns: 5, approvals: {}, approvalTimeout: '1h' };
  expect(withRole(agent, [role], undefined)).toMatchObject({ budget: { tokens: 1000, warnAt: 0.8, onBudget: 'ask' }, tools: ['fs.read'] });
  expect(withRole({ ...agent, role: undefined }, [role], undefined)).not.toHaveProperty('budget');
});
