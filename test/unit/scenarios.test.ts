/**
 * Scripted models read scenario files: a plan can name only a YAML or JSON file, the worker reads
 * nothing else, and no error quotes what a file holds (issue: `scripted:../../etc/shadow` quoted it).
 */
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadScenario } from '../../src/providers/scripted';
import { formatIssues, validatePlan } from '../../src/plan-format/validate';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-scenarios-'));
const SECRET = 'root:$6$s3cr3tHash$AbCdEf:19000:0:99999:7:::';
writeFileSync(path.join(dir, 'shadow'), `${SECRET}\n`);
symlinkSync(path.join(dir, 'shadow'), path.join(dir, 'innocent.yaml'));

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a failure');
}

function planIssues(model: string): string {
  const result = validatePlan({ name: 'p', steps: [{ id: 'a', agent: { prompt: 'hi', model } }] }, { baseDir: dir });
  return result.ok ? '' : formatIssues(result.issues);
}

test('a plan names only YAML or JSON scenario files, links followed', () => {
  expect(planIssues('scripted:../../etc/shadow')).toContain('steps[0].agent.model: a scenario is a .yaml, .yml or .json file; shadow is not');
  expect(planIssues('scripted:./innocent.yaml')).toContain('steps[0].agent.model: a scenario is a .yaml, .yml or .json file; innocent.yaml (a link to shadow) is not');
  expect(planIssues('scripted:./fine.yaml')).toBe('');
});

test('the worker reads no file but a scenario, and its errors never quote a file', () => {
  for (const file of [path.join(dir, 'shadow'), path.join(dir, 'innocent.yaml'), '/etc/passwd']) {
    const message = failure(() => loadScenario(file));
    expect(message).toContain('a scenario is a .yaml, .yml or .json file');
    expect(message).not.toContain('$6$');
    expect(message).not.toContain('root:');
  }
  // A YAML file that is not a scenario: where, never what.
  const cases: Record<string, string> = {
    'broken.yaml': `turns:\n  - reply: { text: "${SECRET}" \n  bad: [`,
    'string.yaml': `${SECRET}\n`,
    'keys.yaml': `"${SECRET}": 1\nturns: []\n`,
    'list.json': JSON.stringify([SECRET]),
  };
  for (const [name, text] of Object.entries(cases)) {
    writeFileSync(path.join(dir, name), text);
    const message = failure(() => loadScenario(path.join(dir, name)));
    expect({ name, message }).toEqual({ name, message: expect.stringMatching(new RegExp(`^scenario ${dir}/${name}: `)) });
    expect(message).not.toContain('s3cr3t');
  }
  expect(failure(() => loadScenario(path.join(dir, 'broken.yaml')))).toMatch(/not valid YAML or JSON \(line \d+, column \d+\)$/);
  expect(failure(() => loadScenario(path.join(dir, 'keys.yaml')))).toContain('1 unknown field(s)');
});
