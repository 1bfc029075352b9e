/**
 * The redactor: each secret, whatever its shape, is found as it is and in every encoding a tool
 * prints (base64 and base64url at each alignment, hex, percent-encoding, JSON escaping, shell
 * quoting, wrapped and spaced dumps, dumps with an offset or a character column), inside other text
 * and inside JSON values; nothing else is touched; short values are ignored; 8 MiB of output goes
 * through.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { MIN_SECRET_LENGTH, REDACTED, Redactor } from '../../src/secrets';
import { mayHoldDump } from '../../src/secrets/dumps';

/** An API key; one with every character that escaping changes; one beyond ASCII, astral included. */
const SHAPES = {
  key: 'sk-proj-4fQ9xZ2LmN8pR7tV1wY3bC6dE0gH5jK_aB-cD',
  punctuation: `p/a+s=s"w\\o'rd\`$ <&> 8%~!*()`,
  unicode: 'pässwörd-€-🔑-密钥-naïve',
};
type Shape = keyof typeof SHAPES;
const shapes = Object.keys(SHAPES) as Shape[];
const redactor = new Redactor(Object.values(SHAPES));

const hex4 = (code: number, upper = false) => (upper ? code.toString(16).toUpperCase() : code.toString(16)).padStart(4, '0');
const hex = (s: string) => Buffer.from(s).toString('hex');
const percentAll = (s: string) => Array.from(Buffer.from(s), (b) => '%' + b.toString(16).padStart(2, '0').toUpperCase()).join('');
const lowerPercents = (s: string) => s.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
const json = (s: string) => JSON.stringify(s).slice(1, -1);

/** What the common serializers write, made here independently of the redactor's own escaping. */
const pythonJson = (s: string) => json(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${hex4(c.charCodeAt(0))}`);
const goJson = (s: string) => json(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${hex4(c.charCodeAt(0))}`);
const phpJson = (s: string) => pythonJson(s).replace(/\//g, '\\/');
const dotnetJson = (s: string) =>
  Array.from({ length: s.length }, (_, i) => {
    const c = s[i];
    if ('"<>&\'+`'.includes(c) || c.charCodeAt(0) >= 0x7f) return `\\u${hex4(c.charCodeAt(0), true)}`;
    return c === '\\' ? '\\\\' : c;
  }).join('');

/** The secret as a tool prints it, in each encoding that needs no alignment. */
const FORMS: [string, (s: string) => string][] = [
  ['as it is', (s) => s],
  ['hex', hex],
  ['HEX', (s) => hex(s).toUpperCase()],
  ['hex in groups of 4 digits (xxd)', (s) => hex(s).replace(/(.{4})(?=.)/g, '$1 ')],
  ['encodeURIComponent', encodeURIComponent],
  ['encodeURIComponent, lower-case %xx', (s) => lowerPercents(encodeURIComponent(s))],
  ['form encoding (URLSearchParams, space as +)', (s) => new URLSearchParams({ k: s }).toString().slice(2)],
  ['encodeURI', encodeURI],
  ['every byte %XX', percentAll],
  ['every byte %xx', (s) => lowerPercents(percentAll(s))],
  ['JSON.stringify', json],
  ['JSON with \\uxxxx beyond ASCII (Python)', pythonJson],
  ['JSON with <>& as \\u00xx (Go)', goJson],
  ['JSON with \\/ (PHP)', phpJson],
  ['JSON with \\u00XX (.NET)', dotnetJson],
  ['JSON inside a JSON string', (s) => json(json(s))],
  ['hex, JSON-escaped', (s) => json(hex(s))],
  ['encodeURIComponent, JSON-escaped (.NET)', (s) => dotnetJson(encodeURIComponent(s))],
  ['every byte %XX, JSON-escaped', (s) => json(percentAll(s))],
];

describe('a secret in an encoding with no alignment', () => {
  const cases = shapes.flatMap((shape) => FORMS.map(([form, encode]) => [shape, form, encode] as const));
  test.each(cases)('%s, %s', (shape, _form, encode) => {
    const printed = encode(SHAPES[shape]);
    const before = 'GET https://api.example.com/v1?page=2 (auth: ';
    const after = ') took 41 ms\n';
    expect(redactor.text(before + printed + after)).toBe(before + REDACTED + after);
  });
});

describe('base64 at each alignment', () => {
  // The secret starts at byte 0, 1 or 2 of a 3-byte group. Every character that carries a bit of
  // it goes: from the one holding its first bit to the one holding its last, and nothing else.
  const cases = shapes.flatMap((shape) => (['base64', 'base64url'] as const).flatMap((encoding) => [0, 1, 2].map((alignment) => [shape, encoding, alignment] as const)));
  test.each(cases)('%s in %s at byte %d of a group', (shape, encoding, alignment) => {
    const prefix = Buffer.from('{"user":"ann","key":"'.slice(0, 18 + alignment));
    const secret = Buffer.from(SHAPES[shape]);
    const encoded = Buffer.concat([prefix, secret, Buffer.from('","n":1}')]).toString(encoding);
    const first = Math.floor((8 * prefix.length) / 6);
    const end = Math.ceil((8 * (prefix.length + secret.length)) / 6);
    expect(prefix.length % 3).toBe(alignment);
    expect(redactor.text(`body: ${encoded}\n`)).toBe(`body: ${encoded.slice(0, first)}${REDACTED}${encoded.slice(end)}\n`);
  });

  test.each(shapes)('%s base64-encoded alone, padding and all (echo -n "$KEY" | base64)', (shape) => {
    const encoded = Buffer.from(SHAPES[shape]).toString('base64');
    expect(redactor.text(encoded)).toBe(REDACTED + encoded.replace(/^[^=]*/, ''));
  });

  test('in an HTTP Basic header, after "user:"', () => {
    const header = `Authorization: Basic ${Buffer.from(`deploy:${SHAPES.key}`).toString('base64')}`;
    expect(redactor.text(header)).toMatch(/^Authorization: Basic ZGVwbG95[A-Za-z0-9+/]?\[redacted\]=*$/);
  });

  test.each(shapes)('%s base64-encoded, then percent-encoded and JSON-escaped (base64 in a query, in a PHP body)', (shape) => {
    const encoded = Buffer.from(`xy${SHAPES[shape]}`).toString('base64');
    const core = encoded.slice(Math.ceil(16 / 6), Math.floor((8 * Buffer.byteLength(`xy${SHAPES[shape]}`)) / 6));
    expect(redactor.text(`?data=${encodeURIComponent(encoded)}`)).not.toContain(encodeURIComponent(core));
    expect(redactor.text(`?data=${encodeURIComponent(encoded)}`)).toContain(REDACTED);
    expect(redactor.text(`{"data":"${phpJson(encoded)}"}`)).not.toContain(phpJson(core));
    expect(redactor.text(`{"data":"${phpJson(encoded)}"}`)).toContain(REDACTED);
  });
});

describe('wrapped and spaced, as shells print it', () => {
  /** The text with whitespace removed: what is left of the secret must be nothing. */
  const squeezed = (s: string) => s.replace(/\s/g, '');

  test.each([
    ['base64 wrapped at 76 (coreutils base64)', 76, '\n'],
    ['base64 wrapped at 64 (openssl, PEM)', 64, '\n'],
    ['base64 wrapped at 64 with CRLF', 64, '\r\n'],
  ])('%s', (_name, width, eol) => {
    const prefix = Buffer.from(randomBytes(40).toString('hex').slice(0, 40));
    const secret = Buffer.from(SHAPES.key);
    const encoded = Buffer.concat([prefix, secret, Buffer.from(' and some more text after it')]).toString('base64');
    const wrapped = encoded.replace(new RegExp(`(.{${width}})(?=.)`, 'g'), `$1${eol}`);
    const first = Math.floor((8 * prefix.length) / 6);
    const end = Math.ceil((8 * (prefix.length + secret.length)) / 6);
    expect(Math.floor(first / width)).toBeLessThan(Math.floor(end / width)); // the secret spans a line break
    expect(squeezed(redactor.text(wrapped))).toBe(encoded.slice(0, first) + REDACTED + encoded.slice(end));
  });

  test.each(shapes)('%s through od -An -tx1 (hex bytes, 16 a line)', (shape) => {
    const input = `config:\n${SHAPES[shape]}\nend\n`;
    const dumped = spawnSync('od', ['-An', '-tx1', '-v'], { input, encoding: 'utf8' }).stdout;
    expect(dumped.split('\n').length).toBeGreaterThan(3);
    expect(squeezed(redactor.text(dumped))).toBe(`${hex('config:\n')}${REDACTED}${hex('\nend\n')}`);
  });

  test('hex wrapped at 60 (xxd -p)', () => {
    const dumped = hex(`a long prefix of thirty bytes:${SHAPES.unicode};`).replace(/(.{60})/g, '$1\n');
    expect(squeezed(redactor.text(dumped))).toBe(`${hex('a long prefix of thirty bytes:')}${REDACTED}${hex(';')}`);
  });

  test('a key a terminal wrapped', () => {
    expect(redactor.text(`export OPENAI_API_KEY=${SHAPES.key.slice(0, 20)}\n${SHAPES.key.slice(20)}\nok`)).toBe(`export OPENAI_API_KEY=${REDACTED}\nok`);
  });

  test.each(['punctuation', 'unicode'] as const)('%s in bash set -x and declare -p output', (shape) => {
    const traced = spawnSync('bash', ['--norc', '--noprofile', '-xc', 'true "$T"; declare -p T'], { env: { PATH: process.env.PATH, T: SHAPES[shape], LC_ALL: 'C.UTF-8' }, encoding: 'utf8' });
    const quoted = shape === 'punctuation' ? `'${REDACTED}'` : REDACTED;
    expect(redactor.text(traced.stdout + traced.stderr)).toBe(`declare -x T="${REDACTED}"\n+ true ${quoted}\n+ declare -p T\n`);
  });

  test('unicode in bash set -x in the C locale ($\'\\303\\244\' octal bytes)', () => {
    const traced = spawnSync('bash', ['--norc', '--noprofile', '-xc', 'true "$T"'], { env: { PATH: process.env.PATH, T: SHAPES.unicode, LC_ALL: 'C' }, encoding: 'utf8' });
    expect(traced.stderr).toContain("$'p\\303\\244ssw");
    expect(redactor.text(traced.stderr)).toBe(`+ true $'${REDACTED}'\n`);
  });

  test('unicode as Python prints bytes (\\xNN)', () => {
    const printed = `b'${Array.from(Buffer.from(SHAPES.unicode), (b) => (b < 0x80 ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('')}'`;
    expect(redactor.text(printed)).toBe(`b'${REDACTED}'`);
  });
});

describe('in JSON values', () => {
  test.each(shapes)('%s nested in a JSON document, and in a JSON document inside a JSON string', (shape) => {
    const doc = (s: string) => ({ data: { items: [{ id: 1, token: s }, `Bearer ${s}`], [s]: true } });
    expect(redactor.text(JSON.stringify(doc(SHAPES[shape])))).toBe(JSON.stringify(doc(REDACTED)));
    expect(redactor.text(JSON.stringify({ body: JSON.stringify(doc(SHAPES[shape])) }))).toBe(JSON.stringify({ body: JSON.stringify(doc(REDACTED)) }));
  });

  test('value: every string, keys included, in a new value; other values untouched', () => {
    const when = new Date(0);
    const input = { exitCode: 0, ok: true, none: null, skip: undefined, when, stdout: `key=${SHAPES.key}\n`, list: [1, `x${SHAPES.unicode}x`, [SHAPES.punctuation]], [`h-${SHAPES.key}`]: { deep: [{ deeper: hex(SHAPES.key) }] } };
    const copy = JSON.parse(JSON.stringify(input)) as unknown;
    const out = redactor.value(input);
    expect(out).toEqual({ exitCode: 0, ok: true, none: null, skip: undefined, when, stdout: `key=${REDACTED}\n`, list: [1, `x${REDACTED}x`, [REDACTED]], [`h-${REDACTED}`]: { deep: [{ deeper: REDACTED }] } });
    expect(out).not.toBe(input);
    expect(out.list).not.toBe(input.list);
    expect(out.when).toBe(when);
    expect(JSON.parse(JSON.stringify(input))).toEqual(copy);
  });

  test('value: strings and arrays at the top; cycles and shared references kept', () => {
    expect(redactor.value(SHAPES.key)).toBe(REDACTED);
    expect(redactor.value([SHAPES.key, 3])).toEqual([REDACTED, 3]);
    expect(redactor.value(42)).toBe(42);
    const shared = { token: SHAPES.key };
    const cyclic: { self?: unknown; a: unknown; b: unknown; list: unknown[] } = { a: shared, b: shared, list: [] };
    cyclic.self = cyclic;
    cyclic.list.push(cyclic.list, cyclic);
    const out = redactor.value(cyclic);
    expect(out.self).toBe(out);
    expect(out.a).toBe(out.b);
    expect(out.a).toEqual({ token: REDACTED });
    expect(out.list[0]).toBe(out.list);
    expect(out.list[1]).toBe(out);
    expect(shared.token).toBe(SHAPES.key);
  });

  test('value: keys that redact alike keep both entries; "__proto__" stays a key', () => {
    const other = 'sk-other-key-0123456789';
    const out = new Redactor([SHAPES.key, other]).value({ [SHAPES.key]: 1, [other]: 2, ['__proto__']: SHAPES.key } as Record<string, unknown>);
    expect(Object.entries(out)).toEqual([[REDACTED, 1], [`${REDACTED} (2)`, 2], ['__proto__', REDACTED]]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe('what is left alone', () => {
  const ordinary = [
    'total 48\ndrwxr-xr-x  5 ann staff  160 Nov 23 15:40 src\n-rw-r--r--  1 ann staff 1021 Nov 23 15:40 package.json\n',
    '{"name":"cadre","version":"0.1.0","scripts":{"test":"jest"},"password":"[set me]","sk":"proj"}',
    'Lorem ipsum dolor sit amet, consectetur adipiscing elit: sk-proj- keys start like this; passwords too.',
    `https://example.com/search?q=${encodeURIComponent('pässwörd naïve €')}&hex=${hex('sk-proj-')}&page=2`,
  ];
  test.each(ordinary.map((text, i) => [i, text]))('ordinary text %d', (_i, text) => {
    expect(redactor.text(text)).toBe(text);
  });

  test('1 MiB of random base64, hex and bytes as latin1', () => {
    const bytes = randomBytes(512 * 1024);
    for (const text of [bytes.toString('base64'), bytes.toString('base64url'), bytes.toString('hex'), bytes.toString('latin1')]) expect(redactor.text(text) === text).toBe(true);
  });

  test('the secret with one character changed, or cut short inside a text', () => {
    const changed = SHAPES.key.replace('Z2L', 'Z3L');
    expect(redactor.text(`key ${changed} ok`)).toBe(`key ${changed} ok`);
    const cut = `${SHAPES.key.slice(0, 30)} and more`;
    expect(redactor.text(cut)).toBe(cut);
  });

  test(`secrets shorter than ${MIN_SECRET_LENGTH} characters (whitespace aside) are ignored`, () => {
    const short = new Redactor(['hunter2', '', '  abc  \n', 'a b c d e f g']);
    expect(short.empty).toBe(true);
    expect(short.text('hunter2 abc a b c d e f g')).toBe('hunter2 abc a b c d e f g');
    expect(short.value({ hunter2: 'hunter2' })).toEqual({ hunter2: 'hunter2' });
    const eight = new Redactor(['hunter22', 'short']);
    expect(eight.empty).toBe(false);
    expect(eight.text('pw hunter22 short')).toBe(`pw ${REDACTED} short`);
  });

  test('no secrets at all', () => {
    const none = new Redactor([]);
    expect(none.empty).toBe(true);
    expect(none.text(SHAPES.key)).toBe(SHAPES.key);
  });
});

describe('how secrets are given and overlap', () => {
  test('a secret read with its newline is found without it, in plain and in base64', () => {
    const fromFile = new Redactor([`${SHAPES.key}\n`]);
    expect(fromFile.text(`k=${SHAPES.key}.`)).toBe(`k=${REDACTED}.`);
    expect(fromFile.text(Buffer.from(SHAPES.key).toString('base64'))).toMatch(/^\[redacted\]=*$/);
  });

  test('a unicode secret given composed is found decomposed, and the other way round', () => {
    const composed = 'Kennwort-é-ñ-ü-2026';
    expect(new Redactor([composed]).text(`pw ${composed.normalize('NFD')}`)).toBe(`pw ${REDACTED}`);
    expect(new Redactor([composed.normalize('NFD')]).text(`pw ${composed}`)).toBe(`pw ${REDACTED}`);
  });

  test('a multi-line secret (a PEM key) with other line endings', () => {
    const pem = `-----BEGIN PRIVATE KEY-----\n${randomBytes(96).toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----`;
    expect(new Redactor([pem]).text(`key:\r\n${pem.replace(/\n/g, '\r\n')}\r\ndone`)).toBe(`key:\r\n${REDACTED}\r\ndone`);
  });

  test('overlapping secrets, one inside another, the same twice, side by side', () => {
    const a = 'AAAA1111BBBB2222';
    const b = 'BBBB2222CCCC3333';
    const c = 'AAAA1111BBBB2222CCCC3333DDDD';
    const inner = '1111BBBB';
    const r = new Redactor([a, b, inner, a]);
    expect(r.text(`x${a.slice(0, 8)}${b}y`)).toBe(`x${REDACTED}y`);
    expect(r.text(`x ${a.slice(0, 4)}${inner} y`)).toBe(`x AAAA${REDACTED} y`);
    expect(new Redactor([a, c]).text(`<${c}>`)).toBe(`<${REDACTED}>`);
    expect(new Redactor([c, a]).text(`<${a}CCCC>`)).toBe(`<${REDACTED}CCCC>`);
    expect(r.text(`${a} ${a}${b}`)).toBe(`${REDACTED} ${REDACTED}`);
  });

  test('a text that ends inside a secret (cut by a size limit) loses its beginning too', () => {
    expect(redactor.text(`... Authorization: Bearer ${SHAPES.key.slice(0, 12)}`)).toBe(`... Authorization: Bearer ${REDACTED}`);
    expect(redactor.text(`... ${SHAPES.key.slice(0, MIN_SECRET_LENGTH - 1)}`)).toBe(`... ${SHAPES.key.slice(0, MIN_SECRET_LENGTH - 1)}`);
  });
});

describe('big outputs', () => {
  test('8 MiB with secrets in many encodings, at both ends and throughout', () => {
    const line = 'INFO 2026-11-23T15:40:02.311Z worker-7 GET https://api.example.com/v1/items?page=3 200 41ms\n';
    const filler = line.repeat(Math.ceil((8 * 1024 * 1024) / line.length));
    const planted = shapes.flatMap((shape) => FORMS.map(([, encode]) => encode(SHAPES[shape])));
    const parts: string[] = [planted[0]];
    const step = Math.floor(filler.length / planted.length);
    for (let i = 0; i < planted.length; i++) parts.push(filler.slice(i * step, (i + 1) * step), planted[i]);
    const text = parts.join('');
    expect(text.length).toBeGreaterThanOrEqual(8 * 1024 * 1024);
    const out = redactor.text(text);
    expect(out.split(REDACTED).length - 1).toBe(planted.length + 1);
    expect(out.replaceAll(REDACTED, '')).toBe(filler.slice(0, planted.length * step));
  });

  test('a self-overlapping secret repeated over 1 MiB (a match at every other character) comes out as one [redacted]', () => {
    const r = new Redactor(['abababab']);
    expect(r.text(`<${'ab'.repeat(512 * 1024)}>`)).toBe(`<${REDACTED}>`);
  });

  test('8 MiB of one base64 blob with a key inside', () => {
    const bytes = Buffer.concat([randomBytes(3 * 1024 * 1024), Buffer.from(SHAPES.key), randomBytes(3 * 1024 * 1024)]);
    const encoded = bytes.toString('base64');
    const out = redactor.text(encoded);
    const first = Math.floor((8 * 3 * 1024 * 1024) / 6);
    expect(out).toBe(encoded.slice(0, first) + REDACTED + encoded.slice(Math.ceil((8 * (3 * 1024 * 1024 + SHAPES.key.length)) / 6)));
  });
});

describe('dumps with an offset or character column (xxd, hexdump, hd, od)', () => {
  const KEY = 'sk-QvXmZpLwKnRtYbNcJhGfDs';
  const LONG_KEY = 'sk-live-HqRwTzYuPxMnBvCkJgFdSaLoKiUjYhTg';
  const dumps = new Redactor([...Object.values(SHAPES), KEY, LONG_KEY]);

  /** Each format: its command, the bytes a line shows, the lines it takes for them (one a type). */
  const FORMATS = [
    // where a red team found secrets shown in pieces
    { command: 'xxd', width: 16, lines: 1 },
    { command: 'xxd -g1', width: 16, lines: 1 },
    { command: 'xxd -c 8', width: 8, lines: 1 },
    { command: 'xxd -u', width: 16, lines: 1 },
    { command: 'hexdump -C', width: 16, lines: 1 },
    { command: 'hd', width: 16, lines: 1 },
    { command: 'hexdump', width: 16, lines: 1 }, // little-endian 16-bit words
    { command: 'od -c', width: 16, lines: 1 },
    { command: 'od -tx1', width: 16, lines: 1 },
    { command: 'od -An -c', width: 16, lines: 1 },
    { command: 'od -tcx1', width: 16, lines: 2 },
    // and their relatives
    { command: 'xxd -g4', width: 16, lines: 1 },
    { command: 'xxd -e', width: 16, lines: 1 }, // little-endian 32-bit words
    { command: 'hexdump -x', width: 16, lines: 1 },
    { command: 'hexdump -c', width: 16, lines: 1 },
    { command: 'od -x', width: 16, lines: 1 },
    { command: 'od -tx4', width: 16, lines: 1 },
    { command: 'od -a', width: 16, lines: 1 },
    { command: 'od -b', width: 16, lines: 1 },
    { command: 'od -Ax -tx1z', width: 16, lines: 1 },
    { command: 'od -tx1c', width: 16, lines: 2 },
    { command: 'od -tcd1', width: 16, lines: 2 },
    { command: 'od -An -tcx1', width: 16, lines: 2 },
  ];
  type Format = (typeof FORMATS)[number];
  const format = (command: string) => FORMATS.find((f) => f.command === command)!;

  const installed = new Map<string, boolean>();
  const has = (tool: string) => installed.get(tool) ?? installed.set(tool, spawnSync('sh', ['-c', 'command -v "$0"', tool]).status === 0).get(tool)!;
  const dumpOf = (command: string, input: Buffer) => {
    const [tool, ...args] = command.split(' ');
    return spawnSync(tool, args, { input, encoding: 'utf8', env: { PATH: process.env.PATH, LC_ALL: 'C' } }).stdout;
  };

  /** Text with no 4 bytes in a row of the secret: no 4 of its characters, as they are or with whitespace removed, nor their hex (also as 16- and 32-bit little-endian words). */
  const expectNoPiece = (secret: string, out: string) => {
    const squeezed = out.replace(/\s/g, '');
    const bytes = Buffer.from(secret);
    const pieces: string[] = [];
    for (let i = 0; i + 4 <= secret.length; i++) pieces.push(secret.slice(i, i + 4));
    for (let i = 0; i + 4 <= bytes.length; i++) {
      const [a, b, c, d] = bytes.subarray(i, i + 4);
      pieces.push(...[[a, b, c, d], [b, a, d, c], [d, c, b, a]].map((word) => Buffer.from(word).toString('hex')));
    }
    expect(pieces.filter((piece) => out.includes(piece) || squeezed.includes(piece) || squeezed.toLowerCase().includes(piece))).toEqual([]);
  };

  /** Whether line `i` of a dump shows a byte of the file's [at, end). */
  const shows = ({ width, lines }: Format, i: number, at: number, end: number) => {
    const first = Math.floor(i / lines) * width;
    return first < end && at < first + width;
  };
  /** A line redacted: its offset (or its indentation), then [redacted]. */
  const redacted = (line: string) => /^(?:[0-9A-Fa-f]+:? |\s*)/.exec(line)![0] + REDACTED + (line.endsWith('\r') ? '\r' : '');

  /** The dump of a file holding `secret` at byte `at`, redacted: the lines that show a byte of it, and no other. */
  const expectRedacted = (dump: string, f: Format, secret: string, at: number) => {
    const end = at + Buffer.byteLength(secret);
    const out = dumps.text(dump);
    expect(out.split('\n')).toEqual(dump.split('\n').map((line, i) => (shows(f, i, at, end) ? redacted(line) : line)));
    expectNoPiece(secret, out);
  };

  const FILLER = Buffer.concat([Buffer.from('lorem ipsum dolor sit amet,\n\tconsectetur adipiscing elit; sed do eiusmod tempor'), Buffer.from([0, 0xff, 0x5c]), Buffer.from(' incididunt ut labore et dolore\n')]);
  const fileWith = (secret: string, at: number) => Buffer.concat([FILLER.subarray(0, at), Buffer.from(secret), FILLER.subarray(at)]);

  describe.each(FORMATS)('$command', (f) => {
    const run = has(f.command.split(' ')[0]) ? test.each : test.skip.each;
    run([0, 5, 15, 16, 17])(`${KEY.length} bytes at byte %d`, (at) => {
      expectRedacted(dumpOf(f.command, fileWith(KEY, at)), f, KEY, at);
    });

    run([8])(`${LONG_KEY.length} bytes at byte %d, over 3 lines or more`, (at) => {
      expect(Math.floor((at + LONG_KEY.length - 1) / f.width) - Math.floor(at / f.width)).toBeGreaterThanOrEqual(2);
      expectRedacted(dumpOf(f.command, fileWith(LONG_KEY, at)), f, LONG_KEY, at);
    });

    // od -a shows 7 bits of a byte: beyond ASCII, what it shows is not the secret's bytes.
    run(f.command === 'od -a' ? (['punctuation'] as const) : (['punctuation', 'unicode'] as const))('the %s secret at byte 21', (shape) => {
      expectRedacted(dumpOf(f.command, fileWith(SHAPES[shape], 21)), f, SHAPES[shape], 21);
    });
  });

  /** The dumps of '# settings\nid=7\tkey=<LONG_KEY>\nmode=fast\\on\0\xff ended\n' (82 bytes, the key at byte 20), as printed here. */
  const SAMPLES: Record<string, string[]> = {
    'xxd': [
      '00000000: 2320 7365 7474 696e 6773 0a69 643d 3709  # settings.id=7.',
      '00000010: 6b65 793d 736b 2d6c 6976 652d 4871 5277  key=sk-live-HqRw',
      '00000020: 547a 5975 5078 4d6e 4276 436b 4a67 4664  TzYuPxMnBvCkJgFd',
      '00000030: 5361 4c6f 4b69 556a 5968 5467 0a6d 6f64  SaLoKiUjYhTg.mod',
      '00000040: 653d 6661 7374 5c6f 6e00 ff20 656e 6465  e=fast\\on.. ende',
      '00000050: 640a                                     d.',
    ],
    'xxd -g1': [
      '00000000: 23 20 73 65 74 74 69 6e 67 73 0a 69 64 3d 37 09  # settings.id=7.',
      '00000010: 6b 65 79 3d 73 6b 2d 6c 69 76 65 2d 48 71 52 77  key=sk-live-HqRw',
      '00000020: 54 7a 59 75 50 78 4d 6e 42 76 43 6b 4a 67 46 64  TzYuPxMnBvCkJgFd',
      '00000030: 53 61 4c 6f 4b 69 55 6a 59 68 54 67 0a 6d 6f 64  SaLoKiUjYhTg.mod',
      '00000040: 65 3d 66 61 73 74 5c 6f 6e 00 ff 20 65 6e 64 65  e=fast\\on.. ende',
      '00000050: 64 0a                                            d.',
    ],
    'xxd -c 8': [
      '00000000: 2320 7365 7474 696e  # settin',
      '00000008: 6773 0a69 643d 3709  gs.id=7.',
      '00000010: 6b65 793d 736b 2d6c  key=sk-l',
      '00000018: 6976 652d 4871 5277  ive-HqRw',
      '00000020: 547a 5975 5078 4d6e  TzYuPxMn',
      '00000028: 4276 436b 4a67 4664  BvCkJgFd',
      '00000030: 5361 4c6f 4b69 556a  SaLoKiUj',
      '00000038: 5968 5467 0a6d 6f64  YhTg.mod',
      '00000040: 653d 6661 7374 5c6f  e=fast\\o',
      '00000048: 6e00 ff20 656e 6465  n.. ende',
      '00000050: 640a                 d.',
    ],
    'xxd -u': [
      '00000000: 2320 7365 7474 696E 6773 0A69 643D 3709  # settings.id=7.',
      '00000010: 6B65 793D 736B 2D6C 6976 652D 4871 5277  key=sk-live-HqRw',
      '00000020: 547A 5975 5078 4D6E 4276 436B 4A67 4664  TzYuPxMnBvCkJgFd',
      '00000030: 5361 4C6F 4B69 556A 5968 5467 0A6D 6F64  SaLoKiUjYhTg.mod',
      '00000040: 653D 6661 7374 5C6F 6E00 FF20 656E 6465  e=fast\\on.. ende',
      '00000050: 640A                                     d.',
    ],
    'hexdump -C': [
      '00000000  23 20 73 65 74 74 69 6e  67 73 0a 69 64 3d 37 09  |# settings.id=7.|',
      '00000010  6b 65 79 3d 73 6b 2d 6c  69 76 65 2d 48 71 52 77  |key=sk-live-HqRw|',
      '00000020  54 7a 59 75 50 78 4d 6e  42 76 43 6b 4a 67 46 64  |TzYuPxMnBvCkJgFd|',
      '00000030  53 61 4c 6f 4b 69 55 6a  59 68 54 67 0a 6d 6f 64  |SaLoKiUjYhTg.mod|',
      '00000040  65 3d 66 61 73 74 5c 6f  6e 00 ff 20 65 6e 64 65  |e=fast\\on.. ende|',
      '00000050  64 0a                                             |d.|',
      '00000052',
    ],
    'hd': [
      '00000000  23 20 73 65 74 74 69 6e  67 73 0a 69 64 3d 37 09  |# settings.id=7.|',
      '00000010  6b 65 79 3d 73 6b 2d 6c  69 76 65 2d 48 71 52 77  |key=sk-live-HqRw|',
      '00000020  54 7a 59 75 50 78 4d 6e  42 76 43 6b 4a 67 46 64  |TzYuPxMnBvCkJgFd|',
      '00000030  53 61 4c 6f 4b 69 55 6a  59 68 54 67 0a 6d 6f 64  |SaLoKiUjYhTg.mod|',
      '00000040  65 3d 66 61 73 74 5c 6f  6e 00 ff 20 65 6e 64 65  |e=fast\\on.. ende|',
      '00000050  64 0a                                             |d.|',
      '00000052',
    ],
    'hexdump': [
      '0000000 2023 6573 7474 6e69 7367 690a 3d64 0937',
      '0000010 656b 3d79 6b73 6c2d 7669 2d65 7148 7752',
      '0000020 7a54 7559 7850 6e4d 7642 6b43 674a 6446',
      '0000030 6153 6f4c 694b 6a55 6859 6754 6d0a 646f',
      '0000040 3d65 6166 7473 6f5c 006e 20ff 6e65 6564',
      '0000050 0a64                                   ',
      '0000052',
    ],
    'od -c': [
      '0000000   #       s   e   t   t   i   n   g   s  \\n   i   d   =   7  \\t',
      '0000020   k   e   y   =   s   k   -   l   i   v   e   -   H   q   R   w',
      '0000040   T   z   Y   u   P   x   M   n   B   v   C   k   J   g   F   d',
      '0000060   S   a   L   o   K   i   U   j   Y   h   T   g  \\n   m   o   d',
      '0000100   e   =   f   a   s   t   \\   o   n  \\0 377       e   n   d   e',
      '0000120   d  \\n',
      '0000122',
    ],
    'od -tx1': [
      '0000000 23 20 73 65 74 74 69 6e 67 73 0a 69 64 3d 37 09',
      '0000020 6b 65 79 3d 73 6b 2d 6c 69 76 65 2d 48 71 52 77',
      '0000040 54 7a 59 75 50 78 4d 6e 42 76 43 6b 4a 67 46 64',
      '0000060 53 61 4c 6f 4b 69 55 6a 59 68 54 67 0a 6d 6f 64',
      '0000100 65 3d 66 61 73 74 5c 6f 6e 00 ff 20 65 6e 64 65',
      '0000120 64 0a',
      '0000122',
    ],
    'od -An -c': [
      '   #       s   e   t   t   i   n   g   s  \\n   i   d   =   7  \\t',
      '   k   e   y   =   s   k   -   l   i   v   e   -   H   q   R   w',
      '   T   z   Y   u   P   x   M   n   B   v   C   k   J   g   F   d',
      '   S   a   L   o   K   i   U   j   Y   h   T   g  \\n   m   o   d',
      '   e   =   f   a   s   t   \\   o   n  \\0 377       e   n   d   e',
      '   d  \\n',
    ],
    'od -tcx1': [
      '0000000   #       s   e   t   t   i   n   g   s  \\n   i   d   =   7  \\t',
      '         23  20  73  65  74  74  69  6e  67  73  0a  69  64  3d  37  09',
      '0000020   k   e   y   =   s   k   -   l   i   v   e   -   H   q   R   w',
      '         6b  65  79  3d  73  6b  2d  6c  69  76  65  2d  48  71  52  77',
      '0000040   T   z   Y   u   P   x   M   n   B   v   C   k   J   g   F   d',
      '         54  7a  59  75  50  78  4d  6e  42  76  43  6b  4a  67  46  64',
      '0000060   S   a   L   o   K   i   U   j   Y   h   T   g  \\n   m   o   d',
      '         53  61  4c  6f  4b  69  55  6a  59  68  54  67  0a  6d  6f  64',
      '0000100   e   =   f   a   s   t   \\   o   n  \\0 377       e   n   d   e',
      '         65  3d  66  61  73  74  5c  6f  6e  00  ff  20  65  6e  64  65',
      '0000120   d  \\n',
      '         64  0a',
      '0000122',
    ],
  };

  test.each(Object.keys(SAMPLES))('a fixed sample of %s, the key over 3 lines', (command) => {
    expectRedacted(`${SAMPLES[command].join('\n')}\n`, format(command), LONG_KEY, 20);
  });

  test.each(Object.keys(SAMPLES))('a fixed sample of %s with CRLF line ends, in other output', (command) => {
    const sample = SAMPLES[command].map((line) => `${line}\r`);
    const out = dumps.text(`$ ${command} settings\r\n${sample.join('\n')}\n$ echo ok\r\nok\r\n`);
    const expected = sample.map((line, i) => (shows(format(command), i, 20, 20 + LONG_KEY.length) ? redacted(line) : line));
    expect(out.split('\n')).toEqual([`$ ${command} settings\r`, ...expected, '$ echo ok\r', 'ok\r', '']);
  });

  test('two dumps in one text, and a dump in a JSON value', () => {
    const text = `${SAMPLES.xxd.join('\n')}\n\n${SAMPLES['od -c'].join('\n')}\n`;
    const out = dumps.text(text);
    expect(out.split(REDACTED)).toHaveLength(7);
    expectNoPiece(LONG_KEY, out);
    const value = dumps.value({ exitCode: 0, stdout: `${SAMPLES['hexdump -C'].join('\n')}\n`, stderr: '', list: [`${SAMPLES['od -tcx1'].join('\n')}\n`] });
    expect(value.exitCode).toBe(0);
    expect(value.stdout).toBe(dumps.text(`${SAMPLES['hexdump -C'].join('\n')}\n`));
    expect(value.stdout.split(REDACTED)).toHaveLength(4);
    expect(value.list[0].split(REDACTED)).toHaveLength(7);
    expectNoPiece(LONG_KEY, JSON.stringify(value));
  });

  test('od -c as uutils prints characters beyond ASCII (the character, then ** for its other bytes)', () => {
    const secret = 'pässwörd-€-geheim';
    const fields = [...`# ${'x'.repeat(10)}\npw=${secret}\nmore text after it\n`].flatMap((ch) => [ch === '\n' ? '\\n' : ch, ...Array<string>(Buffer.byteLength(ch) - 1).fill('**')]);
    const lines = Array.from({ length: Math.ceil(fields.length / 16) }, (_, i) => `${(i * 16).toString(8).padStart(7, '0')}${fields.slice(i * 16, i * 16 + 16).map((field) => field.padStart(4)).join('')}`);
    expect(lines[1]).toBe('0000020   p   ä  **   s   s   w   ö  **   r   d   -   €  **  **   -   g');
    const out = new Redactor([secret]).text(`${lines.join('\n')}\n`);
    expect(out.split('\n')).toEqual([lines[0], `0000020 ${REDACTED}`, `0000040 ${REDACTED}`, lines[3], '']);
  });

  test.each(['xxd', 'od -c'].filter((command) => has(command.split(' ')[0])))('%s of a file holding the key base64-encoded, and hex-encoded', (command) => {
    for (const encoded of [Buffer.from(`x${LONG_KEY}`).toString('base64'), Buffer.from(LONG_KEY).toString('hex')]) {
      const out = dumps.text(dumpOf(command, Buffer.from(`token: ${encoded}\nok\n`)));
      expect(out).toContain(REDACTED);
      expectNoPiece(encoded.slice(4, -4), out);
    }
  });

  describe('a * line: the line before, again, up to the next offset', () => {
    // "key:", 64 times "A", ":end": the lines of A are one line and a *.
    const secret = `key:${'A'.repeat(64)}:end`;
    const file = Buffer.from(`${'x'.repeat(12)}${secret}${'y'.repeat(20)}`);
    const redactor = new Redactor([secret]);
    const expectStarred = (dump: string) => {
      const lines = dump.split('\n');
      expect(lines[2]).toBe('*');
      expect(redactor.text(dump).split('\n')).toEqual(lines.map((line, i) => ([0, 1, 3].includes(i) ? `${/^[0-9a-f]+:?/.exec(line)![0]} ${REDACTED}` : line)));
    };
    test.each(['od -c', 'hexdump -C'].filter((command) => has(command.split(' ')[0])))('%s', (command) => expectStarred(dumpOf(command, file)));
    test('a fixed sample of od -c', () => {
      expectStarred(
        [
          '0000000   x   x   x   x   x   x   x   x   x   x   x   x   k   e   y   :',
          '0000020   A   A   A   A   A   A   A   A   A   A   A   A   A   A   A   A',
          '*',
          '0000120   :   e   n   d   y   y   y   y   y   y   y   y   y   y   y   y',
          '0000140   y   y   y   y   y   y   y   y',
          '0000150',
          '',
        ].join('\n'),
      );
    });

    test.each(['od -c', 'hexdump -C', 'xxd -a'].filter((command) => has(command.split(' ')[0])))('%s: the key after a run of zero bytes', (command) => {
      const dump = dumpOf(command, Buffer.concat([Buffer.alloc(100), Buffer.from(KEY), FILLER]));
      expect(dump).toContain('\n*\n');
      const out = dumps.text(dump);
      expect(out).toContain('\n*\n');
      expect(out.split(REDACTED)).toHaveLength(3);
      expectNoPiece(KEY, out);
    });
  });

  describe('what is left alone', () => {
    const lookalikes = [
      ['a table of numbers', '0000001  12 34 56 78 90 12 34 56\n0000002  23 45 67 89 01 23 45 67\n0000003  34 56 78 90 12 34 56 78\n'],
      ['a log with timestamps', '20261123 15:40:02.311 INFO worker started\n20261123 15:40:02.402 INFO 12 ab cd ef\n20261123 15:40:03.000 WARN   a   b   c   d\n'],
      ['git log --oneline', 'c7ce64c Recorded histories of an agent\nb5b5896 Every tool process in a sandbox\nd15d208 add feed cafe bead\n'],
      ['indented text and a stack trace', '    at Object.<anonymous> (/app/x.js:1:2)\n    at Module._compile (node:internal)\n   a   b   c   d   e\n   f   g   h   i   j\n'],
    ];
    test.each(lookalikes)('%s', (_name, text) => {
      expect(dumps.text(text)).toBe(text);
    });

    test.each(['xxd', 'hexdump -C', 'od -c', 'od -tcx1'].filter((command) => has(command.split(' ')[0])))('%s of a file without a secret, or with a part of one', (command) => {
      for (const input of [randomBytes(4096), fileWith(KEY.slice(0, 7), 30), fileWith(`${LONG_KEY.slice(0, 20)}.${LONG_KEY.slice(20)}`, 30)]) {
        const dump = dumpOf(command, input);
        expect(dumps.text(dump)).toBe(dump);
      }
    });

    test('the cheap test: no dump, no work', () => {
      expect(mayHoldDump('INFO 2026-11-23T15:40:02.311Z worker-7 GET /v1/items 200 41ms\n'.repeat(1000))).toBe(false);
      expect(mayHoldDump(`${'{"a":1}\n'.repeat(100)}total 48\ndrwxr-xr-x  5 ann staff  160 Nov 23 15:40 src\n`)).toBe(false);
      for (const sample of Object.values(SAMPLES)) expect(mayHoldDump(`$ dump\n${sample.join('\n')}\n`)).toBe(true);
    });
  });
});
