/** A model turn held to what its agent's budget has left (providers/turn-budget.ts). */
import { ApplicationFailure } from '@temporalio/common';
import { BUDGETED_OUTPUT_DEFAULT, MIN_TURN_OUTPUT, heldToBudget } from '../../src/providers/turn-budget';

const request = { model: 'openai:m', messages: [{ role: 'user' as const, content: 'x'.repeat(300) }] };
const price = { input: 1, output: 2 };

test('the output cap is what is left after what the turn sends, and never above a cap every provider takes', () => {
  const held = heldToBudget(request, { tokens: 1000 }, undefined, 'openai:m');
  const input = 1000 - (held.maxOutputTokens as number);
  expect(input).toBeGreaterThanOrEqual(100);
  expect(heldToBudget(request, { tokens: 1_000_000 }, undefined, 'openai:m').maxOutputTokens).toBe(BUDGETED_OUTPUT_DEFAULT);
  expect(heldToBudget({ ...request, maxOutputTokens: 50 }, { tokens: 1000 }, undefined, 'openai:m').maxOutputTokens).toBe(50);
  // USD: (left - input at its price) / output price.
  expect(heldToBudget(request, { cost: 0.001 }, price, 'openai:m').maxOutputTokens).toBe(Math.floor((0.001 * 1e6 - input) / 2));
});

test('a turn that cannot write a few tokens is not started; a cost budget without a price is refused', () => {
  const refused = (() => {
    try {
      heldToBudget(request, { tokens: 110 + MIN_TURN_OUTPUT - 1 }, undefined, 'openai:m');
    } catch (err) {
      return err as ApplicationFailure;
    }
  })();
  expect(refused).toMatchObject({ type: 'BudgetExhausted', nonRetryable: true, details: [{ dimension: 'tokens', needs: { tokens: expect.any(Number) } }] });
  // What the turn needs at least: what it sends and a few tokens to write (a lease asks its run for that much).
  expect((refused?.details?.[0] as { needs: { tokens: number } }).needs.tokens).toBe(1000 - (heldToBudget(request, { tokens: 1000 }, undefined, 'openai:m').maxOutputTokens as number) + MIN_TURN_OUTPUT);
  expect(() => heldToBudget(request, { cost: 1 }, undefined, 'openai:m')).toThrow('no price for openai:m in cadre.config.yaml (models.prices): a cost budget needs one');
  const byCost = (() => {
    try {
      heldToBudget(request, { tokens: 100_000, cost: 0.0001 }, price, 'openai:m');
    } catch (err) {
      return err as ApplicationFailure;
    }
  })();
  expect(byCost).toMatchObject({ type: 'BudgetExhausted', details: [{ dimension: 'cost' }] });
});
