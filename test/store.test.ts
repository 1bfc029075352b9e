import { copyFileSync, mkdirSync, readFileSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isStored, type StoredList, type StoredRef } from '../src/plan-format/refs';
import { resolveTemplates } from '../src/plan-format/templates';
import { BlobError, BlobStore, readStored } from '../src/store/blobs';
import { externalize, jsonBytes, materialize } from '../src/store/values';
import { listItems } from '../src/plan-format/stored-items';
import { tempWorkspace } from './support/harness';

const LIMIT = 64 * 1024;
const bigText = (n: number, seed = 'x') => seed.repeat(n);

describe('the blob store', () => {
  test('stores a value once under its hash, and reads it back verified', async () => {
    const ws = tempWorkspace();
    const store = await BlobStore.open(ws);
    expect(store.dir).toBe(path.join(realpathSync(ws), '.cadre', 'blobs'));
    const value = { list: [1, 2, 3], text: 'héllo' };
    const ref = await store.put(value);
    const again = await store.put(value);
    expect(again).toEqual(ref);
    expect(ref).toMatchObject({ $cadre: 'stored', kind: 'object', bytes: Buffer.byteLength(JSON.stringify(value)) });
    expect(readdirSync(store.dir)).toEqual([`${ref.sha256}.json`]);
    const listRef = await store.put(['a', 'b']);
    expect(listRef).toMatchObject({ kind: 'array', length: 2 });
    expect(await readStored(ref, [store.dir])).toEqual(value);
  });

  test('a changed blob, an unknown store and a bad hash are refused', async () => {
    const ws = tempWorkspace();
    const store = await BlobStore.open(ws);
    const ref = await store.put({ unique: `${Date.now()}-${Math.random()}` });
    const file = path.join(store.dir, `${ref.sha256}.json`);
    // Bypass the cache with a ref of the same content under another spelling of the store.
    writeFileSync(file, readFileSync(file, 'utf8').replace('unique', 'UNIQUE'));
    const fresh: StoredRef = { ...ref, store: `${store.dir}/` };
    await expect(readStored(fresh, [fresh.store])).rejects.toThrow(/does not match its hash: it was changed/);
    // Another hash (one in sixteen starts with 0 already): a value held by the run's own store would be read from it.
    const other = `${ref.sha256.startsWith('0') ? '1' : '0'}${ref.sha256.slice(1)}`;
    await expect(readStored({ ...ref, store: '/etc', sha256: other }, [store.dir])).rejects.toThrow(
      /names the store \/etc, which is not this run's/,
    );
    await expect(readStored({ ...ref, sha256: '../../etc/passwd' }, [store.dir])).rejects.toThrow(BlobError);
  });

  test("a value named by another host's store is read from the run's own store when it is there, by its hash", async () => {
    const [before, after] = [await BlobStore.open(tempWorkspace()), await BlobStore.open(tempWorkspace())];
    const value = { moved: `${Date.now()}-${Math.random()}` };
    const ref = await before.put(value);
    // A run that moved: its branch brought the blob to the new clone's store.
    copyFileSync(path.join(before.dir, `${ref.sha256}.json`), path.join(after.dir, `${ref.sha256}.json`));
    // (Each read names the old store spelled another way: a ref read or written before is cached.)
    expect(await readStored({ ...ref, store: `${before.dir}/` }, [after.dir])).toEqual(value);
    // Changed on the way, it is refused; absent, the store it names is still not the run's.
    const other = await before.put({ moved: `${value.moved}!` });
    writeFileSync(path.join(after.dir, `${other.sha256}.json`), JSON.stringify({ moved: 'forged' }));
    await expect(readStored({ ...other, store: `${before.dir}/` }, [after.dir])).rejects.toThrow(/does not match its hash/);
    const absent = await before.put({ moved: `${value.moved}?` });
    await expect(readStored({ ...absent, store: `${before.dir}/` }, [after.dir])).rejects.toThrow(/names the store .*, which is not this run's/);
    // Cached for the store that wrote it, it is still not another run's to read.
    await expect(readStored(absent, [after.dir])).rejects.toThrow(/names the store .*, which is not this run's/);
    expect(await readStored(absent, [before.dir])).toEqual({ moved: `${value.moved}?` });
  });

  test('a workspace whose .cadre leads outside it gets no store', async () => {
    const ws = tempWorkspace();
    const outside = path.join(os.tmpdir(), `cadre-outside-${process.pid}-${Date.now()}`);
    mkdirSync(outside);
    symlinkSync(outside, path.join(ws, '.cadre'));
    await expect(BlobStore.open(ws)).rejects.toThrow(/leads outside the workspace/);
    expect(readdirSync(outside)).toEqual([]);
  });
});

describe('externalize and materialize', () => {
  test('a big output keeps its small fields inline and stores the big ones', async () => {
    const store = await BlobStore.open(tempWorkspace());
    const items = Array.from({ length: 2000 }, (_, i) => ({ name: `item-${i}`, pad: bigText(50) }));
    const output = { exitCode: 0, stdout: bigText(300 * 1024), stderr: 'warn', json: { count: items.length, items } };
    const kept = (await externalize(output, store, LIMIT)) as Record<string, unknown> & { json: Record<string, unknown> };
    expect(jsonBytes(kept)).toBeLessThanOrEqual(LIMIT);
    expect(kept.exitCode).toBe(0);
    expect(kept.stderr).toBe('warn');
    expect(kept.json.count).toBe(2000);
    expect(isStored(kept.stdout)).toBe(true);
    expect(kept.json.items).toMatchObject({ $cadre: 'stored', kind: 'array', length: 2000 });
    expect(await materialize(kept, { stores: [store.dir] })).toEqual(output);
    // Small outputs are left alone.
    expect(await externalize({ exitCode: 0, stdout: 'ok' }, store, LIMIT)).toEqual({ exitCode: 0, stdout: 'ok' });
  });

  test('thousands of small fields are stored whole rather than overflow the limit', async () => {
    const store = await BlobStore.open(tempWorkspace());
    const wide = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]));
    const kept = await externalize(wide, store, LIMIT);
    expect(kept).toMatchObject({ $cadre: 'stored', kind: 'object' });
    expect(await materialize(kept, { stores: [store.dir] })).toEqual(wide);
  });

  test('templates that read into stored values are deferred in the workflow and read by the activity', async () => {
    const store = await BlobStore.open(tempWorkspace());
    const items = Array.from({ length: 3000 }, (_, i) => ({ name: `item-${i}` }));
    const json = await store.put({ count: 3000, items });
    const scope = { steps: { big: { output: { exitCode: 0, json }, status: 'completed' } }, inputs: {} };
    const deferred = resolveTemplates({ one: '{{ steps.big.output.json.items[2999].name }}', text: 'n={{ steps.big.output.json.count }}!', all: '{{ steps.big.output.json.items[*].name }}' }, scope);
    expect(deferred).toMatchObject({ one: { $cadre: 'read', at: 'steps.big.output.json' }, text: { $cadre: 'text' } });
    expect(await materialize(deferred, { stores: [store.dir] })).toEqual({ one: 'item-2999', text: 'n=3000!', all: items.map((i) => i.name) });
    const missing = resolveTemplates('{{ steps.big.output.json.items[3000].name }}', scope);
    await expect(materialize(missing, { stores: [store.dir] })).rejects.toThrow(
      '{{ steps.big.output.json.items[3000].name }} reads nothing: steps.big.output.json.items has no [3000] (it has 3000 items)',
    );
    const fallback = resolveTemplates("{{ steps.big.output.json.nope | default('none') }}", scope);
    expect(await materialize(fallback, { stores: [store.dir] })).toBe('none');
  });

  test('forEach items of a stored list, in parts, are read one by one', async () => {
    const store = await BlobStore.open(tempWorkspace());
    const parts = [await store.put([{ n: 0 }, { n: 1 }]), await store.put([{ n: 2 }])];
    const list: StoredList = { $cadre: 'list', parts, length: 3 };
    const items = listItems(list, '{{ steps.each.output }}');
    expect(items?.length).toBe(3);
    const scope = { steps: {}, inputs: {}, item: items?.at(2), index: 2 };
    const param = resolveTemplates('n={{ item.n }}', scope);
    expect(await materialize(param, { stores: [store.dir] })).toBe('n=2');
    expect(await materialize(resolveTemplates('{{ item.m }}', scope), { stores: [store.dir] }).catch((e: Error) => e.message)).toBe(
      '{{ item.m }} reads nothing: steps.each.output[2] has no .m; add | default(...) where a missing value is fine',
    );
    expect(await materialize(list, { stores: [store.dir] })).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
    // A forEach template with a default reads its items by the bare path.
    const withDefault = listItems(list, '{{ steps.each.output | default([]) }}');
    expect(await materialize(resolveTemplates('{{ item.n }}', { item: withDefault?.at(1) }), { stores: [store.dir] })).toBe(1);
  });
});
