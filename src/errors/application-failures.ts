/**
 * Typed failures thrown by activities. Retry policies tell transient from permanent
 * by `type`; the permanent ones are thrown non-retryable.
 */
import { ApplicationFailure } from '@temporalio/common';

export const ErrorTypes = {
  /** Parameters that do not match the tool's schema: never worth a retry. */
  BadToolInput: 'BadToolInput',
  /** A path that escapes the workspace. */
  OutsideWorkspace: 'OutsideWorkspace',
  /** A shell command that exited non-zero: retried, since scripts can be flaky. */
  ShellExit: 'ShellExit',
  FileNotFound: 'FileNotFound',
  /** HTTP 4xx other than 408/429: the request itself is wrong. */
  HttpClientError: 'HttpClientError',
  /** HTTP 5xx, 408, 429 or a network error: retried. */
  HttpServerError: 'HttpServerError',
  UnknownTool: 'UnknownTool',
  /** A file too big to travel as a step output through Temporal's history (2 MB payloads). */
  TooLarge: 'TooLarge',
  /** The plan's workspace does not exist on this worker's machine. */
  WorkspaceMissing: 'WorkspaceMissing',
  /** The workspace is not on the host that took the activity (a fleet): retried, where another host may take it. */
  WorkspaceNotHere: 'WorkspaceNotHere',
  /**
   * A local activity of a run bound to a lone host ran on another host's worker (one that joined
   * later took the run's workflow task): the run sends it, and its later ones, to the host's queue.
   */
  NotOnHost: 'NotOnHost',
  /** A template read a value that is not there (and gave no default). */
  MissingValue: 'MissingValue',
  /** A value stored outside history cannot be read (gone, changed, another machine's store). */
  StoredValue: 'StoredValue',
  /** An agent's conversation so far cannot be read from the run's store (activities/conversation-chain.ts): the agent sends it whole. */
  ConversationMissing: 'ConversationMissing',
  /** Another git process holds a lock: retried. */
  GitBusy: 'GitBusy',
  /** git refused an operation. */
  GitFailed: 'GitFailed',
  /** A merge that would need a human: the conflicting files are in the details. */
  MergeConflict: 'MergeConflict',
  /** A worktree holds uncommitted work that an operation would lose. */
  WorktreeDirty: 'WorktreeDirty',
  /** Something else is where a worktree should be (another branch, a directory with files). */
  WorktreeConflict: 'WorktreeConflict',
  /** Model configuration (cadre.config.yaml, CADRE_MODEL, keys) that cannot work: fix it, do not retry. */
  ModelConfigInvalid: 'ModelConfigInvalid',
  /** A modelTurn request that is not well formed (messages, tools, schemas): a bug in the caller. */
  BadModelRequest: 'BadModelRequest',
  /** An agent's budget cannot hold its next model turn (providers/turn-budget.ts): a person extends it, or the agent stops. */
  BudgetExhausted: 'BudgetExhausted',
  /** The provider said slow down (HTTP 429): retried after its Retry-After. */
  ModelRateLimited: 'ModelRateLimited',
  /** The provider failed or could not be reached (5xx, network): retried. */
  ModelUnavailable: 'ModelUnavailable',
  /** The provider refused the key (401/403). */
  ModelAuthFailed: 'ModelAuthFailed',
  /** The provider does not know the model (404). */
  ModelNotFound: 'ModelNotFound',
  /** The conversation is longer than the model's context window. */
  ModelContextTooLong: 'ModelContextTooLong',
  /** Any other request the provider rejected (4xx): the same request would be rejected again. */
  ModelRequestRejected: 'ModelRequestRejected',
  /** A server asked for a tool call (toolCalls: required) answered with text: it ignores tool_choice "required". */
  ToolChoiceIgnored: 'ToolChoiceIgnored',
  /** fs.edit found its old_text nowhere in the file, or more than once: nothing changed, the message shows where to look. */
  EditNotApplied: 'EditNotApplied',
  /** A write or edit that would leave a JSON, JavaScript, TypeScript or Python file unparseable: refused, naming the line. */
  SyntaxBroken: 'SyntaxBroken',
  /** The model's reply reached its maxOutputTokens before the tool call it was writing ended. */
  ModelOutputCut: 'ModelOutputCut',
  /** A step whose task is a change (mustChange) answered, after being told, with no write, edit or command that worked. */
  AgentMadeNoChange: 'AgentMadeNoChange',
  /** An agent step's verify command still failed after its failures were sent back to the agent. */
  AgentVerifyFailed: 'AgentVerifyFailed',
  /** The model's final answer does not match the requested output schema. */
  StructuredOutputInvalid: 'StructuredOutputInvalid',
  /** A team role file that cannot be read or is not a valid role. */
  RolesInvalid: 'RolesInvalid',
  /** The conversation departed from a scripted model's scenario. */
  ScriptMismatch: 'ScriptMismatch',
  /** The profile asks for bubblewrap and this worker cannot give it: the message names the fix. */
  SandboxUnavailable: 'SandboxUnavailable',
  /** A sandbox profile that cannot be honoured (it names a secret to pass to tools). */
  SandboxConfigInvalid: 'SandboxConfigInvalid',
  /** A connection the egress policy refuses: the message names the host, its address and the rule. */
  EgressDenied: 'EgressDenied',
  /** A request redirected more often than cadre follows (a loop, or a long chain). */
  TooManyRedirects: 'TooManyRedirects',
} as const;

export function permanent(type: string, message: string, details?: unknown): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true, details: details === undefined ? [] : [details] });
}

export function transient(type: string, message: string, details?: unknown): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: false, details: details === undefined ? [] : [details] });
}
