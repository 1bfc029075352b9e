/** The `cadre` CLI run from source, for end-to-end tests (bin/cadre.js runs the compiled copy). */
import { main } from '../../src/client/cli';

void main(process.argv);
