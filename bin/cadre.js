#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm install` (the `prepare` script).
// Node 22.1+ loads the CLI's modules from its compile cache (Node 20 has none).
require('../dist/src/node-compile-cache.js').enableNodeCompileCache();
require('../dist/src/client/cli.js').main(process.argv);
