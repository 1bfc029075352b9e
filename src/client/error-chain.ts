/** An error's message with its causes', which is where gRPC puts the server's reason. */
export function errorChain(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e instanceof Error && parts.length < 5; e = (e as { cause?: unknown }).cause) {
    if (!parts.includes(e.message)) parts.push(e.message);
  }
  return parts.join(': ');
}
