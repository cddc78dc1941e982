// The JavaScript layer stays thin (issue 37): the API is documented once, in index.d.ts;
// its modules import no circle; the index (core.js) only re-exports; the engine checks arguments.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync, readdirSync} from 'node:fs';

const js = new URL('../../js/', import.meta.url);
const modules = readdirSync(js).filter(name => name.endsWith('.js'));
const source = name => readFileSync(new URL(name, js), 'utf8');

test('the API is documented once, in index.d.ts: the modules hold no JSDoc', () => {
  for (const name of modules) {
    const at = source(name).indexOf('/**');
    assert.equal(at, -1, `${name} documents with JSDoc at ${at}; index.d.ts is where the API is documented`);
  }
});

test('the modules import no circle, and the index only re-exports', () => {
  const imports = new Map(modules.map(name => [name, [...source(name).matchAll(/^(?:import|export)\b[^;]*?from '\.\/([\w-]+\.js)'/gm)].map(m => m[1])]));
  const state = new Map();
  const visit = (name, path) => {
    if (state.get(name) === 'done') return;
    assert.notEqual(state.get(name), 'open', `an import circle: ${[...path, name].join(' -> ')}`);
    state.set(name, 'open');
    for (const next of imports.get(name) ?? []) visit(next, [...path, name]);
    state.set(name, 'done');
  };
  for (const name of modules) visit(name, []);
  const index = source('core.js').split('\n').filter(line => line.trim() && !line.startsWith('//'));
  for (const line of index) assert.match(line, /^export .* from '\.\/[\w-]+\.js';$/, `core.js: ${line}`);
});

test('number arguments are checked by the engine, the same before and after init', async () => {
  const gt = await import('../../dist/node/index.js');
  const refused = async (call, pattern) => {
    await assert.rejects(async () => call(), e => e.name === 'GpuTableError' && e.code === 'INVALID_ARGUMENT' && pattern.test(e.message));
  };
  await refused(() => gt.createDevice({allowedMem: '3'}), /allowedMem must be a number/);
  await gt.init();
  await refused(() => gt.createDevice({allowedMem: 0}), /at least 1, got 0/);
  const device = await gt.createDevice({allowedMem: null});
  assert.equal(device.allowedMem, undefined);
  const arrow = await import('apache-arrow');
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({a: new Float32Array([1, 2, 3])})));
  await refused(() => table.packBatches({minBatchSize: '2'}), /minBatchSize must be a number/);
  await refused(() => table.packBatches({minBatchSize: Number.NaN}), /minBatchSize/);
  await refused(() => table.detachBatches('0'), /detachBatches first must be a number/);
  assert.equal(table.detachBatches(0).length, 1, 'the last batch defaults to the end');
});
