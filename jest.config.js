/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 120000,
  // Five on two cores: most tests wait on servers, timers and heartbeats more than they compute.
  maxWorkers: 5,
  // The longest files first (CI's timings when jest has none of its own): none starts late and runs on alone.
  testSequencer: '<rootDir>/test/support/sequencer.js',
  // The worker's native runtime keeps a logger thread alive after the last test.
  forceExit: true,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
