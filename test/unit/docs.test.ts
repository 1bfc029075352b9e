/**
 * What the README and docs show as code is code that works: plans validate, TypeScript compiles
 * against the package, `cadre` command lines name real commands and options, and blocks that
 * quote a source file match it.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import YAML from 'yaml';
import { buildProgram } from '../../src/client/cli';
import { parseModelsSection } from '../../src/providers/config';
import { roleSandboxSchema } from '../../src/sandbox/schema';
import { formatIssues, validatePlan } from '../../src/plan-format/validate';
import { DOCS, asPlan, codeBlocks, named, root } from './doc-plans';

const blocks = DOCS.flatMap(codeBlocks);

test('every plan and plan fragment in the README and docs validates', () => {
  const plans = blocks.filter((b) => b.lang === 'yaml').flatMap((b) => {
    const plan = asPlan(b.code);
    return plan ? [{ block: b, plan }] : [];
  });
  expect(plans.length).toBeGreaterThanOrEqual(6);
  const problems = plans.flatMap(({ block, plan }) => {
    const result = validatePlan(plan, { baseDir: root });
    return result.ok ? [] : [`${named(block)}\n${formatIssues(result.issues)}`];
  });
  expect(problems).toEqual([]);
});

test("a role file's sandbox in the docs is one roles accept", () => {
  const shown = blocks.filter((b) => b.lang === 'yaml' && b.code.startsWith('# roles/'));
  expect(shown.length).toBeGreaterThan(0);
  for (const block of shown) expect(roleSandboxSchema.safeParse((YAML.parse(block.code) as { sandbox: unknown }).sandbox).error).toBeUndefined();
});

test('the TypeScript in the README and docs compiles against the package', () => {
  const snippets = blocks.filter((b) => b.lang === 'ts' && b.code.includes("from 'cadre'"));
  expect(snippets.length).toBeGreaterThanOrEqual(2);
  const index = path.join(root, 'src', 'index.ts');
  const files = new Map(snippets.map((b, i) => [path.join(root, `docs-snippet-${i}.ts`), b.code.replace(/from 'cadre'/g, `from '${index.replace(/\.ts$/, '')}'`)]));
  const options: ts.CompilerOptions = { module: ts.ModuleKind.ES2022, moduleResolution: ts.ModuleResolutionKind.Bundler, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true, skipLibCheck: true, types: ['node'] };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  host.readFile = (file) => files.get(path.resolve(file)) ?? read(file);
  const exists = host.fileExists.bind(host);
  host.fileExists = (file) => files.has(path.resolve(file)) || exists(file);
  const program = ts.createProgram([...files.keys()], options, host);
  const errors = [...files.keys()].flatMap((file) =>
    ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => `${named(snippets[[...files.keys()].indexOf(file)])}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`),
  );
  expect(errors).toEqual([]);
});

test('every cadre command line in the README and docs names a real command and its options', () => {
  const program = buildProgram();
  const global = program.options.flatMap((o) => [o.long, o.short]);
  const lines = blocks
    .filter((b) => b.lang === 'sh')
    .flatMap((b) => b.code.split('\n').map((line) => ({ b, line: line.replace(/#.*$/, '').trim() })))
    .filter(({ line }) => /(^|\s)npx cadre /.test(line));
  expect(lines.length).toBeGreaterThan(20);
  const problems = lines.flatMap(({ b, line }) => {
    const words = line.slice(line.indexOf('npx cadre ') + 'npx cadre '.length).split(/\s+/);
    // Options of the program come first (`cadre --profile onprem run ...`); `--version` alone is one.
    while (words[0]?.startsWith('-')) {
      const option = program.options.find((o) => o.long === words[0] || o.short === words[0]);
      if (!option) return [`${b.file}: "${line}": cadre has no option ${words[0]}`];
      words.splice(0, option.required || option.optional ? 2 : 1);
    }
    if (words.length === 0 || words[0] === '') return [];
    const group = program.commands.find((c) => c.name() === words[0]);
    if (!group) return [`${b.file}: "${line}": no command ${words[0]}`];
    // A command of a group (`cadre models test`): its own options count.
    const sub = group.commands.length > 0 ? group.commands.find((c) => c.name() === words[1]) : undefined;
    if (group.commands.length > 0 && !sub) return [`${b.file}: "${line}": ${words[0]} has no command ${words[1]}`];
    const command = sub ?? group;
    const known = new Set([...global, ...command.options.flatMap((o) => [o.long, o.short]), '--help']);
    const flags = words.slice(sub ? 2 : 1).map((w) => w.replace(/^\[/, '').replace(/[\]=].*$/, '')).filter((w) => /^--?[a-z]/.test(w));
    return flags.filter((f) => !known.has(f)).map((f) => `${b.file}: "${line}": ${words.slice(0, sub ? 2 : 1).join(' ')} has no option ${f}`);
  });
  expect(problems).toEqual([]);
});

test('every models section of cadre.config.yaml in the docs is one workers accept', () => {
  const shown = blocks.filter((b) => b.lang === 'yaml' && /^models:/m.test(b.code));
  expect(shown.length).toBeGreaterThanOrEqual(2);
  for (const block of shown) expect(() => parseModelsSection(block.code, named(block))).not.toThrow();
});

test('the step kind guide shows both halves of the echo kind as they are in the source, each registered in its table', () => {
  const halves = ['src/workflows/plan/kinds', 'src/plan-format/kinds'];
  const shown = blocks.filter((b) => b.file === 'docs/architecture.md' && b.code.includes("kind: 'echo'"));
  expect(shown.map((b) => ({ lang: b.lang, code: b.code }))).toEqual(halves.map((dir) => ({ lang: 'ts', code: readFileSync(path.join(root, dir, 'echo.ts'), 'utf8') })));
  for (const dir of halves) expect(readFileSync(path.join(root, dir, 'index.ts'), 'utf8')).toMatch(/echo: echoKind/);
});

/** GitHub's anchor for a heading: lower case, punctuation but `-` dropped, spaces as `-`. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(path.join(root, file), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
  return new Set([...text.matchAll(/^#+\s+(.+)$/gm)].map((m) => anchorOf(m[1])));
}

test('every relative link in the README and docs reaches a file, and its anchor a heading', () => {
  const broken = DOCS.flatMap((file) => {
    const text = readFileSync(path.join(root, file), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
    return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1])
      .filter((link) => !/^[a-z]+:/.test(link))
      .flatMap((link) => {
        const [target, anchor] = link.split('#');
        const resolved = target === '' ? file : path.join(path.dirname(file), target);
        if (!existsSync(path.join(root, resolved))) return [`${file}: ${link}: no such file`];
        if (anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) return [`${file}: ${link}: no such heading`];
        return [];
      });
  });
  expect(broken).toEqual([]);
});
