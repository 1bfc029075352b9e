/**
 * Which role fits a task: word overlap between the task and each role's competencies (and, weaker, its
 * description), after light stemming. Pure and deterministic; a keyword heuristic, not understanding.
 */
import type { Role } from './roles';

/** What routing reads of a role. */
export type RoutedRole = Pick<Role, 'name' | 'description' | 'competencies'>;

export interface RoleSuggestion {
  role: string;
  score: number;
  /** What matched: whole competency phrases, then single words as the task wrote them. */
  matched: string[];
}

/** A word of a competency counts twice a word of the description; a whole multi-word phrase adds one. */
const COMPETENCY_WORD = 2;
const DESCRIPTION_WORD = 1;
const WHOLE_PHRASE = 1;

const STOP_WORDS = new Set(
  ('a an the and or but for of to in on at by with from into onto as is are was be been it its this that these those there ' +
    'what where which who whom how why when all any some our we i you your me my do does did should can could would will ' +
    'please about so if then than them they he she not no new let make sure up out via per each')
    .split(' '),
);

/** Lowercase; hyphens and apostrophes join (trade-offs, don't); other punctuation separates. */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/['’-]/g, '')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '' && !STOP_WORDS.has(w));
}

/** Crude suffix stripping so test/tests/tested/testing and write/writing meet; short words stay as they are. */
export function stem(word: string): string {
  let w = word;
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (w.length > 4 && /(ss|sh|ch|x|z)es$/.test(w)) w = w.slice(0, -2);
  else if (w.length > 5 && w.endsWith('ing')) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith('ed')) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) w = w.slice(0, -1);
  // running -> runn -> run, mapped -> mapp -> map (but added -> add)
  if (w !== word && w.length > 3 && /([b-df-hj-np-tv-z])\1$/.test(w) && !/(ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  // write/writing -> writ, scope/scoped -> scop
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

/** Every role with something in common with the task, best first; equal scores by role name. */
export function suggestRole(task: string, roles: RoutedRole[]): RoleSuggestion[] {
  const taskWords = words(task);
  const taskStems = new Set(taskWords.map(stem));
  const suggestions: RoleSuggestion[] = [];
  for (const role of roles) {
    let score = 0;
    const phrases: string[] = [];
    const competencyStems = new Set<string>();
    for (const phrase of role.competencies) {
      const stems = words(phrase).map(stem);
      stems.forEach((s) => competencyStems.add(s));
      if (stems.length > 1 && stems.every((s) => taskStems.has(s))) {
        score += WHOLE_PHRASE;
        phrases.push(phrase);
      }
    }
    const descriptionStems = new Set(words(role.description).map(stem));
    const single: string[] = [];
    const counted = new Set<string>();
    for (const word of taskWords) {
      const s = stem(word);
      if (counted.has(s)) continue;
      const weight = competencyStems.has(s) ? COMPETENCY_WORD : descriptionStems.has(s) ? DESCRIPTION_WORD : 0;
      if (weight === 0) continue;
      counted.add(s);
      score += weight;
      // A word already shown inside a matched phrase is not repeated.
      if (!phrases.some((p) => words(p).map(stem).includes(s))) single.push(word);
    }
    if (score > 0) suggestions.push({ role: role.name, score, matched: [...phrases, ...single] });
  }
  return suggestions.sort((a, b) => b.score - a.score || (a.role < b.role ? -1 : a.role > b.role ? 1 : 0));
}

/** The best role's name for the task, or `fallback` when no role shares a word with it. */
export function routeTask(task: string, roles: RoutedRole[], fallback = 'implementer'): string {
  return suggestRole(task, roles)[0]?.role ?? fallback;
}
