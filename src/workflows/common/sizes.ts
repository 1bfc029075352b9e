/** Sizes of what a workflow sends to the server, measured as the server does: UTF-8 bytes. Pure. */
import { utf8Length } from '../../plan-format/limits';

/** Bytes of a value as JSON, as it travels to the server (undefined: nothing). */
export function sizeOf(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : utf8Length(json);
}
