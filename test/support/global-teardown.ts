import { removeRunFolder } from './run-tmp';

export default async function globalTeardown(): Promise<void> {
  await globalThis.cadreTestServer?.stop();
  removeRunFolder();
}
