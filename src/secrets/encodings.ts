/** The forms a secret takes: its literal patterns in every encoding a tool prints (base64, hex, URL, quoted, JSON), with the matcher's flags. */

/**
 * Secrets shorter than this (counting no whitespace) are ignored. Short values ("admin", "1234",
 * "true") occur in ordinary output: replacing them would mangle it, and would show a reader which
 * short value is the secret, while a secret that short is guessed anyway. From 8 bytes on, every
 * base64 alignment still leaves a core of at least 10 characters (60 bits) that depends on the
 * secret alone, and hex 16 characters, so no encoded form is short enough to match by chance.
 */
export const MIN_SECRET_LENGTH = 8;

/** Each secret as given, trimmed (read from a file, it often ends in a newline), NFC and NFD. */
export function* secretForms(secrets: Iterable<string>): Generator<string> {
  for (const secret of secrets) {
    if (typeof secret !== 'string') continue;
    const trimmed = secret.trim();
    for (const form of new Set([secret, trimmed, trimmed.normalize('NFC'), trimmed.normalize('NFD')])) {
      if (withoutWhitespace(form).length >= MIN_SECRET_LENGTH) yield form;
    }
  }
}

/** Bits of `Matcher` pattern flags: a base64 core also takes the partial character next to it. */
export const EXTEND_BEFORE_STD = 1;
export const EXTEND_AFTER_STD = 2;
export const EXTEND_BEFORE_URL = 4;
export const EXTEND_AFTER_URL = 8;
/** Set in the trie where some pattern ends, whatever its other flags. */
export const PATTERN_ENDS = 0x100;

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
export function patternsOf(secret: string): Map<string, number> {
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
