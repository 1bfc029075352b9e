/** The pure parts of agents: approval policies with shell command globs, and reading a decision. */
import { approvalFor, globMatches, matchChoice } from '../../src/plan-format/approval-policy';

describe('approval policies', () => {
  test('a tool without a policy is allowed; a policy as a word applies to every call', () => {
    expect(approvalFor({}, 'shell', { command: 'rm -rf /' })).toBe('allow');
    expect(approvalFor({ 'fs.write': 'ask' }, 'fs.write', { path: 'a' })).toBe('ask');
    expect(approvalFor({ 'fs.write': 'deny' }, 'fs.read', { path: 'a' })).toBe('allow');
  });

  test('shell globs: the first that matches the whole command decides; none matching allows', () => {
    const approvals = { shell: { 'git push*': 'ask', 'rm *': 'deny', '*--force*': 'deny', 'ls': 'allow' } } as const;
    expect(approvalFor(approvals, 'shell', { command: 'git push origin main' })).toBe('ask');
    expect(approvalFor(approvals, 'shell', { command: '  rm -rf build  ' })).toBe('deny');
    expect(approvalFor(approvals, 'shell', { command: 'git reset --force' })).toBe('deny');
    expect(approvalFor(approvals, 'shell', { command: 'ls -la' })).toBe('allow');
    expect(approvalFor(approvals, 'shell', { command: 'echo rm x' })).toBe('allow');
    expect(approvalFor({ shell: { '*': 'ask' } }, 'shell', {})).toBe('ask');
  });

  test('globs: * spans anything, ? one character, the rest is literal; no backtracking blow-up', () => {
    expect(globMatches('a*b?d', 'a/x y/bcd')).toBe(true);
    expect(globMatches('a*b?d', 'abd')).toBe(false);
    expect(globMatches('*.[ch]', 'x.[ch]')).toBe(true);
    expect(globMatches('*.[ch]', 'x.c')).toBe(false);
    expect(globMatches('', '')).toBe(true);
    expect(globMatches('**', 'anything')).toBe(true);
    // A backtracking regular expression of this shape would not finish within the test's timeout.
    expect(globMatches(`${'*a'.repeat(50)}b`, 'a'.repeat(20_000))).toBe(false);
  });
});

describe('decisions', () => {
  test('a reply names a choice exactly, or with case, quotes and a final period set aside', () => {
    const choices = ['urgent', 'routine', 'Needs Review'];
    expect(matchChoice('urgent', choices)).toBe('urgent');
    expect(matchChoice('Urgent.', choices)).toBe('urgent');
    expect(matchChoice('"routine"', choices)).toBe('routine');
    expect(matchChoice('**needs review**', choices)).toBe('Needs Review');
    expect(matchChoice('It is urgent', choices)).toBeUndefined();
    expect(matchChoice('', choices)).toBeUndefined();
  });
});
