#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm install` (the `prepare` script).
require('../dist/src/client/cli.js').main(process.argv);
