/** Words: decoding quoting, and telling literal words from those only known at run time. */
import type { Node } from 'web-tree-sitter';
import type { Word } from './segments';

interface Piece {
  text: string;
  /** Quoted or escaped: neither globbed nor split. */
  quoted: boolean;
  /** The output of an unquoted command substitution: split into words. */
  split?: boolean;
}

type Decoded = { pieces: Piece[]; template: string } | { pieces?: undefined; template: string };

/** Folding `$(echo rm)` looks this deep into nested substitutions. */
const MAX_FOLD_DEPTH = 8;

export function wordsOf(node: Node, depth = 0): Word[] {
  const decoded = decodeNode(node, depth);
  const source = node.text;
  if (!decoded.pieces) return [{ source, template: decoded.template }];
  // What is left unquoted is globbed (`r?m`, `[r]m`, `*`) and brace-expanded (`{rm,-rf,x}`).
  const skeleton = decoded.pieces.map((piece) => (piece.quoted ? '_'.repeat(Math.max(piece.text.length, 1)) : piece.text)).join('');
  if (/[*?]|\[[^\]]*\]|\{[^{}]*(,|\.\.)[^{}]*\}|[@!+]\(/.test(skeleton)) return [{ source, template: decoded.template }];
  if (!decoded.pieces.some((piece) => piece.split)) {
    const value = decoded.pieces.map((piece) => piece.text).join('');
    return [{ source, value, template: value }];
  }
  return splitFields(decoded.pieces).map((value) => ({ source, value, template: value }));
}

function joinWords(before: Word, gap: string, after: Word[]): Word {
  const source = before.source + gap + after.map((word) => word.source).join('');
  const template = before.template + after.map((word) => word.template).join('');
  const known = after.length === 1 && before.value !== undefined && after[0].value !== undefined;
  return known ? { source, value: template, template } : { source, template };
}

export function wordOf(node: Node): Word | undefined {
  const words = wordsOf(node);
  return words.length === 1 ? words[0] : undefined;
}

/** Word splitting of unquoted substitution output (default IFS). */
function splitFields(pieces: Piece[]): string[] {
  const fields: string[] = [];
  let current: string | undefined;
  for (const piece of pieces) {
    if (!piece.split) {
      current = (current ?? '') + piece.text;
      continue;
    }
    const parts = piece.text.split(/[ \t\n]+/);
    parts.forEach((part, i) => {
      if (i > 0 && current !== undefined) {
        fields.push(current);
        current = undefined;
      }
      if (part !== '') current = (current ?? '') + part;
    });
  }
  if (current !== undefined) fields.push(current);
  return fields;
}

function computed(node: Node): Decoded {
  return { template: node.text };
}

export function decodeNode(node: Node, depth: number): Decoded {
  switch (node.type) {
    case 'command_name':
      return node.firstNamedChild ? decodeNode(node.firstNamedChild, depth) : computed(node);
    case 'word':
      return decodeUnquoted(node.text);
    case 'number':
      return node.namedChildCount === 0 ? decodeUnquoted(node.text) : computed(node);
    case 'raw_string': {
      const text = node.text.slice(1, -1);
      return { pieces: [{ text, quoted: true }], template: text };
    }
    case 'ansi_c_string': {
      const text = decodeAnsiC(node.text.slice(2, -1));
      return text === undefined ? computed(node) : { pieces: [{ text, quoted: true }], template: text };
    }
    case 'string':
      return decodeDoubleQuoted(node, depth);
    case 'translated_string':
      return node.firstNamedChild ? decodeNode(node.firstNamedChild, depth) : computed(node);
    case 'concatenation':
      return decodeConcatenation(node, depth);
    case 'command_substitution': {
      const printed = depth < MAX_FOLD_DEPTH ? foldSubstitution(node, depth + 1) : undefined;
      return printed === undefined ? computed(node) : { pieces: [{ text: printed, quoted: false, split: true }], template: printed };
    }
    default:
      // Expansions ($x, ${x}, $((..))), process substitutions, brace ranges, extglobs, arrays.
      return computed(node);
  }
}

function decodeConcatenation(node: Node, depth: number): Decoded {
  const pieces: Piece[] = [];
  let template = '';
  let known = true;
  let at = node.startIndex;
  for (const child of node.children) {
    // Pieces must tile the word: text the tree skipped is text we cannot vouch for.
    if (child.startIndex !== at) known = false;
    at = child.endIndex;
    const decoded = decodeNode(child, depth);
    template += decoded.template;
    if (decoded.pieces) pieces.push(...decoded.pieces);
    else known = false;
  }
  if (at !== node.endIndex) known = false;
  return known ? { pieces, template } : { template };
}

/** Unquoted text: a backslash quotes the next character; `$` or a backtick still here is an expansion. */
function decodeUnquoted(text: string): Decoded {
  const pieces: Piece[] = [];
  let plain = '';
  let value = '';
  let known = true;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\\' && i + 1 < text.length) {
      i++;
      if (text[i] === '\n') continue;
      if (plain) pieces.push({ text: plain, quoted: false });
      plain = '';
      pieces.push({ text: text[i], quoted: true });
      value += text[i];
      continue;
    }
    if (char === '`' || (char === '$' && i + 1 < text.length)) known = false;
    if (char === '"' || char === "'") known = false;
    plain += char;
    value += char;
  }
  if (plain) pieces.push({ text: plain, quoted: false });
  return known ? { pieces, template: value } : { template: value };
}

/** "..." : literal between its expansions, and those folded when they are `$(echo literal)`. */
function decodeDoubleQuoted(node: Node, depth: number): Decoded {
  const open = node.startIndex + 1;
  const close = node.endIndex - 1;
  const source = node.text;
  let known = true;
  let literal = '';
  let template = '';
  let at = open;
  const addGap = (end: number) => {
    if (end <= at) return;
    const gap = decodeQuotedGap(source.slice(at - node.startIndex, end - node.startIndex));
    if (!gap.known) known = false;
    literal += gap.text;
    template += gap.text;
  };
  for (const child of node.namedChildren) {
    if (child.type === 'string_content') continue;
    addGap(child.startIndex);
    at = child.endIndex;
    const printed = child.type === 'command_substitution' && depth < MAX_FOLD_DEPTH ? foldSubstitution(child, depth + 1) : undefined;
    if (printed === undefined) {
      known = false;
      template += child.text;
    } else {
      literal += printed;
      template += printed;
    }
  }
  addGap(close);
  return known ? { pieces: [{ text: literal, quoted: true }], template } : { template };
}

/** Inside double quotes a backslash escapes only $ ` " \ and a newline. */
function decodeQuotedGap(text: string): { text: string; known: boolean } {
  let out = '';
  let known = true;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\\' && i + 1 < text.length && '$`"\\\n'.includes(text[i + 1])) {
      i++;
      if (text[i] !== '\n') out += text[i];
      continue;
    }
    if (char === '`' || (char === '$' && i + 1 < text.length)) known = false;
    out += char;
  }
  return { text: out, known };
}

const ANSI_C_ESCAPES: Record<string, string> = {
  a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?',
};

/** $'...' as bash decodes it; undefined for what it cannot be sure of (a bad code point). */
function decodeAnsiC(text: string): string | undefined {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char !== '\\' || i + 1 >= text.length) {
      out += char;
      continue;
    }
    const next = text[++i];
    if (Object.hasOwn(ANSI_C_ESCAPES, next)) out += ANSI_C_ESCAPES[next];
    else if (/[0-7]/.test(next)) {
      const digits = /^[0-7]{1,3}/.exec(text.slice(i))![0];
      out += String.fromCharCode(parseInt(digits, 8) & 0xff);
      i += digits.length - 1;
    } else if (next === 'x' || next === 'u' || next === 'U') {
      const max = next === 'x' ? 2 : next === 'u' ? 4 : 8;
      const digits = new RegExp(`^[0-9a-fA-F]{1,${max}}`).exec(text.slice(i + 1))?.[0];
      if (!digits) {
        out += `\\${next}`;
        continue;
      }
      const code = parseInt(digits, 16);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return undefined;
      out += String.fromCodePoint(code);
      i += digits.length;
    } else if (next === 'c' && i + 1 < text.length) {
      out += String.fromCharCode(text.charCodeAt(++i) & 0x1f);
    } else out += `\\${next}`;
  }
  // Bash ends the string at a NUL byte.
  const nul = out.indexOf('\0');
  return nul === -1 ? out : out.slice(0, nul);
}

/** `$(echo rm)`: the output of a literal echo or printf, which is all the program name depends on. */
function foldSubstitution(node: Node, depth: number): string | undefined {
  const statements = node.namedChildren.filter((child) => child.type !== 'comment');
  if (statements.length !== 1 || statements[0].type !== 'command') return undefined;
  const { words, redirects, assignments } = partsOf(statements[0], node, depth);
  if (redirects.length > 0 || assignments.length > 0) return undefined;
  return printedBy(words)?.replace(/\n+$/, '');
}

export function partsOf(command: Node, parent: Node | undefined, depth = 0): { words: Word[]; redirects: Node[]; assignments: Node[] } {
  const words: Word[] = [];
  const redirects: Node[] = [];
  const assignments: Node[] = [];
  let previousEnd = -1;
  for (const child of command.namedChildren) {
    if (child.type === 'variable_assignment') assignments.push(child);
    else if (child.type.endsWith('_redirect')) redirects.push(child);
    else if (child.type !== 'comment') {
      const fields = wordsOf(child, depth);
      const gap = command.text.slice(previousEnd - command.startIndex, child.startIndex - command.startIndex);
      // `r\<newline>m` is one word, `rm`, though the tree splits it in two.
      if (previousEnd !== -1 && /^(\\\n)+$/.test(gap) && words.length > 0) words.push(joinWords(words.pop()!, gap, fields));
      else words.push(...fields);
      previousEnd = child.endIndex;
      continue;
    }
    previousEnd = -1;
  }
  // `rm x > out`: the redirects belong to the statement around the command.
  if (parent?.type === 'redirected_statement' && parent.childForFieldName('body')?.equals(command)) {
    redirects.push(...parent.namedChildren.filter((child) => child.type.endsWith('_redirect')));
  }
  return { words, redirects, assignments };
}

/** The output of `echo words` or `printf text` with literal words, when nothing in it is interpreted. */
export function printedBy(words: Word[]): string | undefined {
  const values = words.map((word) => word.value);
  if (values.some((value) => value === undefined)) return undefined;
  const [program, ...args] = values as string[];
  if (program === 'echo') {
    let i = 0;
    while (i < args.length && /^-[neE]+$/.test(args[i])) i++;
    const printed = args.slice(i).join(' ');
    // Some echos (dash's, bash with xpg_echo) interpret backslashes: leave those unfolded.
    return printed.includes('\\') ? undefined : printed;
  }
  if (program === 'printf' && args.length === 1 && !/[%\\]/.test(args[0])) return args[0];
  return undefined;
}
