/**
 * Headless Chromium (Debian's `chromium` package; CHROMIUM_PATH for another), driven by
 * playwright-core, to check what the Temporal Web UI shows. The flags keep it off the network
 * beyond localhost: these machines refuse everything else (playwright gives it a fresh profile).
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/lib/chromium/chromium', '/usr/bin/chromium-browser'];

export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? CANDIDATES.find((p) => existsSync(p));
  if (!executablePath) throw new Error("no Chromium: install Debian's chromium package (apt-get install chromium; .ci/run does) or set CHROMIUM_PATH");
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
