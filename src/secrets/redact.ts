/**
 * Redaction of known secrets (API keys, tokens, passwords) from what tools produce, before it
 * reaches Temporal history, the blob store, logs or the model. A tool rarely prints a secret only
 * as it is: `base64`, `xxd`, a URL, a JSON body or `set -x` each show it in a form of their own, so
 * every secret becomes a set of literal patterns (its encodings, see `patternsOf`), and one
 * Aho-Corasick automaton over all of them finds every occurrence in a single pass over the text.
 *
 * The scan skips spaces, tabs and line breaks between a pattern's characters, so base64 wrapped at
 * 76 columns, `xxd -p` at 60, `od -An -tx1` / `xxd` groups of hex, and a key a terminal wrapped
 * are found as well (patterns themselves hold no whitespace). Dumps with an offset or character
 * column (`xxd`, `hexdump -C`, `od -c`) are read back into bytes and searched first (see ./dumps).
 */

import { mayHoldDump, redactDumps } from './dumps';

export const REDACTED = '[redacted]';

/**
 * Secrets shorter than this (counting no whitespace) are ignored. Short values ("admin", "1234",
 * "true") occur in ordinary output: replacing them would mangle it, and would show a reader which
 * short value is the secret, while a secret that short is guessed anyway. From 8 bytes on, every
 * base64 alignment still leaves a core of at least 10 characters (60 bits) that depends on the
 * secret alone, and hex 16 characters, so no encoded form is short enough to match by chance.
 */
export const MIN_SECRET_LENGTH = 8;

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

// ---------------------------------------------------------------------------------------------
// The forms a secret takes

/** Each secret as given, trimmed (read from a file, it often ends in a newline), NFC and NFD. */
function* secretForms(secrets: Iterable<string>): Generator<string> {
  for (const secret of secrets) {
    if (typeof secret !== 'string') continue;
    const trimmed = secret.trim();
    for (const form of new Set([secret, trimmed, trimmed.normalize('NFC'), trimmed.normalize('NFD')])) {
      if (withoutWhitespace(form).length >= MIN_SECRET_LENGTH) yield form;
    }
  }
}

/** Bits of `Matcher` pattern flags: a base64 core also takes the partial character next to it. */
const EXTEND_BEFORE_STD = 1;
const EXTEND_AFTER_STD = 2;
const EXTEND_BEFORE_URL = 4;
const EXTEND_AFTER_URL = 8;
/** Set in the trie where some pattern ends, whatever its other flags. */
const PATTERN_ENDS = 0x100;

/**
 * Every literal form of one secret, whitespace removed, with its flags:
 * - as it is;
 * - base64 and base64url at each of the 3 alignments (the core that depends on the secret alone);
 * - hex, lower and upper case;
 * - percent-encoded as the common encoders do it, %XX in either case (`urlForms`);
 * - the standard base64 cores percent-encoded (base64 in a query string);
 * - quoted as shells and scripts print it (`quotedForms`);
 * - each of the above JSON-escaped as the common serializers do it (`jsonForms`), and the secret
 *   JSON-escaped twice (a JSON document inside a JSON string).
 */
function patternsOf(secret: string): Map<string, number> {
  const patterns = new Map<string, number>();
  const add = (form: string, flags = 0) => {
    const text = withoutWhitespace(form);
    if (text.length >= MIN_SECRET_LENGTH) patterns.set(text, (patterns.get(text) ?? 0) | flags);
  };
  const bytes = Buffer.from(secret, 'utf8');
  const escapable: string[] = [secret, ...quotedForms(secret, bytes), ...urlForms(bytes)];
  for (const core of base64Cores(bytes)) {
    const url = toBase64Url(core.text);
    add(core.text, (core.partialBefore ? EXTEND_BEFORE_STD : 0) | (core.partialAfter ? EXTEND_AFTER_STD : 0));
    add(url, (core.partialBefore ? EXTEND_BEFORE_URL : 0) | (core.partialAfter ? EXTEND_AFTER_URL : 0));
    escapable.push(core.text, url, ...urlForms(Buffer.from(core.text, 'latin1'), [URL_STYLES[1]]));
  }
  const hex = bytes.toString('hex');
  escapable.push(hex, hex.toUpperCase());
  for (const form of escapable) {
    add(form);
    for (const escaped of jsonForms(form)) add(escaped);
  }
  add(jsonEscape(jsonEscape(secret, JSON_STYLES[0]), JSON_STYLES[0]));
  return patterns;
}

interface Base64Core {
  text: string;
  /** The character before the core mixes the secret's first bits with what precedes it. */
  partialBefore: boolean;
  /** The character after the core mixes the secret's last bits with what follows (or padding). */
  partialAfter: boolean;
}

/**
 * Inside a longer base64 text, the secret starts at byte 0, 1 or 2 of a 3-byte group. Put k bytes
 * before it: character i encodes bits [6i, 6i+6), the secret occupies bits [8k, 8(k+n)), so the
 * characters from ceil(8k/6) up to (not including) floor(8(k+n)/6) depend on the secret alone and
 * are the same whatever surrounds it. At n >= 8 that core is at least 10 characters long.
 */
function base64Cores(bytes: Buffer): Base64Core[] {
  const cores: Base64Core[] = [];
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const bitsEnd = 8 * (k + bytes.length);
    cores.push({
      text: encoded.slice(Math.ceil((8 * k) / 6), Math.floor(bitsEnd / 6)),
      partialBefore: (8 * k) % 6 !== 0,
      partialAfter: bitsEnd % 6 !== 0,
    });
  }
  return cores;
}

function toBase64Url(base64: string): string {
  return base64.replace(/\+/g, '-').replace(/\//g, '_');
}

/** The characters a percent-encoder leaves as they are, and what it makes of a space. */
interface UrlStyle {
  keep: RegExp;
  spaceAsPlus?: boolean;
}

const URL_STYLES: UrlStyle[] = [
  { keep: /[A-Za-z0-9\-_.!~*'()]/ }, // encodeURIComponent
  { keep: /[A-Za-z0-9\-_.~]/ }, // RFC 3986 unreserved: curl --data-urlencode, Python quote(safe='')
  { keep: /[A-Za-z0-9\-_.~/]/ }, // Python urllib.parse.quote, which keeps "/"
  { keep: /[A-Za-z0-9\-_.!~*'();,/?:@&=+$#]/ }, // encodeURI, a whole URL
  { keep: /[A-Za-z0-9*\-_.]/, spaceAsPlus: true }, // HTML forms, URLSearchParams
  { keep: /[A-Za-z0-9\-_.~]/, spaceAsPlus: true }, // Go url.QueryEscape, Python quote_plus
  { keep: /(?!)/ }, // every byte as %XX
];

/** `bytes` percent-encoded in each style, %XX in upper and in lower case. */
function urlForms(bytes: Buffer, styles = URL_STYLES): string[] {
  const forms: string[] = [];
  for (const style of styles) {
    for (const upper of [true, false]) {
      let out = '';
      for (const byte of bytes) {
        const ch = String.fromCharCode(byte);
        if (byte < 0x80 && style.keep.test(ch)) out += ch;
        else if (byte === 0x20 && style.spaceAsPlus) out += '+';
        else out += '%' + hex2(byte, upper);
      }
      forms.push(out);
    }
  }
  return forms;
}

/**
 * The secret as shells and scripts quote it: 'single' as `set -x` prints it, "double" as
 * `declare -p` does, $'...' with octal bytes as bash does for non-ASCII in the C locale, and with
 * \xNN bytes as Python prints bytes (`print(response.content)`).
 */
function quotedForms(secret: string, bytes: Buffer): string[] {
  const escapeBytes = (other: (byte: number) => string) =>
    Array.from(bytes, (byte) => NAMED_BYTE_ESCAPES[byte] ?? (byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : other(byte))).join('');
  return [
    secret.replace(/'/g, `'\\''`),
    secret.replace(/["\\$`]/g, '\\$&'),
    escapeBytes((byte) => '\\' + byte.toString(8).padStart(3, '0')),
    escapeBytes((byte) => '\\x' + hex2(byte)),
  ];
}

const NAMED_BYTE_ESCAPES: Record<number, string> = { 0x09: '\\t', 0x0a: '\\n', 0x0d: '\\r', 0x27: "\\'", 0x5c: '\\\\' };

/** How a JSON serializer writes a string's characters. */
interface JsonStyle {
  /** Every non-ASCII character as \uXXXX (UTF-16, so a surrogate pair for astral ones). */
  asciiOnly?: boolean;
  /** These characters as \u00XX. */
  unicodeEscaped?: string;
  /** "/" as "\/". */
  slash?: boolean;
  /** U+2028 and U+2029 as \u2028, \u2029. */
  lineSeparators?: boolean;
  upperHex?: boolean;
}

const JSON_STYLES: JsonStyle[] = [
  {}, // JSON.stringify, Rust serde_json, Java Jackson, Python with ensure_ascii=False
  { asciiOnly: true }, // Python json.dumps
  { unicodeEscaped: '<>&', lineSeparators: true }, // Go encoding/json
  { asciiOnly: true, slash: true }, // PHP json_encode
  { asciiOnly: true, unicodeEscaped: '<>&\'+`"', upperHex: true }, // .NET System.Text.Json
];

const SHORT_ESCAPES: Record<string, string> = { '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '"': '\\"', '\\': '\\\\' };

function jsonForms(s: string): string[] {
  return JSON_STYLES.map((style) => jsonEscape(s, style));
}

/** `s` as it appears between the quotes of a JSON string written in `style`. */
function jsonEscape(s: string, style: JsonStyle): string {
  if (/^[A-Za-z0-9 !#$%()*,\-.:;=?@[\]^_{|}~]*$/.test(s)) return s; // nothing any style escapes
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    const code = s.charCodeAt(i);
    if (style.unicodeEscaped?.includes(ch)) out += unicodeEscape(code, style);
    else if (SHORT_ESCAPES[ch]) out += SHORT_ESCAPES[ch];
    else if (code < 0x20 || isLoneSurrogate(s, i)) out += unicodeEscape(code, style);
    else if (ch === '/' && style.slash) out += '\\/';
    else if (code >= 0x7f && style.asciiOnly) out += unicodeEscape(code, style);
    else if ((code === 0x2028 || code === 0x2029) && style.lineSeparators) out += unicodeEscape(code, style);
    else out += ch;
  }
  return out;
}

function unicodeEscape(code: number, style: JsonStyle): string {
  return '\\u' + hex2(code >> 8, style.upperHex) + hex2(code & 0xff, style.upperHex);
}

function isLoneSurrogate(s: string, i: number): boolean {
  const code = s.charCodeAt(i);
  if (code >= 0xd800 && code <= 0xdbff) return !(s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff);
  if (code >= 0xdc00 && code <= 0xdfff) return !(s.charCodeAt(i - 1) >= 0xd800 && s.charCodeAt(i - 1) <= 0xdbff);
  return false;
}

function hex2(byte: number, upper = false): string {
  const hex = byte.toString(16).padStart(2, '0');
  return upper ? hex.toUpperCase() : hex;
}

function withoutWhitespace(s: string): string {
  return s.replace(/[ \t\r\n]/g, '');
}

// ---------------------------------------------------------------------------------------------
// Finding them: one Aho-Corasick automaton, one pass

/** Character classes: 0 for a character no pattern has, SKIP for whitespace. */
const SKIP = 0xffff;
const isWhitespace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
const isBase64Std = (ch: string) => /[A-Za-z0-9+/]/.test(ch);
const isBase64Url = (ch: string) => /[A-Za-z0-9\-_]/.test(ch);

/** States this close to the root get a full row of next states: the scan spends its time there. */
const DENSE_DEPTH = 4;

/**
 * An Aho-Corasick automaton over UTF-16 code units, states numbered breadth first. The states
 * within DENSE_DEPTH of the root have a full row of next states (one column per character some
 * pattern has, one for all others); deeper ones, where a text rarely goes unless it holds a
 * secret, only their children and their failure state. A text costs about one lookup per
 * character, whatever the number of patterns, and the automaton stays small (about 1 MiB for 40
 * secrets) and quick to build.
 */
class Matcher {
  private readonly classOf = new Uint16Array(0x10000);
  private readonly width: number;
  /** Rows of next states for states 0 .. denseStates - 1. */
  private readonly dense: Int32Array;
  private readonly denseStates: number;
  /** The children of a state are firstChild[state], then each one's sibling, reached by edge[child]. */
  private readonly firstChild: Int32Array;
  private readonly sibling: Int32Array;
  private readonly edge: Uint16Array;
  private readonly fail: Int32Array;
  /** Length of the longest pattern that ends in a state, 0 for none. */
  private readonly longest: Int32Array;
  /** Characters of the longest pattern prefix a state stands for. */
  private readonly depth: Int32Array;
  private readonly extendBefore: Uint8Array;
  private readonly extendAfter: Uint8Array;

  constructor(patterns: Map<string, number>) {
    let width = 1;
    let bound = 1;
    for (const pattern of patterns.keys()) {
      bound += pattern.length;
      for (let i = 0; i < pattern.length; i++) if (this.classOf[pattern.charCodeAt(i)] === 0) this.classOf[pattern.charCodeAt(i)] = width++;
    }
    for (const code of [0x20, 0x09, 0x0a, 0x0d]) this.classOf[code] = SKIP;
    this.width = width;

    // The trie, in insertion order.
    const trie = { firstChild: new Int32Array(bound), sibling: new Int32Array(bound), edge: new Uint16Array(bound), ends: new Uint16Array(bound) };
    let states = 1;
    for (const [pattern, flags] of patterns) {
      let state = 0;
      for (let i = 0; i < pattern.length; i++) {
        const cls = this.classOf[pattern.charCodeAt(i)];
        let child = trie.firstChild[state];
        while (child !== 0 && trie.edge[child] !== cls) child = trie.sibling[child];
        if (child === 0) {
          child = states++;
          trie.edge[child] = cls;
          trie.sibling[child] = trie.firstChild[state];
          trie.firstChild[state] = child;
        }
        state = child;
      }
      trie.ends[state] |= flags | PATTERN_ENDS;
    }

    // Numbered again breadth first: a state's failure state (shorter) comes before it, and the
    // dense states are the first ones.
    const order = new Int32Array(states);
    const renumbered = new Int32Array(states);
    this.depth = new Int32Array(states);
    let denseStates = 0;
    for (let head = 0, tail = 1; head < tail; head++) {
      renumbered[order[head]] = head;
      if (this.depth[head] <= DENSE_DEPTH) denseStates = head + 1;
      for (let child = trie.firstChild[order[head]]; child !== 0; child = trie.sibling[child]) {
        this.depth[tail] = this.depth[head] + 1;
        order[tail++] = child;
      }
    }
    this.denseStates = denseStates;
    this.firstChild = new Int32Array(states);
    this.sibling = new Int32Array(states);
    this.edge = new Uint16Array(states);
    const ends = new Uint16Array(states);
    for (let state = 0; state < states; state++) {
      const old = order[state];
      this.firstChild[state] = renumbered[trie.firstChild[old]];
      this.sibling[state] = renumbered[trie.sibling[old]];
      this.edge[state] = trie.edge[old];
      ends[state] = trie.ends[old];
    }

    // Failure states, outputs and dense rows, breadth first.
    this.fail = new Int32Array(states);
    this.longest = new Int32Array(states);
    this.extendBefore = new Uint8Array(states);
    this.extendAfter = new Uint8Array(states);
    this.dense = new Int32Array(denseStates * width);
    for (let state = 0; state < states; state++) {
      const own = ends[state];
      const fallback = this.fail[state];
      if (state !== 0) {
        this.longest[state] = own !== 0 ? this.depth[state] : this.longest[fallback];
        this.extendBefore[state] = own !== 0 ? own & (EXTEND_BEFORE_STD | EXTEND_BEFORE_URL) : this.extendBefore[fallback];
        this.extendAfter[state] = (own & (EXTEND_AFTER_STD | EXTEND_AFTER_URL)) | this.extendAfter[fallback];
      }
      for (let child = this.firstChild[state]; child !== 0; child = this.sibling[child]) {
        this.fail[child] = state === 0 ? 0 : this.step(fallback, this.edge[child]);
      }
      if (state < denseStates) {
        // The failure state's row, with this state's own children put in.
        const row = state * width;
        if (state !== 0) this.dense.copyWithin(row, fallback * width, fallback * width + width);
        for (let child = this.firstChild[state]; child !== 0; child = this.sibling[child]) this.dense[row + this.edge[child]] = child;
      }
    }
  }

  /** The state after `state` reads a character of class `cls` (not 0, not SKIP). */
  private step(state: number, cls: number): number {
    for (;;) {
      if (state < this.denseStates) return this.dense[state * this.width + cls];
      for (let child = this.firstChild[state]; child !== 0; child = this.sibling[child]) if (this.edge[child] === cls) return child;
      state = this.fail[state];
    }
  }

  /**
   * Where secrets are in `text`, as sorted, disjoint [start, end) pairs, flattened. A text that ends
   * inside a secret (cut by a size limit) loses that secret's beginning as well.
   */
  spans(text: string): number[] {
    const { classOf, dense, denseStates, longest, width } = this;
    const found: number[] = [];
    let state = 0;
    let last = -1;
    for (let i = 0; i < text.length; i++) {
      const cls = classOf[text.charCodeAt(i)];
      if (cls === SKIP) continue;
      if (cls === 0) {
        state = 0;
        continue;
      }
      state = state < denseStates ? dense[state * width + cls] : this.step(state, cls);
      last = i;
      if (longest[state] !== 0) this.record(text, i, state, found);
    }
    if (this.depth[state] >= MIN_SECRET_LENGTH) addSpan(found, this.startOf(text, last, this.depth[state]), last + 1);
    return found;
  }

  private record(text: string, end: number, state: number, found: number[]): void {
    let start = this.startOf(text, end, this.longest[state]);
    let stop = end + 1;
    const before = this.extendBefore[state];
    if (before !== 0) {
      const i = this.neighbour(text, start, -1);
      if (i >= 0 && this.base64Char(text[i], before & EXTEND_BEFORE_STD, before & EXTEND_BEFORE_URL)) start = i;
    }
    const after = this.extendAfter[state];
    if (after !== 0) {
      const i = this.neighbour(text, end, 1);
      if (i < text.length && this.base64Char(text[i], after & EXTEND_AFTER_STD, after & EXTEND_AFTER_URL)) stop = i + 1;
    }
    addSpan(found, start, stop);
  }

  /** Index of the `length`th non-whitespace character back from `end` (inclusive). */
  private startOf(text: string, end: number, length: number): number {
    let i = end;
    for (let seen = 1; seen < length; ) if (!isWhitespace(text.charCodeAt(--i))) seen++;
    return i;
  }

  /** The first non-whitespace character from `from` in `direction`. */
  private neighbour(text: string, from: number, direction: 1 | -1): number {
    let i = from + direction;
    while (i >= 0 && i < text.length && isWhitespace(text.charCodeAt(i))) i += direction;
    return i;
  }

  private base64Char(ch: string, std: number, url: number): boolean {
    return (std !== 0 && isBase64Std(ch)) || (url !== 0 && isBase64Url(ch));
  }
}

/**
 * Adds [start, end) to sorted, disjoint, flattened pairs, merging it with those it overlaps or
 * touches. Spans come in the order their matches end, so a new one reaches past the last one's
 * start: it either follows it or swallows it (and maybe more before it).
 */
function addSpan(spans: number[], start: number, end: number): void {
  while (spans.length > 0 && start <= spans[spans.length - 1]) {
    end = Math.max(end, spans.pop()!);
    start = Math.min(start, spans.pop()!);
  }
  spans.push(start, end);
}
