/**
 * The four classes a team worker's failure falls into, each with its own recovery:
 *  - transient: back off with jitter (a fallback model after repeated rate limits);
 *  - infrastructure: reset the worktree or restart the server, then retry;
 *  - user_resolvable: wait on a person, with suggested actions;
 *  - permanent: fail, with the explanation.
 *
 * Pure data and string matching, no imports at run time: workflow code may use it.
 */
import type { ErrorTypes } from './application-failures';

export const ERROR_CLASSES = ['transient', 'infrastructure', 'user_resolvable', 'permanent'] as const;
export type ErrorClass = (typeof ERROR_CLASSES)[number];

/** Retrying the same work cannot help: a person must act, or the work itself is wrong. */
export const NON_RETRYABLE_CLASSES = ['user_resolvable', 'permanent'] as const satisfies readonly ErrorClass[];

/** What is known of a failure: its text and whichever of type, HTTP status and Node code came with it. */
export interface ErrorSample {
  message: string;
  /** An ApplicationFailure type, such as one of cadre's ErrorTypes. */
  type?: string;
  /** HTTP status; when absent, one the message states ("Error code: 429", "(HTTP 401)") is used. */
  status?: number;
  /** Node's err.code, such as ECONNRESET or MODULE_NOT_FOUND. */
  code?: string;
}

export interface Classification {
  class: ErrorClass;
  /** rate_limit, network, server_error, git, worktree, permission, disk, mcp_server, credential, dependency, merge_conflict, ... unknown. */
  kind: string;
  /** The id of the ERROR_RULES row that matched ("unknown" when none did). */
  rule: string;
  /** Short suggested actions, for a person or for the recovery code. */
  actions: string[];
}

/** Every given matcher must match. */
export interface RuleMatchers {
  type?: readonly string[];
  status?: readonly number[];
  code?: readonly string[];
  message?: RegExp;
}

export interface ErrorRule {
  id: string;
  class: ErrorClass;
  kind: string;
  when: RuleMatchers;
  actions: readonly string[];
}

type Outcome = Pick<ErrorRule, 'class' | 'kind' | 'actions'>;

const RETRY = ['retry with backoff and jitter'];
const RATE_LIMITED = ['retry after the provider\'s Retry-After, with jitter', 'after repeated rate limits, fall back to another model'];
const RESET_WORKTREE = ['reset the worktree (remove stale locks, recreate it from its branch)', 'retry'];
const FREE_DISK = ['free disk space or file handles on the worker', 'retry'];
const FIX_PERMISSIONS = ['give the worker\'s user access to the path', 'reset the worktree', 'retry'];
const RESTART_SERVER = ['restart the MCP server (check its command and logs)', 'retry'];
const FIX_CREDENTIAL = ['set a valid key or token for this provider or remote', 'resume the worker'];
const ADD_CREDIT = ['add credit or raise the plan\'s limit', 'or switch to another key', 'resume the worker'];
const INSTALL = ['install the missing command or package on the worker', 'resume the worker'];
const RESOLVE_MERGE = ['resolve the conflict by hand (or pick which side wins)', 'resume the worker'];
const ANSWER = ['answer the worker\'s question or sharpen the task', 'resume the worker'];
const FIX_REQUEST = ['fix the task, tool call or model request: the same request fails again'];
const SHORTEN = ['shorten the conversation or input', 'or use a model with a longer context'];
const CHECK_NAME = ['check the name (model, tool, file, endpoint)'];

/**
 * Each of cadre's own failure types, mapped on purpose. Keyed by the type so that the compiler
 * refuses a new ErrorTypes entry until it is given a class here.
 */
const CADRE_TYPES: Record<(typeof ErrorTypes)[keyof typeof ErrorTypes], Outcome> = {
  BadToolInput: { class: 'permanent', kind: 'invalid_request', actions: FIX_REQUEST },
  OutsideWorkspace: { class: 'permanent', kind: 'invalid_request', actions: ['keep paths inside the workspace'] },
  // Scripts can be flaky; the refinement rows catch the exits that are not (command not found, git identity).
  ShellExit: { class: 'transient', kind: 'command_failed', actions: RETRY },
  FileNotFound: { class: 'permanent', kind: 'not_found', actions: CHECK_NAME },
  HttpClientError: { class: 'permanent', kind: 'invalid_request', actions: FIX_REQUEST },
  HttpServerError: { class: 'transient', kind: 'server_error', actions: RETRY },
  UnknownTool: { class: 'permanent', kind: 'not_found', actions: CHECK_NAME },
  TooLarge: { class: 'permanent', kind: 'limit_exceeded', actions: ['read or send less at once'] },
  // The plan's workspace is absent on this worker: no reset brings a repository back.
  WorkspaceMissing: { class: 'user_resolvable', kind: 'workspace', actions: ['create or mount the workspace on this worker', 'resume the worker'] },
  WorkspaceNotHere: { class: 'transient', kind: 'workspace', actions: ['start a worker on the host that holds the workspace', 'check CADRE_WORKSPACES on each host'] },
  NotOnHost: { class: 'transient', kind: 'workspace', actions: ['none: the run sends the call to the host that holds its workspace'] },
  MissingValue: { class: 'permanent', kind: 'invalid_request', actions: ['give the value a default or fix the reference'] },
  StoredValue: { class: 'permanent', kind: 'stored_value', actions: ['run the step again where its value is stored'] },
  // The agent loop handles it itself (it sends the whole conversation): seen only in the activity's history.
  ConversationMissing: { class: 'transient', kind: 'stored_value', actions: ['none: the agent sends its whole conversation again'] },
  GitBusy: { class: 'infrastructure', kind: 'git', actions: RESET_WORKTREE },
  GitFailed: { class: 'infrastructure', kind: 'git', actions: RESET_WORKTREE },
  MergeConflict: { class: 'user_resolvable', kind: 'merge_conflict', actions: RESOLVE_MERGE },
  // cadre refused because a reset would lose work: a person decides.
  WorktreeDirty: { class: 'user_resolvable', kind: 'worktree', actions: ['commit or discard the uncommitted work', 'resume the worker'] },
  WorktreeConflict: { class: 'user_resolvable', kind: 'worktree', actions: ['move the other branch or files away', 'resume the worker'] },
  ModelConfigInvalid: { class: 'user_resolvable', kind: 'config', actions: ['fix the model configuration (cadre.config.yaml, CADRE_MODEL, keys)', 'resume the worker'] },
  BadModelRequest: { class: 'permanent', kind: 'invalid_request', actions: FIX_REQUEST },
  BudgetExhausted: { class: 'user_resolvable', kind: 'limit_exceeded', actions: ['extend the budget (cadre answer <run> <wait> extend=<more>), or let the agent stop'] },
  ModelRateLimited: { class: 'transient', kind: 'rate_limit', actions: RATE_LIMITED },
  ModelUnavailable: { class: 'transient', kind: 'server_error', actions: RETRY },
  ModelAuthFailed: { class: 'user_resolvable', kind: 'credential', actions: FIX_CREDENTIAL },
  ModelNotFound: { class: 'permanent', kind: 'not_found', actions: CHECK_NAME },
  ModelContextTooLong: { class: 'permanent', kind: 'context_too_long', actions: SHORTEN },
  ModelRequestRejected: { class: 'permanent', kind: 'invalid_request', actions: FIX_REQUEST },
  ToolChoiceIgnored: { class: 'user_resolvable', kind: 'config', actions: ['set another toolCalls mode for the endpoint (cadre models test says which works)', 'resume the worker'] },
  EditNotApplied: { class: 'permanent', kind: 'invalid_request', actions: ['copy old_text exactly from the file, with enough lines around it to be found once'] },
  SyntaxBroken: { class: 'permanent', kind: 'invalid_request', actions: ['fix the syntax error the message names, then write again'] },
  ModelOutputCut: { class: 'permanent', kind: 'limit_exceeded', actions: ['raise maxOutputTokens for the endpoint (models.compatible in cadre.config.yaml), or ask for less at once'] },
  AgentMadeNoChange: { class: 'permanent', kind: 'requirement', actions: ['read the agent\'s answer: a task it cannot do, or a model too weak for it', 'name the files to change in the prompt, or use a stronger model'] },
  AgentVerifyFailed: { class: 'permanent', kind: 'requirement', actions: ['read the check\'s output in the message: work the agent could not finish, or a check that cannot pass', 'raise verify.attempts, narrow the prompt, or use a stronger model'] },
  StructuredOutputInvalid: { class: 'permanent', kind: 'invalid_output', actions: ['loosen the output schema or the instructions'] },
  RolesInvalid: { class: 'user_resolvable', kind: 'config', actions: ['fix the team role file', 'resume the worker'] },
  ScriptMismatch: { class: 'permanent', kind: 'invalid_request', actions: ['fix the scripted model\'s scenario'] },
  SandboxUnavailable: { class: 'user_resolvable', kind: 'config', actions: ['install bubblewrap on the worker (apt-get install bubblewrap), or let people set sandbox: none', 'resume the worker'] },
  SandboxConfigInvalid: { class: 'user_resolvable', kind: 'config', actions: ['fix the sandbox settings (plan or cadre.config.yaml)', 'resume the worker'] },
  // Opening a host is the plan author's call, never the agent's.
  TooManyRedirects: { class: 'permanent', kind: 'invalid_request', actions: ['call the address the redirects end at, or fix the loop'] },
  EgressDenied: { class: 'permanent', kind: 'policy', actions: ['reach only the hosts the plan allows, or ask its author to add one to egress.allow'] },
};

/** Failure types the workflows throw (agent loop, team tools). AgentFailed wraps others: its message decides. */
const WORKFLOW_TYPES: Record<string, Outcome> = {
  AgentTokenBudget: { class: 'permanent', kind: 'limit_exceeded', actions: ['raise maxTokens or split the task'] },
  AgentTurnLimit: { class: 'permanent', kind: 'limit_exceeded', actions: ['raise the turn limit or split the task'] },
  AgentHistoryLimit: { class: 'permanent', kind: 'limit_exceeded', actions: ['narrow the task, split it, or lower maxTurns: every turn adds its messages and tool results to the history'] },
  DecisionInvalid: { class: 'permanent', kind: 'invalid_output', actions: ['make the decision\'s choices clearer'] },
  // The model writes tool calls as text that nothing reads: the endpoint's toolCalls mode is the fix.
  ToolCallNotParsed: { class: 'permanent', kind: 'config', actions: ['set the toolCalls mode the message names for the model\'s endpoint (models.compatible in cadre.config.yaml)', 'or use a model that calls tools'] },
  AgentLoopDetected: { class: 'permanent', kind: 'limit_exceeded', actions: ['sharpen the prompt or the tools, or use a stronger model'] },
  WorkerGaveUp: { class: 'permanent', kind: 'requirement', actions: ['read the worker\'s reason; change the task before running it again'] },
  PlanFailed: { class: 'permanent', kind: 'invalid_request', actions: ['fix the plan'] },
};

/** The class of one of cadre's own failure types, or undefined for a type cadre does not throw. */
export function errorClassOfType(type: string): ErrorClass | undefined {
  return (Object.hasOwn(CADRE_TYPES, type) ? CADRE_TYPES[type as keyof typeof CADRE_TYPES] : WORKFLOW_TYPES[type])?.class;
}

const between = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const rule = (id: string, outcome: Outcome, when: RuleMatchers): ErrorRule => ({ id, ...outcome, when });

// Messages that name a cause: shared by the rows that refine a type and the rows for untyped failures.
const QUOTA = /insufficient_quota|exceeded your current quota|billing hard limit|billing_hard_limit|credit balance is too low/i;
// One request larger than a whole minute's token allowance: waiting does not help.
const OVER_RATE_WINDOW = /Request too large for .* on tokens per min|input or output tokens must be reduced/i;
const UNVERIFIED_ORGANIZATION = /organization must be verified/i;
const MISSING_DEPENDENCY =
  /command not found|\bsh: (?:\d+: )?\S+: not found|is not recognized as an internal or external command|Cannot find (?:module|package) '|No module named |ERR_MODULE_NOT_FOUND|MODULE_NOT_FOUND/;
const GIT_IDENTITY = /Please tell me who you are|Author identity unknown|unable to auto-detect email address/;
const GIT_REMOTE_AUTH = /Authentication failed for|could not read Username|terminal prompts disabled|Permission denied \(publickey\)|Host key verification failed/;
const GIT_SAFE_DIRECTORY = /detected dubious ownership/;
const MERGE_CONFLICT = /CONFLICT \(|Automatic merge failed|would be overwritten by (?:merge|checkout)|you need to resolve your current index first|refusing to merge unrelated histories/;
const GIT_BAD_REVISION = /unknown revision or path not in the working tree|did not match any file\(s\) known to git|invalid reference: |not a valid object name/;
const GIT_NETWORK = /Could not resolve host|remote end hung up|RPC failed|early EOF|Connection (?:was )?reset|Operation timed out/i;

const QUOTA_EXHAUSTED: Outcome = { class: 'user_resolvable', kind: 'quota', actions: ADD_CREDIT };
const RATE_WINDOW_TOO_SMALL: Outcome = { class: 'permanent', kind: 'limit_exceeded', actions: ['send fewer tokens in one request', 'or raise the account\'s rate tier'] };
const ORGANIZATION_UNVERIFIED: Outcome = { class: 'user_resolvable', kind: 'credential', actions: ['verify the organization with the provider', 'or use another model'] };
const DEPENDENCY_MISSING: Outcome = { class: 'user_resolvable', kind: 'dependency', actions: INSTALL };
const IDENTITY_MISSING: Outcome = { class: 'user_resolvable', kind: 'credential', actions: ['set user.name and user.email for the repository', 'resume the worker'] };
const REMOTE_AUTH_FAILED: Outcome = { class: 'user_resolvable', kind: 'credential', actions: ['give the worker credentials for the remote (token or SSH key)', 'resume the worker'] };
const UNSAFE_DIRECTORY: Outcome = { class: 'user_resolvable', kind: 'permission', actions: ['fix the repository\'s owner or add it to safe.directory', 'resume the worker'] };
const CONFLICTING: Outcome = { class: 'user_resolvable', kind: 'merge_conflict', actions: RESOLVE_MERGE };
const BAD_REVISION: Outcome = { class: 'permanent', kind: 'invalid_request', actions: CHECK_NAME };
const CREDENTIAL_REFUSED: Outcome = { class: 'user_resolvable', kind: 'credential', actions: FIX_CREDENTIAL };
const TLS_UNTRUSTED: Outcome = { class: 'user_resolvable', kind: 'tls', actions: ['install the proxy\'s CA certificate (NODE_EXTRA_CA_CERTS)', 'resume the worker'] };
const RESOURCES_EXHAUSTED: Outcome = { class: 'infrastructure', kind: 'resources', actions: ['free the port or file handles (stop the stale process)', 'retry'] };

const PROVIDER_TYPES = ['ModelRateLimited', 'ModelRequestRejected', 'ModelUnavailable', 'ModelAuthFailed', 'ModelNotFound', 'HttpClientError', 'HttpServerError'];
/** Types whose message carries a command's or git's own output. */
const COMMAND_TYPES = ['ShellExit', 'GitFailed'];

/**
 * First cadre's own types, refined where their message names a cause the type hides (a rate
 * limit that is an empty account, a git failure that is a missing identity); then messages that
 * name a cause more precisely than a status could (a 429 that is an empty account, a 404 that is
 * an unverified organization, a dead MCP server reached over ECONNREFUSED); then HTTP status;
 * then Node's code; then the remaining message patterns. The first row whose matchers all match decides.
 */
export const ERROR_RULES: readonly ErrorRule[] = [
  rule('type:provider:quota', QUOTA_EXHAUSTED, { type: PROVIDER_TYPES, message: QUOTA }),
  rule('type:provider:over_rate_window', RATE_WINDOW_TOO_SMALL, { type: ['ModelRateLimited'], message: OVER_RATE_WINDOW }),
  rule('type:provider:organization_unverified', ORGANIZATION_UNVERIFIED, { type: PROVIDER_TYPES, message: UNVERIFIED_ORGANIZATION }),
  rule('type:HttpClientError:auth', CREDENTIAL_REFUSED, { type: ['HttpClientError'], status: [401, 403] }),
  rule('type:command:missing_dependency', DEPENDENCY_MISSING, { type: COMMAND_TYPES, message: MISSING_DEPENDENCY }),
  rule('type:command:git_identity', IDENTITY_MISSING, { type: COMMAND_TYPES, message: GIT_IDENTITY }),
  rule('type:command:git_remote_auth', REMOTE_AUTH_FAILED, { type: COMMAND_TYPES, message: GIT_REMOTE_AUTH }),
  rule('type:command:git_safe_directory', UNSAFE_DIRECTORY, { type: COMMAND_TYPES, message: GIT_SAFE_DIRECTORY }),
  rule('type:command:merge_conflict', CONFLICTING, { type: COMMAND_TYPES, message: MERGE_CONFLICT }),
  rule('type:GitFailed:bad_revision', BAD_REVISION, { type: ['GitFailed'], message: GIT_BAD_REVISION }),
  rule('type:GitFailed:network', { class: 'transient', kind: 'network', actions: RETRY }, { type: ['GitFailed'], message: GIT_NETWORK }),
  ...Object.entries(CADRE_TYPES).map(([type, outcome]) => rule(`type:${type}`, outcome, { type: [type] })),
  ...Object.entries(WORKFLOW_TYPES).map(([type, outcome]) => rule(`type:${type}`, outcome, { type: [type] })),

  // Messages that name their cause, whatever status or code came with them.
  rule('quota_exhausted', QUOTA_EXHAUSTED, { message: QUOTA }),
  rule('over_rate_window', RATE_WINDOW_TOO_SMALL, { message: OVER_RATE_WINDOW }),
  rule('organization_unverified', ORGANIZATION_UNVERIFIED, { message: UNVERIFIED_ORGANIZATION }),
  rule('missing_dependency', DEPENDENCY_MISSING, { message: MISSING_DEPENDENCY }),
  rule('missing_credential', CREDENTIAL_REFUSED, {
    message:
      /API key is missing|API_KEY environment variable is missing|api_key client option must be set|Could not resolve authentication method|Incorrect API key|invalid[ _-]x-api-key|invalid_api_key|authentication_error|permission_error|invalid_token|Invalid or no access token|missing required Authorization header|OAuth token/i,
  }),
  rule('tls_untrusted', TLS_UNTRUSTED, { message: /unable to get local issuer certificate|self[- ]signed certificate/i }),
  rule('git_identity', IDENTITY_MISSING, { message: GIT_IDENTITY }),
  rule('git_remote_auth', REMOTE_AUTH_FAILED, { message: GIT_REMOTE_AUTH }),
  rule('git_safe_directory', UNSAFE_DIRECTORY, { message: GIT_SAFE_DIRECTORY }),
  rule('merge_conflict', CONFLICTING, { message: MERGE_CONFLICT }),
  rule('git_bad_revision', BAD_REVISION, { message: GIT_BAD_REVISION }),
  rule('context_too_long', { class: 'permanent', kind: 'context_too_long', actions: SHORTEN }, {
    message: /context_length_exceeded|maximum context length|prompt is too long|exceed context limit|exceeds model context window|too many tokens/i,
  }),
  rule('mcp_invalid_arguments', { class: 'permanent', kind: 'invalid_request', actions: FIX_REQUEST }, {
    // -32602 is JSON-RPC's invalid params; a zod issue list means arguments of the wrong shape.
    message: /MCP error -32602|"code":\s*"invalid_type"/,
  }),
  rule('mcp_method_not_found', { class: 'permanent', kind: 'not_found', actions: ['use a method or tool the server offers'] }, { message: /MCP error -32601/ }),
  rule('mcp_server_gone', { class: 'infrastructure', kind: 'mcp_server', actions: RESTART_SERVER }, {
    message:
      /MCP error -32000: Connection closed|^(?:Error: )?Not connected$|No valid session ID|"Session not found"|SSE error: TypeError: fetch failed|SSE stream disconnected|(?:MCP|SSE|Streamable HTTP)\b.*\bECONNREFUSED/m,
  }),
  rule('spawn_failed', { class: 'infrastructure', kind: 'process', actions: ['check the command is on PATH and the working directory exists', 'restart the server or reset the worktree', 'retry'] }, {
    // Node says ENOENT for a missing command and for a missing working directory alike.
    message: /\bspawn \S+ ENOENT\b/,
  }),
  rule('broken_pipe', { class: 'infrastructure', kind: 'mcp_server', actions: RESTART_SERVER }, { message: /\bEPIPE\b/ }),

  // HTTP status.
  rule('status:auth', CREDENTIAL_REFUSED, { status: [401, 403, 407] }),
  rule('status:402', QUOTA_EXHAUSTED, { status: [402] }),
  rule('status:404', { class: 'permanent', kind: 'not_found', actions: CHECK_NAME }, { status: [404, 410] }),
  rule('status:413', { class: 'permanent', kind: 'limit_exceeded', actions: ['send a smaller request'] }, { status: [413] }),
  rule('status:429', { class: 'transient', kind: 'rate_limit', actions: RATE_LIMITED }, { status: [429] }),
  rule('status:timeout', { class: 'transient', kind: 'network', actions: RETRY }, { status: [408, 425] }),
  rule('status:4xx', { class: 'permanent', kind: 'invalid_request', actions: FIX_REQUEST }, { status: between(400, 499) }),
  rule('status:5xx', { class: 'transient', kind: 'server_error', actions: RETRY }, { status: between(500, 599) }),

  // Node's err.code.
  rule('code:network', { class: 'transient', kind: 'network', actions: RETRY }, {
    code: ['ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN',
      'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'],
  }),
  rule('code:permission', { class: 'infrastructure', kind: 'permission', actions: FIX_PERMISSIONS }, { code: ['EACCES', 'EPERM', 'EROFS'] }),
  rule('code:disk', { class: 'infrastructure', kind: 'disk', actions: FREE_DISK }, { code: ['ENOSPC', 'EDQUOT'] }),
  rule('code:resources', RESOURCES_EXHAUSTED, { code: ['EMFILE', 'ENFILE', 'EADDRINUSE', 'EBUSY'] }),
  rule('code:dependency', DEPENDENCY_MISSING, { code: ['MODULE_NOT_FOUND', 'ERR_MODULE_NOT_FOUND'] }),
  rule('code:tls', TLS_UNTRUSTED, { code: ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED'] }),
  rule('code:not_found', { class: 'permanent', kind: 'not_found', actions: CHECK_NAME }, { code: ['ENOENT', 'ENOTDIR'] }),

  // Message patterns, for failures that carry nothing else.
  rule('disk_full', { class: 'infrastructure', kind: 'disk', actions: FREE_DISK }, {
    message: /No space left on device|\bENOSPC\b|Disk quota exceeded|System limit for number of file watchers/i,
  }),
  rule('rate_limited', { class: 'transient', kind: 'rate_limit', actions: RATE_LIMITED }, { message: /rate[ _-]?limit|too many requests/i }),
  rule('overloaded', { class: 'transient', kind: 'server_error', actions: RETRY }, { message: /overloaded|high demand/i }),
  rule('server_error', { class: 'transient', kind: 'server_error', actions: RETRY }, {
    message: /internal server error|server had an error|server_error|api_error|bad gateway|service unavailable|gateway time-?out|upstream connect error/i,
  }),
  rule('network', { class: 'transient', kind: 'network', actions: RETRY }, {
    message:
      /socket hang up|\bE(?:CONNRESET|CONNREFUSED|TIMEDOUT|AI_AGAIN|NOTFOUND|HOSTUNREACH|NETUNREACH)\b|fetch failed|UND_ERR_|Connection error|connection (?:was )?reset|connection closed mid-response|timed out|Could not resolve host|remote end hung up|RPC failed|early EOF|unable to connect|ended without sending any chunks/i,
  }),
  rule('git_lock', { class: 'infrastructure', kind: 'git', actions: RESET_WORKTREE }, {
    message: /index\.lock|\.lock': File exists|Another git process seems to be running|cannot lock ref|could not lock/i,
  }),
  rule('git_repository_broken', { class: 'infrastructure', kind: 'git', actions: RESET_WORKTREE }, {
    message: /not a git repository|index file (?:smaller than expected|corrupt)|unable to write new index file|failed to write object|unable to write (?:sha1|loose object)/i,
  }),
  rule('worktree_in_the_way', { class: 'infrastructure', kind: 'worktree', actions: RESET_WORKTREE }, {
    message: /is already checked out at|is already used by worktree|missing but locked worktree|could not create work tree dir|' already exists|already exists and is not an empty directory|A branch named '.*' already exists/,
  }),
  rule('permission_denied', { class: 'infrastructure', kind: 'permission', actions: FIX_PERMISSIONS }, {
    message: /permission denied|operation not permitted|insufficient permission|read-only file system|\bEACCES\b|\bEPERM\b/i,
  }),
  rule('resources_exhausted', RESOURCES_EXHAUSTED, { message: /too many open files|address already in use|\bEMFILE\b|\bEADDRINUSE\b/i }),
  rule('model_not_found', { class: 'permanent', kind: 'not_found', actions: CHECK_NAME }, { message: /model_not_found|not_found_error|\bmodel\b.{0,80}\bdoes not exist/i }),
  rule('content_policy', { class: 'permanent', kind: 'content_policy', actions: ['change the request: the provider\'s policy refuses it'] }, {
    message: /rejected as a result of our safety system|content[_ ]policy|content filtering policy/i,
  }),
  rule('limit_exceeded', { class: 'permanent', kind: 'limit_exceeded', actions: ['raise the limit or split the task'] }, {
    message: /\bbudget\b.*\bexceeded|exceeds? the (?:token|turn|depth) limit|nests more than \d+ levels/i,
  }),
  rule('invalid_request', { class: 'permanent', kind: 'invalid_request', actions: FIX_REQUEST }, {
    message: /invalid_request_error|^Invalid parameter|Unsupported parameter|Unknown parameter|Invalid schema|must be followed by tool messages|JSON schema is invalid/im,
  }),
  rule('unclear_requirement', { class: 'user_resolvable', kind: 'requirement', actions: ANSWER }, {
    // Agents report these in their own words.
    message: /\b(?:unclear|ambiguous) (?:requirements?|task|instructions?)\b|\b(?:requirements?|task|instructions?) (?:is|are) (?:unclear|ambiguous)\b|needs? clarification/i,
  }),
];

// Unknown failures get a bounded retry (as classifyProviderError does): cheap if they repeat, a rescue if they were flaky.
const UNKNOWN: Outcome = { class: 'transient', kind: 'unknown', actions: ['retry a few times with backoff', 'then ask a person'] };

/** The first ERROR_RULES row that matches `sample`, as a classification. */
export function classifyError(sample: ErrorSample): Classification {
  const status = sample.status ?? statusInMessage(sample.message);
  const found = ERROR_RULES.find(({ when }) =>
    (when.type === undefined || (sample.type !== undefined && when.type.includes(sample.type))) &&
    (when.status === undefined || (status !== undefined && when.status.includes(status))) &&
    (when.code === undefined || (sample.code !== undefined && when.code.includes(sample.code))) &&
    (when.message === undefined || when.message.test(sample.message)),
  );
  const outcome = found ?? UNKNOWN;
  return { class: outcome.class, kind: outcome.kind, rule: found?.id ?? 'unknown', actions: [...outcome.actions] };
}

/** An HTTP error status the message states: "429 Rate limit…", "Error code: 401 -", "API Error: 500 {", "(HTTP 400)", "GET … answered 403". */
function statusInMessage(message: string): number | undefined {
  const match = /^(\d{3}) |\b(?:status(?: code)?|HTTP|Error(?: code)?|answered)[\s:(]*(\d{3})\b/i.exec(message);
  const status = match ? Number(match[1] ?? match[2]) : undefined;
  return status !== undefined && status >= 400 && status <= 599 ? status : undefined;
}
