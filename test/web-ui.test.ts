/**
 * What a person sees of a run in the Temporal Web UI (headless Chromium): Current Details as
 * Markdown lists (what the run waits for, how to answer from the CLI or as JSON, every step), and
 * an ask without a timeout in the timeline.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CadreClient } from '../src/client/client';
import { startDevServer } from '../src/worker/dev-server';
import { createCadreWorker } from '../src/worker/worker';
import { launchChromium } from './support/browser';
import { compile, tempWorkspace, uniqueId } from './support/harness';

test('Current Details render as lists with the answer as a command and as JSON; a wait without a timeout shows in the timeline', async () => {
  const server = await startDevServer({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'cadre-ui-')), ephemeral: true });
  const taskQueue = uniqueId('ui');
  const { worker, connection } = await createCadreWorker({
    address: server.address,
    namespace: server.namespace,
    taskQueue,
    workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string },
    auditDir: tempWorkspace(),
  });
  const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
  const browser = await launchChromium();
  const plan = compile(
    `
name: web-ui
steps:
  - { id: fetch-data, tool: shell, with: { command: "echo fetched" } }
  - { id: confirm, dependsOn: [fetch-data], ask: { question: "Ship it?", choices: [yes, no] } }
  - { id: ship, dependsOn: [confirm], tool: shell, with: { command: "echo shipped" } }
`,
    tempWorkspace(),
  );
  try {
    await worker.runUntil(async () => {
      const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('web-ui'), taskQueue });
      for (let d = await client.diagnostics(workflowId); d.waiting.length === 0; d = await client.diagnostics(workflowId)) await new Promise((r) => setTimeout(r, 100));
      const page = await browser.newPage();
      await page.goto(`${server.uiUrl}/namespaces/${server.namespace}/workflows/${encodeURIComponent(workflowId)}`);

      await page.setViewportSize({ width: 1280, height: 1600 });
      await page.getByText('User Metadata').first().click();
      // The UI renders details in frames of their own: the run's current ones, and the plan's.
      const current = page.frameLocator('iframe[src*="content=**waiting**"]');
      const planDetails = page.frameLocator('iframe[src*="content=**plan%20web-ui**"]');
      // The waiting entry is a list item holding both ways to answer.
      const waitingItem = current.locator('li', { hasText: 'Ship it? [yes/no]' });
      await waitingItem.waitFor({ timeout: 60_000 });
      const waitingText = await waitingItem.innerText();
      expect(waitingText).toContain(`cadre answer ${workflowId} confirm yes`);
      expect(waitingText).toContain('{"waitId":"confirm","value":"yes"}');
      // Every step is its own list item, none left as a paragraph of "- " lines.
      for (const [id, status] of [['fetch-data', 'completed'], ['confirm', 'waiting'], ['ship', 'pending']]) {
        expect(await current.locator('li', { hasText: new RegExp(`${id}\\s+${status}`) }).count()).toBe(1);
      }
      expect(await current.locator('p', { hasText: '- ' }).count()).toBe(0);
      // Nothing cut off: the frame the UI sizes for the details shows the last step whole.
      const lastItemBottom = await current.locator('li').last().evaluate((el) => (el as unknown as { getBoundingClientRect(): { bottom: number } }).getBoundingClientRect().bottom);
      const frameHeight = await page.locator('iframe[src*="content=**waiting**"]').evaluate((el) => (el as unknown as { clientHeight: number }).clientHeight);
      expect(lastItemBottom).toBeLessThanOrEqual(frameHeight);
      // The plan's static details list its steps too.
      expect(await planDetails.locator('li', { hasText: 'ship: shell (after confirm)' }).count()).toBe(1);

      // The ask has no timeout, yet the timeline shows what the run waits for.
      const history = await client.client.workflow.getHandle(workflowId).fetchHistory();
      const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
      expect(timers).toHaveLength(1);
      await page.getByText('confirm: waiting for a human (no timeout)').first().waitFor({ timeout: 30_000 });

      await client.answer(workflowId, 'confirm', 'yes');
      expect((await client.result(workflowId)).status).toBe('completed');
    });
  } finally {
    await browser.close();
    await client.close();
    await connection.close();
    await server.stop();
  }
});
