/** Programs that run a script: shells (`sh -c`, `bash x.sh`, `bash < x.sh`), `source` and `.`, `at` and `batch`. */
import { baseName, emit, scriptFileAt, type Layer, type Site, type Word } from './segments';
import { isStdinPath, runScript, runStdin, scriptOf } from './scripts';
import { scanOptions } from './wrapper-options';

/** `source FILE` runs a file like `sh FILE` (a script file the rules cannot see into); from /dev/stdin or `<(...)` it runs what it is fed. */
export function judgeSource(words: Word[], at: Layer, site: Site): void {
  const file = words[1];
  if (file === undefined) emit(site, words, at);
  else if (isStdinPath(file)) runStdin(words, at, site);
  else if (file.value === undefined) emit(site, words, at, { computed: `${words[0].value} runs a script only known at run time` });
  else emit(site, words, at, scriptFileAt(words, 1));
}

/** at and batch read the commands they schedule from stdin (or -f FILE). */
export function judgeAt(words: Word[], at: Layer, site: Site): void {
  const { values, index } = scanOptions(words, { short: 'fqtm', noCommand: ['-l', '-r', '-d', '-c', '-V'] });
  const file = values.get('-f');
  if (index === undefined) emit(site, words, at);
  else if (file?.value !== undefined) emit(site, words, at, { scriptFile: file.value });
  else if (file) emit(site, words, at, { computed: `${baseName(words[0].value ?? '')} runs a script file only known at run time` });
  else runStdin(words, at, site);
}

export const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'yash', 'posh', 'rbash']);

export function judgeShell(words: Word[], at: Layer, site: Site): void {
  const name = baseName(words[0].value ?? '');
  let commandMode = false;
  let readsStdin = false;
  let i = 1;
  for (; i < words.length; i++) {
    const word = words[i].value;
    if (word === undefined) break;
    if (word === '--' || word === '-') {
      i++;
      break;
    }
    if (word.startsWith('--')) {
      if (word === '--command') commandMode = true;
      else if (word.startsWith('--command=')) {
        runScript({ text: word.slice('--command='.length), exact: true }, words, at, site);
        return;
      } else if (word === '--rcfile' || word === '--init-file') {
        // An interactive bash runs this file first: a script the rules cannot see into.
        const file = words[++i];
        if (file?.value !== undefined) emit(site, words, at, scriptFileAt(words, i));
        else if (file) emit(site, words, at, { computed: `${name} runs a startup file only known at run time` });
      }
      continue;
    }
    if (!/^[-+]/.test(word)) break;
    for (const letter of word.slice(1)) {
      if (letter === 'c') commandMode = true;
      if (letter === 's') readsStdin = true;
      if (letter === 'o' || letter === 'O') {
        i++;
        break;
      }
    }
  }
  if (commandMode) {
    if (i < words.length) runScript(scriptOf(words[i]), words, at, site, at.stdin);
    else emit(site, words, at, at.moreArgs ? { computed: `the script ${name} -c runs comes from its input` } : {});
    return;
  }
  // `bash script.sh` runs a file the rules cannot see into; `bash <(curl ...)` runs what it is fed.
  if (i < words.length && !readsStdin && !isStdinPath(words[i])) {
    emit(site, words, at, words[i].value === undefined ? { computed: `${name} runs a script file only known at run time` } : scriptFileAt(words, i));
    return;
  }
  runStdin(words, at, site);
}
