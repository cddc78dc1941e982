// The browser entry point loaded in Node, where nothing loads the wasm module until init()
// is given it: a call before init() and a failed init() are GpuTableErrors that say what to
// do, and init() with the module's bytes then works (issue 12: "Forgetting `await init()`
// gave INTERNAL Cannot read properties of undefined").

import {test} from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';

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
  const before = thrown(() => gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2])));
  assert.equal(before?.name, 'GpuTableError');
  assert.equal(before.code, 'BACKEND_UNAVAILABLE');
  assert.match(before.message, /await init\(\)/);
  // Node's fetch reads no file: URLs, as a page's fetch of a file the bundler left behind
  // fails.
  const failed = await gt.init(new URL('file:///nowhere/gputable_bg.wasm')).then(() => null, e => e);
  assert.equal(failed?.name, 'GpuTableError');
  assert.equal(failed.code, 'BACKEND_UNAVAILABLE');
  assert.match(failed.message, /gputable\/wasm/);
  // A failed load is not cached: the next init() loads the module's bytes.
  await gt.init(readFileSync(new URL('../../dist/wasm/gputable_bg.wasm', import.meta.url)));
  const sum = gt.add(gt.GPUTableEvaluator.fromArray(new Float32Array([1, 2])), 1);
  assert.deepEqual([...await sum.readValue()], [2, 3]);
  const exports = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url))).exports;
  assert.equal(exports['./wasm'], './dist/wasm/gputable_bg.wasm');
});
