/**
 * The code tools' warm language services (src/activities/tools/code/warm.ts, service-host.ts): kept
 * per directory and reused, brought up to date from the disk however a file changed, bounded in
 * number and source size, and evicted when idle.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { type Boundary, PROTECTED_PATHS, openBoundary } from '../../src/activities/confinement';
import { JSDOC_PARSING, ServiceHost } from '../../src/activities/tools/code/service-host';
import { WARM_LIMITS, evictAll, lastOpenedProgram, openProject, warmProjects } from '../../src/activities/tools/code/warm';

const defaults = { ...WARM_LIMITS };
afterEach(() => {
  evictAll();
  Object.assign(WARM_LIMITS, defaults);
  jest.useRealTimers();
});

/** Building a language service takes seconds of CPU on a loaded machine: more than jest's default 5 s. */
const SLOW = 60_000;

/** A workspace with one file declaring `name` (and the smallest lib, to keep each service cheap). */
async function workspace(name = 'value', extra = ''): Promise<Boundary> {
  const ws = mkdtempSync(path.join(os.tmpdir(), 'cadre-warm-'));
  writeFileSync(path.join(ws, 'tsconfig.json'), JSON.stringify({ compilerOptions: { lib: ['ES5'] } }));
  writeFileSync(path.join(ws, 'a.ts'), `export const ${name} = 1;${extra}\n`);
  return openBoundary(ws, { name: 'workspace', deny: PROTECTED_PATHS });
}

const declared = (b: Boundary) => openProject(b, b.root).program.getSourceFile(path.join(b.root, 'a.ts'))?.text;

describe('warm language services', () => {
  test('one service per directory, reused while nothing changes: the same program object', async () => {
    const b = await workspace();
    const first = openProject(b, b.root);
    const again = openProject(await openBoundary(b.root, { name: 'workspace', deny: PROTECTED_PATHS }), b.root);
    expect(again.service).toBe(first.service);
    expect(again.program).toBe(first.program);
    mkdirSync(path.join(b.root, 'sub'));
    writeFileSync(path.join(b.root, 'sub', 'b.ts'), 'export const b = 2;\n');
    const sub = openProject(b, path.join(b.root, 'sub'));
    expect(sub.service).not.toBe(first.service);
    expect(sub.files).toEqual([path.join(b.root, 'sub', 'b.ts')]);
    expect(warmProjects().map((p) => p.root)).toEqual([b.root, path.join(b.root, 'sub')]);
  }, SLOW);

  test('a change the stamp alone shows (same size, modification time put back) is seen', async () => {
    const b = await workspace('before');
    // No file counts as racy here: the change time must tell on its own.
    const host = new ServiceHost(b, b.root, 0);
    const service = ts.createLanguageService(host, ts.createDocumentRegistry(true, undefined, JSDOC_PARSING));
    host.refresh(b);
    expect(service.getProgram()!.getSourceFile(path.join(b.root, 'a.ts'))!.text).toContain('before');
    const file = path.join(b.root, 'a.ts');
    const { atime, mtime, size } = statSync(file);
    writeFileSync(file, 'export const after_ = 1;\n');
    utimesSync(file, atime, mtime);
    expect(statSync(file).size).toBe(size);
    expect(host.refresh(b)).toBe(true);
    expect(service.getProgram()!.getSourceFile(file)!.text).toContain('after_');
    // Touched but not changed: read again, and the service sees no new version.
    utimesSync(file, new Date(), new Date());
    const program = service.getProgram();
    expect(host.refresh(b)).toBe(false);
    expect(service.getProgram()).toBe(program);
  }, SLOW);

  test('files added and removed, by anyone, are in the next answer', async () => {
    const b = await workspace();
    expect(openProject(b, b.root).files).toHaveLength(1);
    writeFileSync(path.join(b.root, 'c.ts'), 'export const c = 3;\n');
    expect(openProject(b, b.root).files.map((f) => path.basename(f))).toEqual(['a.ts', 'c.ts']);
    rmSync(path.join(b.root, 'a.ts'));
    expect(openProject(b, b.root).files.map((f) => path.basename(f))).toEqual(['c.ts']);
  }, SLOW);

  test('at most WARM_LIMITS.services are kept, the least recently used evicted first', async () => {
    WARM_LIMITS.services = 2;
    const [a, b, c] = [await workspace(), await workspace(), await workspace()];
    declared(a);
    declared(b);
    declared(a);
    declared(c);
    expect(warmProjects().map((p) => p.root)).toEqual([a.root, c.root]);
  }, SLOW);

  test('the source size is bounded too, keeping the service in use even alone over it', async () => {
    WARM_LIMITS.sourceChars = 1_000;
    const small = await workspace();
    const big = await workspace('big', ` // ${'x'.repeat(2_000)}`);
    declared(small);
    expect(declared(big)).toContain('big');
    expect(warmProjects()).toEqual([{ root: big.root, files: 1, sourceChars: expect.any(Number) }]);
  }, SLOW);

  test('an idle service keeps nothing alive', async () => {
    const b = await workspace();
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    declared(b);
    expect(warmProjects()).toHaveLength(1);
    expect(timers()).toBe(before);
  }, SLOW);

  test('an idle service is evicted after WARM_LIMITS.idleMs', async () => {
    jest.useFakeTimers();
    WARM_LIMITS.idleMs = 60_000;
    const b = await workspace();
    declared(b);
    jest.advanceTimersByTime(50_000);
    declared(b);
    jest.advanceTimersByTime(50_000);
    expect(warmProjects()).toHaveLength(1);
    expect(lastOpenedProgram()).toBeDefined();
    jest.advanceTimersByTime(10_001);
    expect(warmProjects()).toHaveLength(0);
    // Its program is let go too: the idle-time indexing no longer holds it.
    expect(lastOpenedProgram()).toBeUndefined();
  }, SLOW);

  test('a workspace removed and made again at the same path is read anew', async () => {
    const b = await workspace('first');
    expect(declared(b)).toContain('first');
    rmSync(b.root, { recursive: true });
    mkdirSync(b.root);
    writeFileSync(path.join(b.root, 'a.ts'), 'export const second = 1;\n');
    const again = await openBoundary(b.root, { name: 'workspace', deny: PROTECTED_PATHS });
    expect(declared(again)).toContain('second');
  }, SLOW);
});
