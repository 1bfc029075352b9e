/**
 * The offline classifier of `cadre ask`: transparent rules, no model. A pattern is words and
 * `{slot}`s: its words must appear in the request in order (other words may come between them),
 * and a slot takes the one word next to its neighbour (after the word before it, or, leading a
 * pattern, before the word after it). The intent whose matching pattern has the most words wins;
 * on a tie the one listed first. What matched is returned, so a person can see why.
 */
import type { Intent } from './routes';

export interface RuleMatch {
  intent: Intent;
  pattern: string;
  /** Slot values as the request wrote them. */
  slots: Record<string, string>;
  /** Words of the pattern found in the request. */
  score: number;
  /** Other intents that matched as well (ties included), best first. */
  alsoMatched: string[];
}

/** Requests are short sentences; longer text is refused, not cut. */
export const MAX_REQUEST_CHARS = 1000;

type Element = { word: string } | { slot: string };

export function tokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/\s+/)
    .map((t) => t.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}+#]+$/gu, ''))
    .filter(Boolean);
}

/** The original spelling of the request's words, for slot values ("Python", not "python"). */
function originalWords(text: string): string[] {
  return text
    .split(/\s+/)
    .map((t) => t.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}+#]+$/gu, ''))
    .filter(Boolean);
}

function elements(pattern: string): Element[] {
  return pattern
    .trim()
    .split(/\s+/)
    .map((part) => (/^\{[^}]+\}$/.test(part) ? { slot: part.slice(1, -1) } : { word: tokens(part)[0] ?? part.toLowerCase() }));
}

/** Slot values for `pattern` in `words`, or undefined when it does not match. */
export function matchPattern(pattern: string, words: string[], spelled: string[]): Record<string, string> | undefined {
  const parts = elements(pattern);
  // `from`: the first word this element may take; every element after the first starts right after the one before.
  const go = (p: number, from: number): Record<string, string> | undefined => {
    if (p === parts.length) return {};
    const part = parts[p];
    if ('slot' in part) {
      const next = parts[p + 1];
      // A slot takes the word right after the word before it; leading a pattern, the word right before the next word.
      const candidates = p > 0 ? [from] : next && 'word' in next ? words.map((_, i) => i).filter((i) => words[i + 1] === next.word) : [from];
      for (const i of candidates) {
        if (i >= words.length) continue;
        const rest = go(p + 1, i + 1);
        if (rest) return { [part.slot]: spelled[i], ...rest };
      }
      return undefined;
    }
    // A word may come later (other words between).
    for (let i = from; i < words.length; i++) {
      if (words[i] !== part.word) continue;
      const rest = go(p + 1, i + 1);
      if (rest) return rest;
    }
    return undefined;
  };
  return go(0, 0);
}

export function classify(request: string, intents: Intent[]): RuleMatch | undefined {
  const words = tokens(request);
  const spelled = originalWords(request);
  const matches: RuleMatch[] = [];
  for (const intent of intents) {
    let best: RuleMatch | undefined;
    for (const pattern of intent.patterns) {
      const slots = matchPattern(pattern, words, spelled);
      if (!slots) continue;
      const score = elements(pattern).filter((e) => 'word' in e).length + Object.keys(slots).length;
      if (!best || score > best.score) best = { intent, pattern, slots, score, alsoMatched: [] };
    }
    if (best) matches.push(best);
  }
  if (matches.length === 0) return undefined;
  // Stable: on equal scores the intent listed first stays first.
  const ranked = matches.map((m, i) => ({ m, i })).sort((a, b) => b.m.score - a.m.score || a.i - b.i).map((x) => x.m);
  return { ...ranked[0], alsoMatched: ranked.slice(1).map((m) => m.intent.name) };
}
