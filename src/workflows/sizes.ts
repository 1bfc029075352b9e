/** Sizes of what a workflow sends to the server, measured as the server does: UTF-8 bytes. Pure. */

/** Bytes of a value as JSON, as it travels to the server (undefined: nothing). */
export function sizeOf(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : utf8Length(json);
}

/** UTF-8 length of a string, without Buffer or TextEncoder (neither is part of the workflow sandbox's contract). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4; // a surrogate pair is one 4-byte character
      i++;
    } else bytes += 3;
  }
  return bytes;
}
