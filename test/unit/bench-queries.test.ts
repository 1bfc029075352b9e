import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_QUERIES } from '../../bench/project-queries';

const ROOT = path.join(__dirname, '..', '..');

// `npm run bench` times these queries on this project's source; a file that moved made it fail there.
describe("the benchmarks' navigation queries on this project", () => {
  test.each(Object.entries(PROJECT_QUERIES))('%s names a file that declares its symbol', (_name, query) => {
    const source = readFileSync(path.join(ROOT, query.file), 'utf8');
    expect(source).toMatch(new RegExp(`\\b(export|class|function|interface|type|const)\\b[^\\n]*\\b${query.symbol}\\b`));
    if (typeof query.params.file === 'string') expect(query.params.file).toBe(query.file);
    if (typeof query.params.dir === 'string') expect(path.relative(query.params.dir, query.file)).not.toMatch(/^\.\./);
  });
});
