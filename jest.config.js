/** @type {import('jest').Config} */
module.exports = {
  // SWC strips the types (tsconfig.json's isolatedModules: every file compiles on its own; npm test
  // runs tsc for the types): on a clean clone, where jest has no cache, each worker transpiles the
  // ~400 files it loads, and SWC does so in a fifth of the CPU TypeScript took (docs/testing.md).
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' }, sourceMaps: 'inline' }],
  },
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Each file's CPU, which the summary reporter tables at the end: CI's minutes are CPU on two cores.
  setupFilesAfterEnv: ['<rootDir>/test/support/file-cpu.ts'],
  testTimeout: 120000,
  // Five on two cores: most tests wait on servers, timers and heartbeats more than they compute.
  maxWorkers: 5,
  // The longest files first (CI's timings when jest has none of its own): none starts late and runs on alone.
  testSequencer: '<rootDir>/test/support/sequencer.js',
  // The worker's native runtime keeps a logger thread alive after the last test.
  forceExit: true,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
