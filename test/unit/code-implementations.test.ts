/**
 * code.find_implementations answers what TypeScript's own "go to implementation" answers, with one
 * reference search where TypeScript makes one per implementation found
 * (src/activities/tools/code/implementations.ts): compared on every way of implementing a type,
 * and on this project's own source.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { PROTECTED_PATHS, openBoundary } from '../../src/activities/confinement';
import { implementationsOf } from '../../src/activities/tools/code/implementations';
import type { CodeProject } from '../../src/activities/tools/code/project';
import { evictAll, openProject } from '../../src/activities/tools/code/warm';

afterAll(() => evictAll());

const TYPES = `
export interface Shape { area(): number }
export interface Named extends Shape { name: string }
export interface Wide extends Named {}
export abstract class Base implements Shape { abstract area(): number }
export default class DefaultShape implements Shape { area() { return 0; } }
export type Maker = () => Shape;
export interface Callback { (x: number): number }
`;

const IMPLEMENTATIONS = `
import DefaultShape, { Base, Callback, Named, Shape, Wide, Maker } from './types';
import Renamed from './types';
import Whatever from './lonely';
export class ViaDefault extends Whatever {}
export class Circle extends Base { area() { return 1; } }
export class Big extends Circle {}
class Local implements Named { name = 'l'; area() { return 2; } }
export const obj: Shape = { area: () => 3 };
export const paren: Shape = ({ area: () => 3.5 });
export function make(): Shape { return { area: () => 5 }; }
export const arrowMake = (): Shape => ({ area: () => 5.5 });
export const asserted = { area: () => 6 } as Shape;
export const angle = <Shape>{ area: () => 6.5 };
export const sat = { area: () => 7 } satisfies Shape;
export const list: Shape[] = [];
export class Sub extends Renamed {}
export class Other extends DefaultShape {}
export const expr = class implements Shape { area() { return 8; } };
export const named = class NamedExpr implements Named { name = 'n'; area() { return 8.5; } };
export function inner(): Shape { class InnerShape implements Shape { area() { return 9; } } return new InnerShape(); }
export class WideImpl implements Wide { name = 'w'; area() { return 10; } }
export const fnExpr: Maker = function () { return { area: () => 11 }; };
export function param(s: Shape = { area: () => 12 }): Shape { return s; }
export class Holder { field: Shape = { area: () => 13 }; }
export const local = Local;
export const arrow: Callback = (x) => x;
export const fn: Callback = function (x) { return x; };
export const namedFn: Callback = function twice(x) { return 2 * x; };
export const callbacks: Callback[] = [(x) => x];
`;

/** TypeScript's answer and ours for the type declared as `name` in `file`, as `file:line kind`, without re-exports and the type itself. */
function both(project: CodeProject, file: string, name: string) {
  const source = project.program.getSourceFile(file)!;
  const match = new RegExp(`(?:interface|class) (${name})\\b`).exec(source.text)!;
  const start = match.index + match[0].length - name.length;
  const id = (function find(node: ts.Node): ts.Identifier | undefined {
    return ts.isIdentifier(node) && node.getStart() === start ? node : node.forEachChild(find);
  })(source)!;
  const show = (f: { fileName: string; start: number; kind: string }) =>
    `${path.relative(project.root, f.fileName)}:${project.program.getSourceFile(f.fileName)!.getLineAndCharacterOfPosition(f.start).line + 1}:${f.start} ${f.kind}`;
  const keep = (f: { fileName: string; start: number; kind: string }) => f.kind !== ts.ScriptElementKind.alias && !(f.fileName === file && f.start === start);
  const typescript = (project.service.getImplementationAtPosition(file, start) ?? []).map((f) => ({ fileName: f.fileName, start: f.textSpan.start, kind: f.kind }));
  return { ours: implementationsOf(project, id).filter(keep).map(show).sort(), typescript: typescript.filter(keep).map(show).sort() };
}

describe('find_implementations against TypeScript', () => {
  test('every way of implementing a type, transitively', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-impl-'));
    mkdirSync(path.join(dir, 'src'));
    writeFileSync(path.join(dir, 'src', 'types.ts'), TYPES);
    writeFileSync(path.join(dir, 'src', 'impls.ts'), IMPLEMENTATIONS);
    // A default export whose name occurs nowhere else, extended under another name.
    writeFileSync(path.join(dir, 'src', 'lonely.ts'), "import type { Shape } from './types';\nexport default class Lonely implements Shape { area() { return 0; } }\n");
    const boundary = await openBoundary(dir, { name: 'workspace', deny: PROTECTED_PATHS });
    const project = openProject(boundary, boundary.root);
    const types = path.join(boundary.root, 'src', 'types.ts');
    const impls = path.join(boundary.root, 'src', 'impls.ts');
    const shape = both(project, types, 'Shape');
    // What the fixture is there to cover, so that a sparse answer cannot pass by agreeing.
    expect(shape.typescript.length).toBeGreaterThanOrEqual(20);
    expect(shape.ours).toEqual(shape.typescript);
    for (const [file, name] of [[types, 'Named'], [types, 'Wide'], [types, 'Base'], [types, 'DefaultShape'], [types, 'Callback'], [impls, 'Circle'], [impls, 'Local']]) {
      const { ours, typescript } = both(project, file, name);
      expect({ name, ours }).toEqual({ name, ours: typescript });
    }
  }, 120_000);

  test("on this project's source", async () => {
    const boundary = await openBoundary(path.join(__dirname, '..', '..'), { name: 'workspace', deny: PROTECTED_PATHS });
    const project = openProject(boundary, path.join(boundary.root, 'src'));
    const cases: [string, string][] = [
      ['errors/cadre-error.ts', 'CadreError'],
      ['plan-format/templates.ts', 'TemplateError'],
      ['workflows/plan/for-each.ts', 'ForEachHost'],
      ['workflows/plan/kinds/kind.ts', 'PlanRunContext'],
      ['providers/model-turn.ts', 'TurnListener'],
    ];
    let found = 0;
    for (const [file, name] of cases) {
      const { ours, typescript } = both(project, path.join(project.root, file), name);
      expect({ name, ours }).toEqual({ name, ours: typescript });
      found += typescript.length;
    }
    expect(found).toBeGreaterThanOrEqual(5);
  }, 120_000);
});
