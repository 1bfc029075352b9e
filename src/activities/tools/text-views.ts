/**
 * Files as a small model reads them best (SWE-agent's ablations): a window of numbered lines that
 * says where it is in the file, and edits whose errors show where to look. Pure text functions.
 */

/** Lines a model sees of a file at once, unless it asks for others. */
export const WINDOW_LINES = 100;
/** Lines shown around an edit, and around the nearest match of an edit that found none. */
const CONTEXT_LINES = 3;

export interface Window {
  from: number;
  to: number;
  total: number;
  text: string;
  /** What a model is shown: where the window is, the numbered lines, and how to read on. */
  view: string;
}

/** Lines `from`–`to` (1-based, inclusive) of the text, clamped to it; `WINDOW_LINES` from `from` when `to` is not given. */
export function windowOf(file: string, content: string, from?: number, to?: number): Window {
  const lines = splitLines(content);
  const total = lines.length;
  const first = Math.min(Math.max(1, from ?? 1), Math.max(1, total));
  const last = Math.min(total, to ?? first + WINDOW_LINES - 1);
  const shown = lines.slice(first - 1, last);
  const text = shown.join('\n') + (last < total || content.endsWith('\n') ? '\n' : '');
  if (total === 0) return { from: 0, to: 0, total, text: '', view: `${file} is empty.` };
  const more = last < total ? `\n(lines ${last + 1}-${total} not shown: read them with from: ${last + 1})` : '';
  const view = `${file}, lines ${first}-${last} of ${total}:\n${numbered(shown, first)}${more}`;
  return { from: first, to: last, total, text, view };
}

/** Lines numbered as `cat -n` numbers them: the number, a tab, the line. */
export function numbered(lines: string[], first: number): string {
  const width = String(first + lines.length - 1).length;
  return lines.map((line, i) => `${String(first + i).padStart(width)}\t${line}`).join('\n');
}

export type Edit = { text: string; replaced: number; shown: { from: number; to: number; total: number; lines: string[] } } | { problem: string };

/** The text with `oldText` replaced by `newText`: found once, or every time with `all`; else why not, with where to look. */
export function editedText(file: string, content: string, oldText: string, newText: string, all: boolean): Edit {
  const at = occurrences(content, oldText);
  if (at.length === 0) return { problem: noMatch(file, content, oldText) };
  if (at.length > 1 && !all) {
    const lines = at.map((offset) => lineOf(content, offset));
    return {
      problem:
        `old_text is in ${file} ${at.length} times (lines ${lines.join(', ')}): nothing was changed. ` +
        'Add the lines around the one to change to old_text so that it is found once, or set all: true to replace every one.',
    };
  }
  const text = all ? content.split(oldText).join(newText) : content.slice(0, at[0]) + newText + content.slice(at[0] + oldText.length);
  const lines = splitLines(text);
  const firstLine = lineOf(content, at[0]);
  const lastLine = firstLine + splitLines(newText).length - 1;
  const from = Math.max(1, firstLine - CONTEXT_LINES);
  const to = Math.min(lines.length, Math.max(firstLine, lastLine) + CONTEXT_LINES);
  return { text, replaced: all ? at.length : 1, shown: { from, to, total: lines.length, lines: lines.slice(from - 1, to) } };
}

/** No match: the lines most like old_text's first line, numbered, so the model can copy them exactly. */
function noMatch(file: string, content: string, oldText: string): string {
  const lines = splitLines(content);
  const wanted = oldText.split('\n').find((line) => line.trim() !== '') ?? oldText;
  const best = nearestLine(lines, wanted);
  const hint = 'Copy old_text exactly from the file, spaces included and without the line numbers (fs_read shows the lines).';
  if (best === undefined) return `old_text is not in ${file}: nothing was changed. ${hint}`;
  const from = Math.max(1, best - CONTEXT_LINES);
  const to = Math.min(lines.length, best + CONTEXT_LINES);
  return `old_text is not in ${file}: nothing was changed. The nearest lines (${from}-${to}):\n${numbered(lines.slice(from - 1, to), from)}\n${hint}`;
}

/** The 1-based line sharing most words with `wanted` (the first of equals), or undefined when none shares any. */
function nearestLine(lines: string[], wanted: string): number | undefined {
  const words = new Set(wordsOf(wanted));
  let best: number | undefined;
  let bestScore = 0;
  lines.forEach((line, i) => {
    const score = wordsOf(line).filter((word) => words.has(word)).length;
    if (score > bestScore) {
      best = i + 1;
      bestScore = score;
    }
  });
  return best;
}

function wordsOf(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
}

function occurrences(content: string, part: string): number[] {
  const found: number[] = [];
  for (let at = content.indexOf(part); at >= 0; at = content.indexOf(part, at + part.length)) found.push(at);
  return found;
}

function lineOf(content: string, offset: number): number {
  let line = 1;
  for (let i = content.indexOf('\n'); i >= 0 && i < offset; i = content.indexOf('\n', i + 1)) line++;
  return line;
}

/** The text's lines, without the empty one after a final newline. */
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
