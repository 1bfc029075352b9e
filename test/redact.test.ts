/**
 * The redactor: each secret, whatever its shape, is found as it is and in every encoding a tool
 * prints (base64 and base64url at each alignment, hex, percent-encoding, JSON escaping, shell
 * quoting, wrapped and spaced dumps), inside other text and inside JSON values; nothing else is
 * touched; short values are ignored; 8 MiB of output goes through.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { MIN_SECRET_LENGTH, REDACTED, Redactor } from '../src/secrets';

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
