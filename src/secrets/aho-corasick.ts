/** Finding secrets' patterns: one Aho-Corasick automaton over all of them, one pass over a text, whitespace skipped. */
import { EXTEND_AFTER_STD, EXTEND_AFTER_URL, EXTEND_BEFORE_STD, EXTEND_BEFORE_URL, MIN_SECRET_LENGTH, PATTERN_ENDS } from './encodings';

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
export class Matcher {
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
    const found: number[] = [];
    const { state, last } = this.walk(text, (i, at) => this.record(text, i, at, found));
    if (this.depth[state] >= MIN_SECRET_LENGTH) addSpan(found, this.startOf(text, last, this.depth[state]), last + 1);
    return found;
  }

  /**
   * How many characters at the end of `text` (whitespace within counted) could be the beginning of
   * a secret whose rest has not come yet: text streamed out in pieces holds them back.
   */
  openTail(text: string): number {
    const { state, last } = this.walk(text);
    return this.depth[state] === 0 ? 0 : text.length - this.startOf(text, last, this.depth[state]);
  }

  /** Runs the automaton over `text`, telling `matched` where a pattern ends; the last state, and where it was reached. */
  private walk(text: string, matched?: (index: number, state: number) => void): { state: number; last: number } {
    const { classOf, dense, denseStates, longest, width } = this;
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
      if (matched && longest[state] !== 0) matched(i, state);
    }
    return { state, last };
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
