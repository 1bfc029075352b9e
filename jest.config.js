/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 120000,
  // Four on two cores: most tests wait on servers, timers and heartbeats more than they compute.
  maxWorkers: 4,
  // The worker's native runtime keeps a logger thread alive after the last test.
  forceExit: true,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
