/**
 * Each test file's CPU, for the run's closing table (summary-reporter.js): its jest worker's own and
 * that of the processes it started and reaped (`cadre worker`, `cadre` commands, git, the sandbox).
 * CI has 12 minutes on two cores, so CPU, not wall time, says which file costs the run what.
 * Linux only (/proc); elsewhere it records nothing. One line a file in CADRE_TEST_CPU_FILE.
 */
import { appendFileSync, readFileSync } from 'node:fs';

/** User and system time of the processes this one reaped, in seconds (/proc's clock ticks, 100 a second). */
function reapedSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

const out = process.env.CADRE_TEST_CPU_FILE;
if (out && process.platform === 'linux') {
  // Taken before the test file loads (this runs first), so its modules' loading counts too.
  const start = { own: process.cpuUsage(), reaped: reapedSeconds() };
  afterAll(() => {
    const own = process.cpuUsage(start.own);
    const line = { file: expect.getState().testPath, own: (own.user + own.system) / 1e6, processes: reapedSeconds() - start.reaped };
    appendFileSync(out, `${JSON.stringify(line)}\n`);
  });
}
