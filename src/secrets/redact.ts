/**
 * Redaction of known secrets (API keys, tokens, passwords) from what tools produce, before it
 * reaches Temporal history, the blob store, logs or the model. A tool rarely prints a secret only
 * as it is: `base64`, `xxd`, a URL, a JSON body or `set -x` each show it in a form of their own, so
 * every secret becomes a set of literal patterns (its encodings, see `patternsOf` in ./encodings),
 * and one Aho-Corasick automaton over all of them (./aho-corasick) finds every occurrence in a
 * single pass over the text.
 *
 * The scan skips spaces, tabs and line breaks between a pattern's characters, so base64 wrapped at
 * 76 columns, `xxd -p` at 60, `od -An -tx1` / `xxd` groups of hex, and a key a terminal wrapped
 * are found as well (patterns themselves hold no whitespace). Dumps with an offset or character
 * column (`xxd`, `hexdump -C`, `od -c`) are read back into bytes and searched first (see ./dumps).
 */

import { mayHoldDump, redactDumps } from './dumps';
import { MIN_SECRET_LENGTH, patternsOf, secretForms } from './encodings';
import { Matcher } from './aho-corasick';

export { MIN_SECRET_LENGTH } from './encodings';

export const REDACTED = '[redacted]';

export class Redactor {
  /** True when no secret is long enough to be looked for: `text` and `value` change nothing. */
  readonly empty: boolean;
  private readonly matcher: Matcher | undefined;
  /** The secrets beyond ASCII as UTF-8 bytes: `matcher` finds the others in bytes read as latin1. */
  private readonly utf8Secrets: Buffer[] = [];

  constructor(secrets: Iterable<string>) {
    const patterns = new Map<string, number>();
    for (const secret of new Set(secretForms(secrets))) {
      for (const [text, flags] of patternsOf(secret)) patterns.set(text, (patterns.get(text) ?? 0) | flags);
      if (Buffer.byteLength(secret) !== secret.length) this.utf8Secrets.push(Buffer.from(secret, 'utf8'));
    }
    this.empty = patterns.size === 0;
    this.matcher = this.empty ? undefined : new Matcher(patterns);
  }

  /** `s` with every occurrence of a secret, in any of its encodings, replaced by REDACTED. */
  text(s: string): string {
    if (this.matcher === undefined || s.length < MIN_SECRET_LENGTH) return s;
    if (mayHoldDump(s)) s = redactDumps(s, (bytes) => this.inBytes(bytes), REDACTED);
    const spans = this.matcher.spans(s);
    if (spans.length === 0) return s;
    let out = '';
    let at = 0;
    for (let i = 0; i < spans.length; i += 2) {
      out += s.slice(at, spans[i]) + REDACTED;
      at = spans[i + 1];
    }
    return out + s.slice(at);
  }

  /** Characters at the end of `s` that could begin a secret still to come (0 for most texts): see Matcher.openTail. */
  openTail(s: string): number {
    return this.matcher === undefined ? 0 : this.matcher.openTail(s);
  }

  /** Where secrets are in bytes (a dump's), in any encoding, as flattened [start, end) pairs. */
  private inBytes(bytes: Buffer): number[] {
    const spans = this.matcher!.spans(bytes.toString('latin1'));
    for (const secret of this.utf8Secrets) {
      for (let at = bytes.indexOf(secret); at !== -1; at = bytes.indexOf(secret, at + 1)) spans.push(at, at + secret.length);
    }
    return spans;
  }

  /**
   * A copy of JSON data with every string redacted, object keys included. Arrays and plain objects
   * are always copied (the result can be changed freely), shared and cyclic references come out
   * shared and cyclic as they went in. Anything else (numbers, Buffers, Dates, Maps, class
   * instances) is returned as it is, unsearched: tool outputs are JSON data. Two keys that redact
   * to the same text keep both entries, the later one as `[redacted] (2)`.
   */
  value<T>(v: T): T {
    return this.copy(v, new Map()) as T;
  }

  private copy(v: unknown, copies: Map<object, unknown>): unknown {
    if (typeof v === 'string') return this.text(v);
    if (v === null || typeof v !== 'object') return v;
    const done = copies.get(v);
    if (done !== undefined) return done;
    if (Array.isArray(v)) {
      const out: unknown[] = new Array<unknown>(v.length);
      copies.set(v, out);
      for (let i = 0; i < v.length; i++) if (i in v) out[i] = this.copy(v[i], copies);
      return out;
    }
    const proto = Object.getPrototypeOf(v) as object | null;
    if (proto !== Object.prototype && proto !== null) return v;
    const out = Object.create(proto) as Record<string, unknown>;
    copies.set(v, out);
    for (const [key, item] of Object.entries(v)) {
      let name = this.text(key);
      for (let n = 2; Object.prototype.hasOwnProperty.call(out, name); n++) name = `${this.text(key)} (${n})`;
      // defineProperty, not assignment: a "__proto__" key stays a key.
      Object.defineProperty(out, name, { value: this.copy(item, copies), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
}
