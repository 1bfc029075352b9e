/**
 * A PayloadCodec that encrypts every payload with AES-256-GCM: the whole payload (metadata and
 * data) becomes the ciphertext, and the new payload says only that it is encrypted and with which
 * key. The newest key encrypts; any known key decrypts (key rotation). GCM authenticates, so a
 * wrong key or a changed payload fails to decrypt instead of giving garbage.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CodecKey } from './keys';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_KEY = 'encryption-key-id';
const CIPHER_KEY = 'encryption-cipher';
const CIPHER = 'AES-256-GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class DecryptionError extends Error {}

export class AesGcmCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;
  private readonly newest: CodecKey;

  constructor(keys: CodecKey[]) {
    if (keys.length === 0) throw new Error('AesGcmCodec needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
    this.newest = keys[keys.length - 1];
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.newest.key, iv);
      const data = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_KEY]: utf8(this.newest.id), [CIPHER_KEY]: utf8(CIPHER) },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (text(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
      const id = text(payload.metadata?.[KEY_ID_KEY]) ?? '';
      const key = this.byId.get(id);
      if (!key) {
        throw new DecryptionError(
          `a payload is encrypted with key "${id}", which is not among this process's keys (${[...this.byId.keys()].join(', ')}): add it to CADRE_CODEC_KEYS or CADRE_CODEC_KEY_FILE`,
        );
      }
      const data = Buffer.from(payload.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new DecryptionError(`a payload encrypted with key "${id}" is too short to be one`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
        return temporal.api.common.v1.Payload.decode(plain) as Payload;
      } catch {
        throw new DecryptionError(`cannot decrypt a payload with key "${id}": the key is not the one it was encrypted with, or the payload was changed`);
      }
    });
  }
}

const utf8 = (value: string) => Buffer.from(value, 'utf8');
const text = (value: Uint8Array | null | undefined) => (value ? Buffer.from(value).toString('utf8') : undefined);
