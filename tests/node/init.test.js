// The browser entry point loaded in Node, where nothing loads the wasm module until init()
// is given it: a call before init() and a failed init() are GpuTableErrors that say what to
// do, and init() with the module's bytes then works (issue 12: "Forgetting `await init()`
// gave INTERNAL Cannot read properties of undefined"). The Node entry away from its module,
// as in a bundle, likewise (it threw ENOENT on import).

import {test} from 'node:test';
import assert from 'node:assert/strict';
import {cpSync, mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {pathToFileURL} from 'node:url';

const gt = await import('../../dist/web/index.js');

const thrown = fn => {
  try {
    fn();
    return null;
  } catch (error) {
    return error;
  }
};

test('a call before init() and a failed init() say what to do; init(bytes) then works', async () => {
  const early = [
    thrown(() => gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2]))),
    thrown(() => gt.liveAllocations()),
    await gt.createDevice().then(() => null, e => e),
    await gt.createDevice({type: 'best'}).then(() => null, e => e)
  ];
  for (const [i, error] of early.entries()) {
    assert.equal(error?.name, 'GpuTableError', `call ${i}: ${error}`);
    assert.equal(error.code, 'BACKEND_UNAVAILABLE', `call ${i}`);
    assert.match(error.message, /await init\(\)/, `call ${i}`);
  }
  // Node's fetch reads no file: URLs, as a page's fetch of a file the bundler left behind
  // fails.
  const failed = await gt.init(new URL('file:///nowhere/gputable_bg.wasm')).then(() => null, e => e);
  assert.equal(failed?.name, 'GpuTableError');
  assert.equal(failed.code, 'BACKEND_UNAVAILABLE');
  assert.match(failed.message, /gputable\/wasm/);
  // A failed load is not cached: the next init() loads the module's bytes, found through
  // the package's own 'gputable/wasm' export.
  const wasmUrl = new URL(import.meta.resolve('gputable/wasm'));
  assert.match(wasmUrl.pathname, /\/dist\/wasm\/gputable_bg\.wasm$/);
  await gt.init(readFileSync(wasmUrl));
  const sum = gt.add(gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2])), 1);
  assert.deepEqual([...await sum.readValue()], [2, 3]);
  // Once loaded, errors keep their own codes.
  const invalid = thrown(() => gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2, 3]), {size: 2}));
  assert.equal(invalid?.code, 'INVALID_ARGUMENT');
  assert.equal((await gt.createDevice()).type, 'cpu');
});

test('the Node entry away from its wasm module (a bundle) says to call init(input), which loads it', async () => {
  // dist/ copied without the module, as a bundler leaves the code.
  const copy = mkdtempSync(join(tmpdir(), 'gputable-node-'));
  cpSync(new URL('../../dist', import.meta.url), copy, {recursive: true, filter: source => !source.endsWith('.wasm')});
  try {
    await checkMovedEntry(copy);
  } finally {
    rmSync(copy, {recursive: true});
  }
});

async function checkMovedEntry(copy) {
  const moved = await import(pathToFileURL(join(copy, 'node/index.js')));
  const early = thrown(() => moved.GPUTableEvaluator.fromArray(new Float32Array([1, 2])));
  assert.equal(early?.code, 'BACKEND_UNAVAILABLE');
  assert.match(early.message, /await init\(\)/);
  const bare = await moved.init().then(() => null, e => e);
  assert.equal(bare?.code, 'BACKEND_UNAVAILABLE');
  assert.match(bare.message, /gputable\/wasm/);
  await moved.init(new URL(import.meta.resolve('gputable/wasm')));
  const sum = moved.add(moved.GPUTableEvaluator.fromArray(new Float32Array([1, 2])), 1);
  assert.deepEqual([...await sum.readValue()], [2, 3]);
}
