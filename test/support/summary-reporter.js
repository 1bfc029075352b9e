/**
 * Prints the plain closing line CI reads: "N passed, N failed"; before it, when the run measured
 * them (file-cpu.ts), the test files that took the most CPU.
 */
const { existsSync, readFileSync } = require('node:fs');
const path = require('node:path');

const SHOWN = 12;

function cpuTable(file) {
  if (!file || !existsSync(file)) return '';
  const rows = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  if (rows.length === 0) return '';
  const total = (key) => rows.reduce((sum, row) => sum + row[key], 0);
  const fixed = (n) => n.toFixed(1).padStart(7);
  const top = [...rows].sort((a, b) => b.own + b.processes - (a.own + a.processes)).slice(0, SHOWN);
  return [
    `\nCPU by test file, seconds (jest's worker + the processes it started): ${rows.length} files, ${fixed(total('own') + total('processes')).trim()} in all (${total('own').toFixed(1)} + ${total('processes').toFixed(1)})`,
    ...top.map((row) => `${fixed(row.own + row.processes)} = ${fixed(row.own)} + ${fixed(row.processes)}  ${path.relative(process.cwd(), row.file)}`),
  ].join('\n');
}

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `${cpuTable(process.env.CADRE_TEST_CPU_FILE)}\ntests: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}\n`,
    );
  }
}
module.exports = SummaryReporter;
