import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'assert', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'fs/promises', 'http',
  'http2', 'https', 'net', 'os', 'path', 'perf_hooks', 'process', 'readline', 'stream', 'timers', 'timers/promises',
  'tls', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib',
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.cadre/', 'bin/', 'test/support/summary-reporter.js', 'test/support/sequencer.js', 'jest.config.js', 'jest.unit.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // Workflow code is replayed: no Node built-ins, no I/O modules, no clock or randomness of its own.
    files: ['src/workflows/**/*.ts', 'src/protocol/**/*.ts', 'src/errors/error-classes.ts', 'src/plan-format/types.ts', 'src/plan-format/templates.ts', 'src/plan-format/expressions.ts', 'src/plan-format/duration.ts', 'src/plan-format/limits.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins, ...nodeBuiltins.map((m) => `node:${m}`)].map((name) => ({
            name,
            message: 'workflow code must be deterministic: do I/O in an activity',
          })),
          patterns: [
            { group: ['node:*'], message: 'workflow code must be deterministic: do I/O in an activity' },
            { group: ['@temporalio/client', '@temporalio/worker', '@temporalio/activity', 'zod', '**/activities', '**/activities/*', '**/worker/*', '**/client/*', '**/plan-format/validate', '**/plan-format/schema', '**/plan-format/tools', '**/plan-format/load'], message: 'workflow code imports only workflow-safe modules (activities by `import type`)', allowTypeImports: true },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'use Temporal\'s deterministic random (workflow.uuid4) instead' },
        { object: 'Date', property: 'now', message: 'read time through src/workflows/common/clock.ts' },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'use sleep() from @temporalio/workflow' }, { name: 'fetch', message: 'do I/O in an activity' }],
    },
  },
  {
    files: ['src/workflows/common/clock.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
