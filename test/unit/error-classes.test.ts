import messages from '../fixtures/error-messages.json';
import { ErrorTypes } from '../../src/errors/application-failures';
import { ERROR_CLASSES, ERROR_RULES, NON_RETRYABLE_CLASSES, classifyError, errorClassOfType, type ErrorClass, type ErrorSample } from '../../src/errors/error-classes';

interface Fixture extends ErrorSample {
  source: string;
  expected: ErrorClass;
  origin: string;
}

const fixtures = messages as Fixture[];
const SOURCES = ['openai', 'anthropic', 'git', 'node', 'mcp'];

describe('error classes: real messages from providers, git, Node and MCP', () => {
  const results = fixtures.map((f) => ({ ...f, got: classifyError({ message: f.message, status: f.status, code: f.code }) }));
  const missed = results.filter((r) => r.got.class !== r.expected);

  test('the fixture is big and spread enough to mean something', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(100);
    for (const source of SOURCES) expect(fixtures.filter((f) => f.source === source).length).toBeGreaterThanOrEqual(15);
    for (const cls of ERROR_CLASSES) expect(fixtures.some((f) => f.expected === cls)).toBe(true);
    for (const f of fixtures) {
      expect(SOURCES).toContain(f.source);
      expect(ERROR_CLASSES).toContain(f.expected);
      expect(f.origin).toMatch(/^https:\/\//);
    }
  });

  test('at least 95% are put in the class their recovery needs', () => {
    const perSource = SOURCES.map((source) => {
      const of = results.filter((r) => r.source === source);
      const right = of.filter((r) => r.got.class === r.expected).length;
      return `${source}: ${right}/${of.length} (${((100 * right) / of.length).toFixed(1)}%)`;
    });
    const report = [
      `accuracy ${fixtures.length - missed.length}/${fixtures.length}`,
      ...perSource,
      ...missed.map((r) => `missed [${r.source}] expected ${r.expected}, got ${r.got.class} by ${r.got.rule}: ${r.message.slice(0, 160)}`),
    ].join('\n');
    console.log(report);
    const accuracy = (fixtures.length - missed.length) / fixtures.length;
    expect(accuracy >= 0.95 ? 'at least 95%' : report).toBe('at least 95%');
  });
});

describe('error classes: the table', () => {
  test("each of cadre's ErrorTypes maps to a class by its own row", () => {
    for (const type of Object.values(ErrorTypes)) {
      expect(ERROR_CLASSES).toContain(errorClassOfType(type));
      const got = classifyError({ message: 'something went wrong', type });
      expect(got.rule).toBe(`type:${type}`);
      expect(got.class).toBe(errorClassOfType(type));
    }
    expect(errorClassOfType('NoSuchType')).toBeUndefined();
  });

  test.each<[string, ErrorSample, ErrorClass, string]>([
    ['a 429 for an empty account waits on a person', { message: 'You exceeded your current quota, please check your plan and billing details.', status: 429 }, 'user_resolvable', 'quota_exhausted'],
    ['a plain 429 backs off', { message: 'Rate limit reached for gpt-4o on requests per min (RPM)', status: 429 }, 'transient', 'status:429'],
    ['cadre\'s rate-limit type for an empty account waits on a person', { message: 'openai:gpt-4o: rate limited (429): You exceeded your current quota', type: 'ModelRateLimited' }, 'user_resolvable', 'type:provider:quota'],
    ['cadre\'s rate-limit type otherwise backs off', { message: 'openai:gpt-4o: rate limited (429), retry after 2 s', type: 'ModelRateLimited' }, 'transient', 'type:ModelRateLimited'],
    ['a request over the per-minute budget is permanent, 429 or not', { message: 'Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 31538.', status: 429 }, 'permanent', 'over_rate_window'],
    ['a 404 for an unverified organization waits on a person', { message: '404 Your organization must be verified to use the model `o3`.' }, 'user_resolvable', 'organization_unverified'],
    ['a plain 404 is permanent', { message: 'Not Found', status: 404 }, 'permanent', 'status:404'],
    ['a status in the message counts when none is given', { message: 'Error code: 503 - upstream unavailable' }, 'transient', 'status:5xx'],
    ['a shell exit for a missing command waits on a person', { message: 'command exited with code 127: sh: 1: tsc: not found', type: 'ShellExit' }, 'user_resolvable', 'type:command:missing_dependency'],
    ['other shell exits are retried', { message: 'command exited with code 1: 3 tests failed', type: 'ShellExit' }, 'transient', 'type:ShellExit'],
    ['git without an identity waits on a person', { message: 'committing: *** Please tell me who you are.', type: 'GitFailed' }, 'user_resolvable', 'type:command:git_identity'],
    ['other git refusals reset the worktree', { message: "adding worktree: fatal: '/tmp/w' already exists", type: 'GitFailed' }, 'infrastructure', 'type:GitFailed'],
    ['an http tool 401 waits on a person', { message: 'GET https://x answered 401', type: 'HttpClientError', status: 401 }, 'user_resolvable', 'type:HttpClientError:auth'],
    ['an http tool 403 stated only in the message waits on a person', { message: 'POST https://x answered 403', type: 'HttpClientError' }, 'user_resolvable', 'type:HttpClientError:auth'],
    ['an http tool 400 is permanent', { message: 'GET https://x answered 400', type: 'HttpClientError', status: 400 }, 'permanent', 'type:HttpClientError'],
    ['cadre\'s types decide before text the model wrote', { message: 'the answer is not JSON: "sh: 1: foo: not found"', type: 'StructuredOutputInvalid' }, 'permanent', 'type:StructuredOutputInvalid'],
    ['a missing module inside a dead MCP server waits on a person', { message: 'No module named mcp_server_fetch MCP error -32000: Connection closed' }, 'user_resolvable', 'missing_dependency'],
    ['a dead MCP server is restarted', { message: 'MCP error -32000: Connection closed' }, 'infrastructure', 'mcp_server_gone'],
    ['ECONNREFUSED from an MCP transport restarts the server', { message: 'SSE error: TypeError: fetch failed: connect ECONNREFUSED 127.0.0.1:3000', code: 'ECONNREFUSED' }, 'infrastructure', 'mcp_server_gone'],
    ['ECONNREFUSED elsewhere backs off', { message: 'Error: connect ECONNREFUSED 104.28.5.96:443', code: 'ECONNREFUSED' }, 'transient', 'code:network'],
    ['a spawn ENOENT restarts the server or resets the worktree', { message: 'Error: spawn npx ENOENT', code: 'ENOENT' }, 'infrastructure', 'spawn_failed'],
    ['an open ENOENT is permanent', { message: "Error: ENOENT: no such file or directory, open 'a.json'", code: 'ENOENT' }, 'permanent', 'code:not_found'],
    ['git publickey denial is a credential, not a file permission', { message: 'git@github.com: Permission denied (publickey).' }, 'user_resolvable', 'git_remote_auth'],
    ['a worker that gave up fails', { message: 'w1: the worker gave up: no such API exists', type: 'WorkerGaveUp' }, 'permanent', 'type:WorkerGaveUp'],
    ['an exceeded token budget fails', { message: 'used 9000 tokens over 3 turns; the budget is 8000 (maxTokens)', type: 'AgentTokenBudget' }, 'permanent', 'type:AgentTokenBudget'],
    ['an unclear requirement waits on a person', { message: 'blocked: the requirement is unclear, which of the two APIs?' }, 'user_resolvable', 'unclear_requirement'],
    // Retrying an unknown failure a few times is cheap if it repeats and a rescue if it was flaky.
    ['an unknown failure is retried', { message: 'something odd happened' }, 'transient', 'unknown'],
  ])('%s', (_name, sample, cls, ruleId) => {
    expect(classifyError(sample)).toMatchObject({ class: cls, rule: ruleId });
  });

  test('rule ids are unique and every row gives actions', () => {
    const ids = ERROR_RULES.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of ERROR_RULES) expect(r.actions.length).toBeGreaterThan(0);
  });

  test('user_resolvable and permanent are the classes a retry cannot fix', () => {
    expect([...NON_RETRYABLE_CLASSES].sort()).toEqual(['permanent', 'user_resolvable']);
  });
});
