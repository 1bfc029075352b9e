/**
 * Payload encryption keys: `CADRE_CODEC_KEYS` (the keys themselves) or `CADRE_CODEC_KEY_FILE` (a
 * file of them), one `id=base64` per line (or `;`-separated), oldest first. The last key encrypts;
 * every key decrypts, so a new key is added at the end and an old one dropped only once no history
 * needs it. Make a key with `openssl rand -base64 32`.
 */
import { readFileSync } from 'node:fs';
import { CadreError } from '../errors/cadre-error';

export interface CodecKey {
  id: string;
  key: Buffer;
}

/** A key setting the user must fix: shown as one line. */
export class CodecKeyError extends CadreError {}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
const KEY_BYTES = 32;

/** The keys from the environment, or undefined when encryption is off. */
export function codecKeysFromEnv(env: NodeJS.ProcessEnv = process.env): CodecKey[] | undefined {
  if (env.CADRE_CODEC_KEYS && env.CADRE_CODEC_KEY_FILE) throw new CodecKeyError('set CADRE_CODEC_KEYS or CADRE_CODEC_KEY_FILE, not both');
  if (env.CADRE_CODEC_KEYS) return parseCodecKeys(env.CADRE_CODEC_KEYS, 'CADRE_CODEC_KEYS');
  if (!env.CADRE_CODEC_KEY_FILE) return undefined;
  let text: string;
  try {
    text = readFileSync(env.CADRE_CODEC_KEY_FILE, 'utf8');
  } catch (err) {
    throw new CodecKeyError(`cannot read CADRE_CODEC_KEY_FILE ${env.CADRE_CODEC_KEY_FILE}: ${(err as Error).message}`);
  }
  return parseCodecKeys(text, env.CADRE_CODEC_KEY_FILE);
}

export function parseCodecKeys(text: string, source: string): CodecKey[] {
  const keys: CodecKey[] = [];
  const entries = text.split(/[\n;]/).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  for (const [i, entry] of entries.entries()) {
    const where = `${source}, key ${i + 1}`;
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new CodecKeyError(`${where}: expected id=base64key (make one with \`openssl rand -base64 32\`)`);
    const id = entry.slice(0, eq).trim();
    const encoded = entry.slice(eq + 1).trim();
    if (!KEY_ID.test(id)) throw new CodecKeyError(`${where}: the key id "${id.slice(0, 64)}" must be 1-64 letters, digits, ".", "_" or "-"`);
    if (keys.some((k) => k.id === id)) throw new CodecKeyError(`${where}: the key id "${id}" is given twice`);
    const key = Buffer.from(encoded, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || key.length !== KEY_BYTES) {
      throw new CodecKeyError(`${where} ("${id}"): AES-256 needs ${KEY_BYTES} bytes in base64, got ${key.length} (make one with \`openssl rand -base64 32\`)`);
    }
    keys.push({ id, key });
  }
  if (keys.length === 0) throw new CodecKeyError(`${source}: no keys (one id=base64key per line)`);
  return keys;
}
