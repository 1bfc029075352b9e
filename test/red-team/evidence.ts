/**
 * Where a leaked secret could end up, as text to search: a run's histories (its own and its
 * children's, every payload decoded), the blob store's files, and the forms a secret takes when a
 * tool prints it encoded.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { runHistories } from '../support/history';
import type { CaseContext } from './cases';

/** A run's histories as text: each tool activity's own events by activity id, the rest together. */
export interface HistoryTexts {
  byActivity: Map<string, string>;
  shared: string;
}

/**
 * Every string of a run's histories (its own and its children's), payloads decoded from their
 * bytes (JSON text), grouped by the tool activity they belong to (scheduled, started with its last
 * failure, completed, failed, timed out), so a leak is pinned on the call that made it.
 */
export async function historyTexts(client: Client, workflowId: string): Promise<HistoryTexts> {
  const byActivity = new Map<string, string[]>();
  const shared: string[] = [];
  for (const events of (await runHistories(client, workflowId)).values()) {
    const activityOf = new Map<string, string>();
    for (const event of events) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      let activity: string | undefined;
      if (scheduled?.activityType?.name === 'runTool' && scheduled.activityId) {
        activity = scheduled.activityId;
        activityOf.set(String(event.eventId), activity);
      } else {
        const attributes = event.activityTaskStartedEventAttributes ?? event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes ?? event.activityTaskCanceledEventAttributes;
        if (attributes?.scheduledEventId !== undefined && attributes.scheduledEventId !== null) activity = activityOf.get(String(attributes.scheduledEventId));
      }
      const parts: string[] = [];
      collectStrings(event, parts);
      if (activity === undefined) shared.push(...parts);
      else byActivity.set(activity, [...(byActivity.get(activity) ?? []), ...parts]);
    }
  }
  return { byActivity: new Map([...byActivity].map(([id, parts]) => [id, parts.join('\n')])), shared: shared.join('\n') };
}

function collectStrings(root: unknown, parts: string[]): void {
  const todo: unknown[] = [root];
  while (todo.length > 0) {
    const item = todo.pop();
    if (typeof item === 'string') parts.push(item);
    else if (item instanceof Uint8Array) parts.push(Buffer.from(item).toString('utf8'));
    else if (item !== null && typeof item === 'object') todo.push(...Object.values(item));
  }
}

/** The files of a blob store (`<workspace>/.cadre/blobs`) and their text, by path. */
export function blobStore(workspace: string): Map<string, string> {
  const dir = path.join(workspace, '.cadre', 'blobs');
  if (!existsSync(dir)) return new Map();
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => path.join(dir, name))
    .filter((file) => statSync(file).isFile());
  return new Map(files.map((file) => [file, readFileSync(file, 'utf8')]));
}

/**
 * The forms a secret takes in tool output, each a string that could only come from the secret:
 * plain, JSON-escaped, URL-encoded, hex (lower and upper), base64 and base64url at the three
 * alignments (the part that depends on the secret alone), and every 16-character piece of it
 * (a secret printed in parts is still out).
 */
export function secretForms(secret: string): { form: string; text: string }[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms: { form: string; text: string }[] = [
    { form: 'plain', text: secret },
    { form: 'JSON-escaped', text: JSON.stringify(secret).slice(1, -1) },
    { form: 'URL-encoded', text: encodeURIComponent(secret) },
    { form: 'hex', text: bytes.toString('hex') },
    { form: 'HEX', text: bytes.toString('hex').toUpperCase() },
  ];
  for (const pad of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(pad, 0x78), bytes]).toString('base64');
    // The first 4 characters after padding mix in the pad's bytes, the last 4 what follows.
    const core = encoded.slice(pad === 0 ? 0 : 4, -4);
    forms.push({ form: `base64 (offset ${pad})`, text: core });
    forms.push({ form: `base64url (offset ${pad})`, text: core.replace(/\+/g, '-').replace(/\//g, '_') });
  }
  for (let at = 0; at + 16 <= secret.length; at += 4) forms.push({ form: `characters ${at}-${at + 15}`, text: secret.slice(at, at + 16) });
  return forms;
}

/** The forms of any secret found in `text`: `where: form of NAME`. */
export function leaksIn(where: string, text: string, secrets: Record<string, string>): string[] {
  const found: string[] = [];
  // Whitespace-wrapped encodings (base64 at 76 columns, xxd -p at 60, od's groups) count too.
  const squeezed = text.replace(/\s+/g, '');
  for (const [name, secret] of Object.entries(secrets)) {
    for (const { form, text: needle } of secretForms(secret)) {
      if (text.includes(needle) || squeezed.includes(needle)) {
        found.push(`${where}: ${form} of ${name}`);
        break;
      }
    }
  }
  return found;
}

/** Any form of any secret in what the model got, the call's history events or the blobs they name. */
export function leaks(ctx: CaseContext, secrets: Record<string, string>): string[] {
  const values = ctx.outcome.json === undefined ? '' : JSON.stringify(stringsOf(ctx.outcome.json));
  return [
    ...leaksIn('the result the model got', `${ctx.outcome.text}\n${values}`, secrets),
    ...leaksIn("the call's history", ctx.evidence.history, secrets),
    ...leaksIn('the blob store', ctx.evidence.blobs, secrets),
  ];
}

function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(stringsOf);
  return [];
}
