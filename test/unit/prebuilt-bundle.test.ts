import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { codeStamp, prebuiltBundle } from '../../src/worker/prebuilt-bundle';

test('the stamp changes with any compiled file, and only with them', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'stamp-'));
  mkdirSync(path.join(root, 'workflows'));
  writeFileSync(path.join(root, 'workflows', 'index.js'), 'exports.a = 1;');
  writeFileSync(path.join(root, 'index.js'), 'exports.b = 2;');
  const first = codeStamp(root);
  writeFileSync(path.join(root, 'index.d.ts'), 'export {};');
  expect(codeStamp(root)).toBe(first);
  writeFileSync(path.join(root, 'workflows', 'index.js'), 'exports.a = 2;');
  expect(codeStamp(root)).not.toBe(first);
});

test('CADRE_WORKFLOW_BUNDLE names the bundle; a missing one is an error, not a silent bundle at start', () => {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'bundle-')), 'workflows.js');
  writeFileSync(file, '');
  expect(prebuiltBundle({ CADRE_WORKFLOW_BUNDLE: file })).toEqual({ codePath: file, source: 'CADRE_WORKFLOW_BUNDLE' });
  expect(() => prebuiltBundle({ CADRE_WORKFLOW_BUNDLE: `${file}.missing` })).toThrow(`CADRE_WORKFLOW_BUNDLE: no file ${file}.missing`);
  // From the sources (under jest), the build's bundle is never taken: it was made from other code.
  expect(prebuiltBundle({})).toBeUndefined();
});
