/** `npm run test:unit`: no server, only the run's folder for temporary files (run-tmp.ts). */
import { useRunFolder } from './run-tmp';

export default function unitGlobalSetup(): void {
  useRunFolder();
}
