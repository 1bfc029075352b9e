/**
 * The order jest starts test files in: the longest first, so that no long file starts late and runs
 * on alone at the end (on four workers, CI's jest took 620 s in jest's default order on a clean clone,
 * where it has no timings and goes by file size: worker-kills, 104 s, started last but one).
 * A file's length is jest's own timing from an earlier run on this checkout when it has one, else
 * CI's (test-times.json, seconds, from the last CI log: `node test/support/sequencer.js LOG` prints
 * it afresh). A file known to neither runs first, as in jest's own order: it may be long.
 * It only orders: every file jest found runs, once.
 */
const fs = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = path.join(__dirname, '..', '..');
const CI_SECONDS = require('./test-times.json');

class LongestFirst extends Sequencer {
  sort(tests) {
    const key = new Map(tests.map((test) => [test, this.estimate(test)]));
    return [...tests].sort((a, b) => {
      const [ka, kb] = [key.get(a), key.get(b)];
      if (ka.failed !== kb.failed) return ka.failed ? -1 : 1;
      if ((ka.ms === undefined) !== (kb.ms === undefined)) return ka.ms === undefined ? -1 : 1;
      if (ka.ms !== kb.ms && ka.ms !== undefined && kb.ms !== undefined) return kb.ms - ka.ms;
      return kb.size - ka.size || (a.path < b.path ? -1 : 1);
    });
  }

  /** Failed last time (jest's cache), and the expected milliseconds: this checkout's last timing, else CI's. */
  estimate(test) {
    const listed = CI_SECONDS[path.relative(ROOT, test.path).split(path.sep).join('/')];
    const ms = this.time(test) ?? (listed === undefined ? undefined : listed * 1000);
    return { failed: this.hasFailed(test), ms, size: test.context.hasteFS.getSize(test.path) ?? 0 };
  }
}

module.exports = LongestFirst;

/** `node test/support/sequencer.js LOG`: test-times.json from a jest log (files under 5 s, which jest prints no time for, as 2). */
if (require.main === module) {
  const times = {};
  for (const line of fs.readFileSync(process.argv[2], 'utf8').split('\n')) {
    const m = /^(?:PASS|FAIL) (\S+)(?: \(([\d.]+) s\))?/.exec(line);
    if (m) times[m[1]] = m[2] ? Math.round(Number(m[2])) : 2;
  }
  const sorted = Object.entries(times).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
  process.stdout.write(`{\n${sorted.map(([file, s]) => `  ${JSON.stringify(file)}: ${s}`).join(',\n')}\n}\n`);
}
