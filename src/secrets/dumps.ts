/**
 * Secrets in the dumps `xxd`, `hexdump`, `hd` and `od` print. Their lines carry an offset column
 * and often a character column, so a secret shows in pieces of at most 16 bytes a line, too short
 * for the redactor's patterns. Here each run of consecutive dump lines is read back into the bytes
 * it shows, those bytes are searched, and every line that shows a byte of a secret becomes its
 * offset followed by `[redacted]`.
 *
 * A dump line is an offset (hex, octal or decimal digits; `xxd` adds a colon; `od -An` has none),
 * then either hex groups (bytes, or 2-, 4- or 8-byte words, which `od` and `hexdump` print
 * little-endian and `xxd` big-endian, so the bytes are searched in both orders) and maybe a
 * character column (`  |...|`, `  >...<`, or for `xxd` after two spaces), or characters in fields
 * of equal width (`od -c`, `od -a`, `hexdump -c`). A `*` line repeats the line before it up to the
 * next offset. With several types (`od -tcx1`) the lines after the first, without offset, show the
 * same bytes again, and go with it.
 */

/** Where secrets are in `bytes`, as flattened [start, end) pairs, in any order. */
export type ByteSearch = (bytes: Buffer) => number[];

/**
 * True when `text` may hold a dump: a line starting with an offset and something more, followed by
 * a line starting with an offset, a space or `*`; or a line starting with four `od -An -c` fields.
 * Only lines starting with a hex digit or a space are looked at, so other text pays little.
 */
export function mayHoldDump(text: string): boolean {
  for (let at = 0; at < text.length; at = text.indexOf('\n', at) + 1 || text.length) {
    const code = text.charCodeAt(at);
    if (!isHexDigit(code) && code !== 0x20) continue;
    DUMP_START.lastIndex = at;
    if (DUMP_START.test(text)) return true;
  }
  return false;
}

const DUMP_START = /[0-9A-Fa-f]{6,16}:? +\S.*\r?\n(?:[0-9A-Fa-f]{6}| |\*)|(?: {3}\S| {2}\\\S| [0-7]{3}){4}/y;

/** `text` with every dump line that shows a byte of a secret `search` finds replaced. */
export function redactDumps(text: string, search: ByteSearch, replacement: string): string {
  const lines = text.split('\n');
  const out = new Bytes();
  const redacted = new Set<number>();
  for (let i = 0; i < lines.length; ) {
    const run = readRun(lines, i, out);
    if (run === undefined) {
      i++;
      continue;
    }
    for (const record of recordsWithSecrets(run.items, out, search)) {
      for (let line = record.line; line <= record.last; line++) redacted.add(line);
    }
    i = run.end;
  }
  if (redacted.size === 0) return text;
  return lines
    .map((line, i) => {
      if (!redacted.has(i)) return line;
      const offset = OFFSET.exec(line);
      return `${offset ? `${offset[0]} ` : /^\s*/.exec(line)![0]}${replacement}${line.endsWith('\r') ? '\r' : ''}`;
    })
    .join('\n');
}

// ---------------------------------------------------------------------------------------------
// Dump lines

/** The bytes of a run's lines, as shown and with each hex group's bytes reversed (words). */
class Bytes {
  shown = new Uint8Array(1024);
  reversed = new Uint8Array(1024);
  length = 0;
  /** Some hex group was wider than a byte: the reversed order differs. */
  words = false;

  push(shown: number, reversed = shown): void {
    if (this.length === this.shown.length) {
      for (const order of ['shown', 'reversed'] as const) {
        const bigger = new Uint8Array(this.length * 2);
        bigger.set(this[order]);
        this[order] = bigger;
      }
    }
    this.reversed[this.length] = reversed;
    this.shown[this.length++] = shown;
  }
}

interface Line {
  kind: 'hex' | 'chars';
  /** The offset column as printed, with xxd's colon; undefined for `od -An`. */
  offset?: string;
  /** Where the body starts: continuation lines' bodies start there too. */
  bodyStart: number;
  /** The line's bytes, out.shown[start .. end). */
  start: number;
  end: number;
}

/** Lines longer than this are no dump lines (`od -tcd1`, among the widest, is under 100). */
const MAX_LINE = 400;
const OFFSET = /^([0-9A-Fa-f]{6,16})(:?)(?=[ \t\r]|$)/;

/**
 * A dump line, its bytes added to `out`; 'end' for a lone offset (the closing line of `od` and
 * `hexdump`); undefined, `out` unchanged, for any other line.
 */
function readLine(line: string, out: Bytes): Line | 'end' | undefined {
  if (line.length > MAX_LINE) return undefined;
  const start = out.length;
  const offset = OFFSET.exec(line);
  if (offset === null) {
    const kind = line.startsWith(' ') ? readBody(line, 0, false, out) : undefined;
    return kind && { kind, bodyStart: 0, start, end: out.length };
  }
  if (isBlank(line, offset[0].length)) return 'end';
  const kind = readBody(line, offset[0].length, offset[2] === ':', out);
  return kind && { kind, offset: offset[0], bodyStart: offset[1].length, start, end: out.length };
}

/** The bytes of a line's body added to `out`, and what it was; undefined, `out` unchanged, if none. */
function readBody(line: string, start: number, xxd: boolean, out: Bytes): Line['kind'] | undefined {
  // xxd: hex groups, then two spaces and the characters; hexdump -C, od -tx1z: the characters
  // between | or >.
  const columns = xxd ? line.indexOf('  ', start + 1) : line.indexOf('  |', start) + 1 || line.indexOf('  >', start) + 1;
  if (readHex(line, start, columns > 0 ? columns : line.length, out)) return 'hex';
  return !xxd && readChars(line, start, out) ? 'chars' : undefined;
}

function isBlank(line: string, from: number): boolean {
  for (let i = from; i < line.length; i++) if (!isSpace(line.charCodeAt(i))) return false;
  return true;
}

const isSpace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0d;

/** Hex groups of whole bytes between spaces: `736b 2d61`, `73 6b  2d`, `6b73612d`. */
function readHex(line: string, start: number, end: number, out: Bytes): boolean {
  const mark = out.length;
  let group = -1;
  for (let i = start; i <= end; i++) {
    const code = i < end ? line.charCodeAt(i) : 0x20;
    if (isHexDigit(code)) {
      if (group === -1) group = i;
    } else if (!isSpace(code) || (group !== -1 && (i - group) % 2 !== 0)) {
      out.length = mark;
      return false;
    } else if (group !== -1) {
      if (i - group > 2) out.words = true;
      for (let j = group; j < i; j += 2) out.push(hexByte(line, j), hexByte(line, group + i - j - 2));
      group = -1;
    }
  }
  return out.length > mark;
}

/** The value of each hex digit by character code, -1 for other ASCII characters. */
const HEX = Int8Array.from({ length: 128 }, (_, code) => '0123456789abcdef'.indexOf(String.fromCharCode(code).toLowerCase()));

const isHexDigit = (code: number) => code < 128 && HEX[code] >= 0;

function hexByte(line: string, at: number): number {
  return (HEX[line.charCodeAt(at)] << 4) | HEX[line.charCodeAt(at + 1)];
}

/**
 * Characters right-aligned in fields of equal width (4 for `od -c`, 5 for `od -tcd1`), a blank
 * field being a space.
 */
function readChars(line: string, start: number, out: Bytes): boolean {
  const end = line.endsWith('\r') ? line.length - 1 : line.length;
  for (let width = 4; width <= 8; width++) {
    const mark = out.length;
    if (readFields(line, start, end, width, out)) return out.length > mark;
    out.length = mark;
  }
  return false;
}

function readFields(line: string, start: number, end: number, width: number, out: Bytes): boolean {
  let field = 0;
  for (let i = start; i < end; ) {
    if (line.charCodeAt(i) === 0x20) {
      i++;
      continue;
    }
    let tokenEnd = i;
    while (tokenEnd < end && line.charCodeAt(tokenEnd) !== 0x20) tokenEnd++;
    const fieldEnd = (tokenEnd - start) / width;
    if (!Number.isInteger(fieldEnd) || tokenEnd - i >= width) return false;
    for (; field < fieldEnd - 1; field++) out.push(0x20);
    if (!readChar(line, i, tokenEnd, out)) return false;
    field++;
    i = tokenEnd;
  }
  for (; field < Math.floor((end - start) / width); field++) out.push(0x20);
  return true;
}

/** The letter after a backslash, and its byte. */
const ESCAPES: Record<string, number> = { 0: 0, a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '\\': 0x5c };
/** `od -a`'s names, by byte. */
const NAMES = 'nul soh stx etx eot enq ack bel bs ht nl vt ff cr so si dle dc1 dc2 dc3 dc4 nak syn etb can em sub esc fs gs rs us sp'.split(' ');

/** One field: a character, an escape (`\n`, `\0`), three octal digits (`033`, `\377`), a name (`nl`). */
function readChar(line: string, start: number, end: number, out: Bytes): boolean {
  const first = line.charCodeAt(start);
  if (end - start === 1 && first < 0x80) {
    out.push(first);
    return true;
  }
  const digits = first === 0x5c && end - start === 4 ? start + 1 : start;
  if (end - digits === 3 && isOctal(line.charCodeAt(digits), 0x33) && isOctal(line.charCodeAt(digits + 1)) && isOctal(line.charCodeAt(digits + 2))) {
    out.push(((line.charCodeAt(digits) - 0x30) << 6) | ((line.charCodeAt(digits + 1) - 0x30) << 3) | (line.charCodeAt(digits + 2) - 0x30));
    return true;
  }
  const token = line.slice(start, end);
  let bytes: number[] | undefined;
  if (token === '**') bytes = []; // uutils od: a multi-byte character's other bytes, shown with its first
  else if ([...token].length === 1) bytes = [...Buffer.from(token, 'utf8')];
  else if (first === 0x5c && token.length === 2 && ESCAPES[token[1]] !== undefined) bytes = [ESCAPES[token[1]]];
  else if (token === 'del') bytes = [0x7f];
  else if (NAMES.includes(token)) bytes = [NAMES.indexOf(token)];
  for (const byte of bytes ?? []) out.push(byte);
  return bytes !== undefined;
}

const isOctal = (code: number, highest = 0x37) => code >= 0x30 && code <= highest;

// ---------------------------------------------------------------------------------------------
// Runs of dump lines

/** A line of bytes, out.shown[start .. end), with the lines after it that show them again. */
interface DumpRecord {
  line: number;
  last: number;
  offset?: string;
  start: number;
  end: number;
}

/** A record, a `*` line (the record before it, again, up to the next offset), or the last offset. */
type Item = DumpRecord | { repeat: true } | { close: string };

/**
 * The run of dump lines from lines[first], their bytes in `out`: lines like the first one (with
 * an offset or not, xxd or not, hex or characters), `*` lines, lines without offset under lines
 * with one, and the closing offset. At least two lines with bytes.
 */
function readRun(lines: string[], first: number, out: Bytes): { items: Item[]; end: number } | undefined {
  out.length = 0;
  out.words = false;
  const lead = readLine(lines[first], out);
  if (lead === undefined || lead === 'end') return undefined;
  const xxd = lead.offset?.endsWith(':');
  const items: Item[] = [record(lead, first)];
  let records = 1;
  let i = first + 1;
  for (; i < lines.length; i++) {
    const text = lines[i];
    if (text.length <= 3 && text.trim() === '*') {
      items.push({ repeat: true });
      continue;
    }
    const line = readLine(text, out);
    if (line === 'end' && lead.offset !== undefined) {
      items.push({ close: text.trim() });
      i++;
      break;
    }
    if (line !== undefined && line !== 'end') {
      if ((line.offset === undefined) === (lead.offset === undefined) && line.offset?.endsWith(':') === xxd && line.kind === lead.kind) {
        items.push(record(line, i));
        records++;
        continue;
      }
      out.length = line.start;
    }
    // The same bytes as another type (hex, characters, octal or decimal numbers): a line without
    // offset, its body where the first one's is. Its bytes are not kept.
    const last = items[items.length - 1];
    if (!('line' in last) || xxd || text.length > MAX_LINE || !isBlank(text.slice(0, lead.bodyStart), 0)) break;
    const mark = out.length;
    const again = readBody(text, lead.bodyStart, false, out) ?? (NUMBERS.test(text) ? 'numbers' : undefined);
    out.length = mark;
    if (again === undefined || (lead.offset === undefined && again === lead.kind)) break;
    last.last = i;
  }
  return records >= 2 ? { items, end: i } : undefined;
}

const NUMBERS = /^\s+[-+]?[0-9][-+0-9.e\s]*$/;

function record(line: Line, index: number): DumpRecord {
  return { line: index, last: index, offset: line.offset, start: line.start, end: line.end };
}

/** A `*` stands for at most this many copies of the line before it: no secret holds more copies of one line. */
const MAX_REPEATS = 64;

/** The records that show a byte of a secret, searched in the bytes as shown and with words reversed. */
function recordsWithSecrets(items: Item[], out: Bytes, search: ByteSearch): Set<DumpRecord> {
  // Where each record's bytes start in the run's bytes (a record again for each repeat).
  const starts: number[] = [];
  const owners: DumpRecord[] = [];
  let length = 0;
  let previous: DumpRecord | undefined;
  const radix = offsetRadix(items);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if ('line' in item) previous = item;
    if (previous === undefined || 'close' in item) continue;
    const times = 'repeat' in item ? repeats(previous, items, i, radix) : 1;
    for (let n = 0; n < times; n++) {
      starts.push(length);
      owners.push(previous);
      length += previous.end - previous.start;
    }
  }
  const found = new Set<DumpRecord>();
  for (const order of out.words ? (['shown', 'reversed'] as const) : (['shown'] as const)) {
    const all = Buffer.from(out[order].buffer, 0, out.length);
    const bytes = length === out.length ? all : Buffer.concat(owners.map((owner) => all.subarray(owner.start, owner.end)));
    const spans = search(bytes);
    for (let k = 0; k + 1 < spans.length; k += 2) {
      for (let r = lastAtOrBefore(starts, spans[k]); r < starts.length && starts[r] < spans[k + 1]; r++) found.add(owners[r]);
    }
  }
  return found;
}

/** How many times `record` stands for the `*` at items[star]: up to the next offset, if it tells. */
function repeats(record: DumpRecord, items: Item[], star: number, radix: number): number {
  let next = star + 1;
  while (next < items.length && 'repeat' in items[next]) next++;
  const item = items[next] as DumpRecord | { close: string } | undefined;
  const nextOffset = item === undefined ? undefined : 'close' in item ? item.close : item.offset;
  const size = record.end - record.start;
  if (record.offset === undefined || nextOffset === undefined || size === 0) return 1;
  const times = (parseOffset(nextOffset, radix) - parseOffset(record.offset, radix)) / size - 1;
  return Number.isInteger(times) && times > 0 ? Math.min(times, MAX_REPEATS) : 1;
}

/** The radix in which an offset and the next differ by the first one's line's bytes (od: 8), else 16. */
function offsetRadix(items: Item[]): number {
  for (let i = 0; i + 1 < items.length; i++) {
    const [a, b] = [items[i], items[i + 1]];
    const next = 'close' in b ? b.close : 'line' in b ? b.offset : undefined;
    if (!('line' in a) || a.offset === undefined || next === undefined) continue;
    for (const radix of [16, 8, 10]) if (parseOffset(next, radix) - parseOffset(a.offset, radix) === a.end - a.start) return radix;
  }
  return 16;
}

function parseOffset(offset: string, radix: number): number {
  const digits = offset.replace(':', '');
  return [...digits].every((digit) => parseInt(digit, 16) < radix) ? parseInt(digits, radix) : NaN;
}

/** The index of the last of the sorted `starts` at or before `at`. */
function lastAtOrBefore(starts: number[], at: number): number {
  let [low, high] = [0, starts.length - 1];
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (starts[mid] <= at) low = mid;
    else high = mid - 1;
  }
  return low;
}
