/** What model calls used: tokens as providers count them. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of the input tokens, those the provider read from its cache (priced apart), when it says. */
  cachedInputTokens?: number;
}
