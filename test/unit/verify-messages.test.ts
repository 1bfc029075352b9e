/**
 * What a step's verify tells the model and what its failure says (src/protocol/verify.ts): the end
 * of each stream that has text, "printed nothing" for a silent check, the timeout's reason for one
 * that never ended, and how many failures are still sent back.
 */
import { type Verify, verifyCorrection, verifyFailedMessage } from '../../src/protocol/verify';

const verify: Verify = { command: 'npm test', attempts: 2, timeout: '10m' };

test('the end of each stream with text, and the failures left', () => {
  const long = `${'x'.repeat(3000)}\nAssertionError: 2 !== 3`;
  const told = verifyCorrection(verify, { exitCode: 1, stdout: long, stderr: '  \n', message: 'command exited with code 1' }, 1);
  expect(told).toMatch(/^Not finished: the check `npm test` failed \(exit code 1\), so the task is not done yet\.\nstdout:\n…x+\nAssertionError: 2 !== 3\nFix it with your tools/);
  expect(told).not.toContain('stderr:');
  expect(told.length).toBeLessThan(1800);
  expect(told).toMatch(/\(1 more failure is sent back; the next fails the step\)\.$/);
});

test('a check that printed nothing says so; one that never ended says why', () => {
  expect(verifyCorrection(verify, { exitCode: 1, stdout: '', stderr: '', message: 'command exited with code 1' }, 2)).toContain('failed (exit code 1), so the task is not done yet.\nIt printed nothing.\n');
  expect(verifyCorrection(verify, { message: 'it did not end within 10m (verify.timeout)' }, 1)).toContain('failed, so the task is not done yet.\nit did not end within 10m (verify.timeout)\n');
});

test("the step's failure names the check, the times told and the end of what it said", () => {
  expect(verifyFailedMessage(verify, { exitCode: 3, stderr: 'still broken', message: '' })).toBe('the check `npm test` still failed (exit code 3) after the agent was told 2 times; it said: stderr:\nstill broken');
  expect(verifyFailedMessage({ ...verify, attempts: 0 }, { exitCode: 1, message: '' })).toBe('the check `npm test` still failed (exit code 1) with no failure sent back (verify.attempts: 0); it said: It printed nothing.');
});
