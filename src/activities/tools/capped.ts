/**
 * Tool output kept within a byte limit, saying so in structure when it was cut: step outputs
 * travel through Temporal's history, whose payloads stop at 2 MB.
 */

/** What was kept of a stream as text, and how many bytes were not. */
export interface Kept {
  text: string;
  dropped: number;
}

export class CappedBytes {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    const kept = chunk.subarray(0, Math.max(0, this.limit - this.size));
    if (kept.length > 0) this.chunks.push(kept);
    this.size += kept.length;
    this.dropped += chunk.length - kept.length;
  }

  /** The kept bytes as UTF-8 ending on a whole character: a character cut in two counts as dropped. */
  finish(): Kept {
    const kept = Buffer.concat(this.chunks);
    const whole = this.dropped > 0 ? kept.subarray(0, wholeUtf8Length(kept)) : kept;
    return { text: whole.toString('utf8'), dropped: this.dropped + kept.length - whole.length };
  }
}

/** The fields of a cut output, `{ truncated: true, droppedBytes: { stdout: 37856 } }`, or none when everything was kept. */
export function truncation(streams: Record<string, Kept>): { truncated?: true; droppedBytes?: Record<string, number> } {
  const cut = Object.entries(streams).filter(([, kept]) => kept.dropped > 0);
  return cut.length === 0 ? {} : { truncated: true, droppedBytes: Object.fromEntries(cut.map(([name, kept]) => [name, kept.dropped])) };
}

/** How many leading bytes of `buf` hold whole UTF-8 characters. */
function wholeUtf8Length(buf: Buffer): number {
  // A character is at most 4 bytes: the last one starts within the last 4.
  for (let back = 1; back <= Math.min(4, buf.length); back++) {
    const byte = buf[buf.length - back];
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte
    const length = byte < 0x80 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    return length <= back ? buf.length : buf.length - back;
  }
  return buf.length;
}
