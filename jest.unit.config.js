/**
 * `npm run test:unit`: the tests that need no Temporal server (test/unit/), in well under a minute.
 * `npm test` runs them too, with everything else.
 * @type {import('jest').Config}
 */
module.exports = {
  transform: require('./jest.config.js').transform,
  testEnvironment: 'node',
  roots: ['<rootDir>/test/unit'],
  testMatch: ['**/*.test.ts'],
  // The run's temporary files in a folder of its own, removed when it ends (test/support/run-tmp.ts).
  globalSetup: '<rootDir>/test/support/unit-global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  maxWorkers: 2,
  // Some unit tests run git and TypeScript: a loaded machine needs more than jest's 5 s.
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
