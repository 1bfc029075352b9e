/**
 * Duplicate keys in JSON text. JSON.parse keeps the last of two equal keys without a word;
 * a plan must not lose what its author wrote. Linear and iterative; runs on text that
 * JSON.parse has already accepted.
 */
export function duplicateJsonKey(text: string): { key: string; line: number } | undefined {
  const objects: (Set<string> | undefined)[] = [];
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') line++;
    else if (c === '{') objects.push(new Set());
    else if (c === '[') objects.push(undefined);
    else if (c === '}' || c === ']') objects.pop();
    else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const keys = objects[objects.length - 1];
      let next = end + 1;
      while (next < text.length && ' \t\r\n'.includes(text[next])) next++;
      if (keys && text[next] === ':') {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return { key: key.length > 60 ? `${key.slice(0, 60)}…` : key, line };
        keys.add(key);
      }
      i = end;
    }
  }
  return undefined;
}
