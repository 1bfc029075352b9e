/** The data converter of cadre's clients and workers: AES-256-GCM payload encryption when keys are configured (keys.ts). */
import type { DataConverter } from '@temporalio/common';
import { AesGcmCodec } from './aes-gcm';
import { codecKeysFromEnv } from './keys';

/** For clients: undefined when encryption is off. */
export function cadreDataConverter(env: NodeJS.ProcessEnv = process.env): DataConverter | undefined {
  const keys = codecKeysFromEnv(env);
  if (!keys) return undefined;
  return { payloadCodecs: [new AesGcmCodec(keys)], failureConverterPath: require.resolve('./failure-converter') };
}
