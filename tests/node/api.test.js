// The built package through its public JavaScript API (CPU device).
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as gt from 'gputable';

const {GPUTableEvaluator: E} = gt;
const f32 = (values, size = 1) => E.fromArray(new Float32Array(values), {size});

async function rejectsWith(promiseOrFn, code) {
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (error) {
    assert.equal(error.name, 'GpuTableError', `expected a GpuTableError, got ${error}`);
    assert.ok(error instanceof gt.GpuTableError);
    assert.equal(error.code, code, error.message);
    return error;
  }
  assert.fail(`expected ${code}`);
}

test('the api.md example: add(xyz, [10, 20, 30], 1)', async () => {
  const device = await gt.createDevice();
  const xyz = E.fromArray(new Float32Array([1, 2, 3, 4, 5, 6]), {size: 3});
  const r = gt.add(xyz, [10, 20, 30], 1);
  assert.equal(r.evaluated, false);
  assert.deepEqual([r.type, r.size, r.length, r.isConstant], ['float32', 3, 2, false]);
  const vector = await r.evaluate(device);
  assert.equal(r.evaluated, true);
  assert.equal(await r.evaluate(device), vector, 'a second evaluate does no work');
  assert.deepEqual([vector.type, vector.size, vector.length], ['float32', 3, 2]);
  assert.deepEqual(await r.readValue(), new Float32Array([12, 23, 34, 15, 26, 37]));
  assert.deepEqual(await vector.readValue(1), new Float32Array([15, 26, 37]));
});

test('fromArray and fromConstant accept every type', async () => {
  for (const [type, Array_] of [
    ['uint8', Uint8Array], ['sint8', Int8Array], ['uint16', Uint16Array], ['sint16', Int16Array],
    ['uint32', Uint32Array], ['sint32', Int32Array], ['float32', Float32Array]
  ]) {
    const e = E.fromArray(new Array_([1, 2, 3, 4]), {size: 2});
    assert.deepEqual([e.type, e.size, e.length], [type, 2, 2]);
    assert.deepEqual(await e.readValue(), new Array_([1, 2, 3, 4]));
    const c = E.fromConstant(7, type);
    assert.deepEqual([c.type, c.size, c.length, c.isConstant], [type, 1, 1, true]);
  }
  const plain = E.fromArray([1.5, 2.5]);
  assert.equal(plain.type, 'float32');
  const typed = E.fromArray([300, -1], {type: 'uint8'});
  assert.deepEqual(await typed.readValue(), new Uint8Array([44, 255]));
  const converted = E.fromArray(new Float32Array([1.7, -2]), {type: 'sint32'});
  assert.deepEqual(await converted.readValue(), new Int32Array([1, -2]));
  const f64 = E.fromArray(new Float64Array([Math.PI]), {size: 1});
  assert.deepEqual([f64.type, f64.size, f64.length], ['uint32', 2, 1]);
  const row = E.fromConstant([1, 2, 3]);
  assert.deepEqual([row.size, row.isConstant], [3, true]);
});

test('deduction rules through JS', () => {
  const u8 = E.fromArray(new Uint8Array([1])), i8 = E.fromArray(new Int8Array([1]));
  const u32 = E.fromArray(new Uint32Array([1])), i32 = E.fromArray(new Int32Array([1]));
  assert.equal(gt.add(u8, u8).type, 'uint8');
  assert.equal(gt.add(i8, u8).type, 'sint16');
  assert.equal(gt.add(i32, u32).type, 'float32');
  assert.equal(gt.add(u32, 1).type, 'float32', 'number literals are float32');
  assert.equal(gt.add(u32, E.fromConstant(1, 'uint32')).type, 'uint32');
  assert.equal(gt.abs(i8).type, 'sint8');
  for (const op of [gt.sqrt, gt.sin, gt.cos, gt.tan, gt.exp, gt.log]) assert.equal(op(i32).type, 'float32');
  assert.equal(gt.pow(u8, 2).type, 'float32');
  const wide = gt.add(f32([1, 2, 3, 4, 5, 6], 3), f32([1, 2], 1));
  assert.deepEqual([wide.size, wide.length], [3, 2]);
});

test('integer wrap and division rules', async () => {
  const i = v => E.fromArray(new Int32Array(v));
  assert.deepEqual(await gt.add(i([2147483647]), i([1])).readValue(), new Int32Array([-2147483648]));
  assert.deepEqual(await gt.divide(i([-7, 7, 5]), i([2, 0, -5])).readValue(), new Int32Array([-3, 0, -1]));
  const u8 = v => E.fromArray(new Uint8Array(v));
  assert.deepEqual(await gt.add(u8([200]), u8([100])).readValue(), new Uint8Array([44]));
  assert.deepEqual(await gt.divide(u8([9]), u8([0])).readValue(), new Uint8Array([0]));
});

test('arithmetic folds, math and literals', async () => {
  const x = f32([4, 9]);
  assert.deepEqual(await gt.subtract(100, x, 1).readValue(), new Float32Array([95, 90]));
  assert.deepEqual(await gt.multiply(x, 2, [0.5]).readValue(), new Float32Array([4, 9]));
  assert.deepEqual(await gt.divide(x, 0).readValue(), new Float32Array([Infinity, Infinity]));
  assert.deepEqual(await gt.sqrt(x).readValue(), new Float32Array([2, 3]));
  assert.deepEqual(await gt.pow(x, 0.5).readValue(), new Float32Array([2, 3]));
  assert.deepEqual(await gt.abs(f32([-1, 2])).readValue(), new Float32Array([1, 2]));
  const angles = f32([0, 1, 2]);
  for (const [op, ref] of [[gt.sin, Math.sin], [gt.cos, Math.cos], [gt.tan, Math.tan], [gt.exp, Math.exp], [gt.log, Math.log]]) {
    const v = await op(angles).readValue();
    [0, 1, 2].forEach((a, k) => {
      const expected = ref(a);
      if (Number.isFinite(expected)) assert.ok(Math.abs(v[k] - expected) <= 1e-5 * Math.max(1, Math.abs(expected)), `${op.name}(${a})`);
      else assert.equal(v[k], expected);
    });
  }
  const c = gt.add(1, 2);
  assert.deepEqual([c.isConstant, c.length], [true, 1]);
  assert.deepEqual(await c.readValue(), new Float32Array([3]));
  assert.equal(gt.add(x), x);
});

test('interleave, swizzle, select, dot, length, equalAll', async () => {
  const xyz = f32([0, 0, 0, 1, 0, 0], 3);
  const id = f32([5, 6]);
  assert.deepEqual(await gt.interleave(xyz, id).readValue(), new Float32Array([0, 0, 0, 5, 1, 0, 0, 6]));
  assert.deepEqual(await gt.swizzle(f32([1, 2, 3], 3), [2, 2, 0]).readValue(), new Float32Array([3, 3, 1]));
  const cond = E.fromArray(new Uint8Array([1, 0]));
  assert.deepEqual(await gt.select(cond, f32([1, 2]), f32([8, 9])).readValue(), new Float32Array([1, 9]));
  const a = f32([1, 2, 3, 4, 5, 6], 3), b = f32([1, 1, 1, 0, 0, 2], 3);
  assert.deepEqual(await gt.dot(a, b).readValue(), new Float32Array([6, 12]));
  assert.deepEqual(await gt.length(f32([3, 4], 2)).readValue(), new Float32Array([5]));
  const eq = gt.equalAll(a, f32([1, 2, 3, 4, 5, 0], 3));
  assert.equal(eq.type, 'uint32');
  assert.deepEqual(await eq.readValue(), new Uint32Array([1, 0]));
});

test('gather, extent, sequence, segmentedMap, fround', async () => {
  const ids = E.fromArray([2, 0, 1, 7, -1], {type: 'sint32', size: 1});
  const values = E.fromArray([10, 11, 20, 21, 30, 31], {size: 2});
  assert.deepEqual(await gt.gather(ids, values).readValue(), new Float32Array([30, 31, 10, 11, 20, 21, 0, 0, 0, 0]));
  const points = E.fromArray([4, 9, -1, 8, 7, 3, 2, 12], {size: 2});
  const ext = gt.extent(points);
  assert.deepEqual([ext.type, ext.size, ext.length], ['float32', 2, 2]);
  assert.deepEqual(await ext.readValue(), new Float32Array([-1, 7, 3, 12]));
  assert.deepEqual(await gt.extent(f32([NaN, 3, 1])).readValue(), new Float32Array([1, 3]));
  assert.deepEqual(await gt.sequence(5).readValue(), new Int32Array([0, 1, 2, 3, 4]));
  assert.deepEqual(await gt.sequence(4, 10, 2).readValue(), new Int32Array([10, 12, 14, 16]));
  const segments = E.fromArray([0, 3, 3, 6], {type: 'uint32', size: 1});
  const map = gt.segmentedMap(segments, 7);
  assert.deepEqual([map.type, map.size, map.length], ['uint32', 2, 7]);
  assert.deepEqual(await map.readValue(), new Uint32Array([0, 0, 0, 1, 0, 2, 2, 0, 2, 1, 2, 2, 3, 0]));
  const source = E.fromArray(new Float64Array([Math.PI, 2 ** 24 + 1]), {size: 1});
  const parts = await gt.fround(source).readValue();
  assert.equal(parts[0], Math.fround(Math.PI));
  assert.equal(parts[1], Math.fround(Math.PI - Math.fround(Math.PI)));
  assert.deepEqual([parts[2], parts[3]], [2 ** 24, 1]);
  const special = await gt.fround(E.fromArray(new Float64Array([-0, Number.MAX_SAFE_INTEGER, 3.5e38]))).readValue();
  assert.ok(Object.is(special[0], -0));
  assert.deepEqual([special[2], special[3]], [2 ** 53, -1]);
  assert.deepEqual([special[4], special[5]], [Infinity, -Infinity]);
});

test('error codes', async () => {
  const x = f32([1, 2, 3], 3);
  await rejectsWith(() => gt.sequence(1.5), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.sequence(-1), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.sequence(3, 0, 0), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.sequence(2, 0, 2 ** 32), 'INVALID_ARGUMENT'); // wraps to a step of 0
  await rejectsWith(() => gt.sequence('3'), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.swizzle(x, [3]), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.segmentedMap(E.fromArray([1, 2], {type: 'uint32'}), 4), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.segmentedMap(E.fromArray([0, 5], {type: 'uint32'}), 4), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.segmentedMap(E.fromArray([0, 3, 2], {type: 'uint32'}), 4), 'INVALID_ARGUMENT');
  await rejectsWith(gt.extent(E.fromArray(new Float32Array(0))).evaluate(), 'EMPTY_INPUT');
  await rejectsWith(() => gt.fround(f32([1, 2], 2)), 'TYPE_MISMATCH');
  // Rows of other sizes follow the lane rule (lanes past a row read 0), as in arithmetic.
  assert.deepEqual(await gt.dot(x, f32([1, 2], 2)).readValue(), new Float32Array([5]));
  await rejectsWith(() => gt.add(), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.interleave(), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.add(x, 'a'), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.add(x, {}), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.add(x, null), 'INVALID_ARGUMENT');
  await rejectsWith(() => E.fromArray(new Float32Array(3), {size: 2}), 'INVALID_ARGUMENT');
  await rejectsWith(() => E.fromArray(new Float32Array(3), {size: 0}), 'INVALID_ARGUMENT');
  await rejectsWith(() => E.fromArray(new Float32Array(3), {type: 'float64'}), 'INVALID_ARGUMENT');
  await rejectsWith(() => E.fromArray('abc'), 'INVALID_ARGUMENT');
  await rejectsWith(() => E.fromArray(new BigInt64Array(2)), 'TYPE_MISMATCH');
  await rejectsWith(() => E.fromConstant([]), 'INVALID_ARGUMENT');
  await rejectsWith(gt.createDevice({type: 'webgpu'}), 'BACKEND_UNAVAILABLE');
  await rejectsWith(gt.createDevice({type: 'nope'}), 'BACKEND_UNAVAILABLE');
  // 2^32 - 1 rows fit the row limit but not the 2 GiB a wasm32 allocation can have.
  await rejectsWith(() => gt.sequence(2 ** 32 - 1), 'LIMIT_EXCEEDED');
  await rejectsWith(() => gt.sequence(2 ** 32), 'LIMIT_EXCEEDED');
});

test('destroy gives DESTROYED, never a crash', async () => {
  const x = f32([1, 4]);
  const s = gt.sqrt(x);
  await s.evaluate();
  s.destroy();
  await rejectsWith(s.readValue(), 'DESTROYED');
  await rejectsWith(s.evaluate(), 'DESTROYED');
  await rejectsWith(() => gt.add(s, 1), 'DESTROYED');
  x.destroy();
  await rejectsWith(gt.exp(f32([1])).evaluate().then(() => gt.sin(x).evaluate()), 'DESTROYED');
  const device = await gt.createDevice();
  device.destroy();
  await rejectsWith(gt.add(f32([1]), 1).evaluate(device), 'DESTROYED');
  assert.deepEqual(await gt.add(f32([1]), 1).readValue(), new Float32Array([2]), 'the module still works');
});

test('devices and backends', async () => {
  const cpu = await gt.createDevice();
  assert.equal(cpu.type, 'cpu');
  assert.ok(cpu.limits.maxRows > 0);
  assert.equal((await gt.createDevice({type: 'best'})).type, 'cpu');
  gt.backendRegistry.add(gt.webgpuBackend);
  gt.backendRegistry.add(gt.webglBackend);
  await rejectsWith(gt.createDevice({type: 'webgpu'}), 'BACKEND_UNAVAILABLE');
  await rejectsWith(gt.createDevice({type: 'webgl'}), 'BACKEND_UNAVAILABLE');
  assert.equal((await gt.createDevice({type: 'best'})).type, 'cpu', 'best says which device it picked');
  await gt.init();
});

test('explain shows fused passes; cleanEvaluate releases intermediates', async () => {
  const x = f32([1, 2, 3]), y = f32([4, 5, 6]);
  const r = gt.sqrt(gt.add(gt.multiply(x, x), gt.multiply(y, y)));
  assert.match(r.explain(), /^plan on cpu: 1 pass\n/);
  assert.match(r.explain(), /fused elementwise, 4 ops/);
  const inner = gt.sqrt(x);
  const g = gt.gather(E.fromArray([2, 0], {type: 'uint32'}), inner);
  const e = gt.extent(g);
  const roots = {g, list: [e]};
  assert.equal(await gt.cleanEvaluate(undefined, roots), roots);
  await rejectsWith(() => gt.cleanEvaluate(undefined, 5), 'INVALID_ARGUMENT');
  assert.ok(g.evaluated && e.evaluated);
  assert.equal(inner.evaluated, false);
  assert.deepEqual(await e.readValue(), new Float32Array([1, Math.fround(Math.sqrt(3))]));
});

// api.md: `evaluated` is true exactly while the evaluator holds a materialized output, and
// `device` is then its device. Issue 37: a fromArray source was evaluated with device null,
// and stayed evaluated after cleanEvaluate released it.
test('evaluated and device: a source is evaluated once evaluated, and not after cleanEvaluate releases it', async () => {
  const cpu = await gt.createDevice();
  const x = E.fromArray(new Float32Array([1, 4, 9]));
  assert.deepEqual([x.evaluated, x.device], [false, null], 'user data is not a materialized output');
  const r = gt.add(x, 1);
  assert.deepEqual([r.evaluated, r.device], [false, null]);
  await r.evaluate(cpu);
  assert.deepEqual([r.evaluated, r.device], [true, cpu]);
  assert.deepEqual([x.evaluated, x.device], [false, null], 'a CPU graph reads its input in place');
  await x.evaluate(cpu);
  assert.deepEqual([x.evaluated, x.device], [true, cpu]);
  const inner = gt.sqrt(x);
  const outer = gt.add(inner, 1);
  await inner.evaluate(cpu);
  assert.deepEqual([inner.evaluated, inner.device], [true, cpu]);
  await gt.cleanEvaluate(cpu, outer);
  assert.deepEqual([outer.evaluated, outer.device], [true, cpu]);
  assert.deepEqual([inner.evaluated, inner.device], [false, null], 'released by cleanEvaluate');
  assert.deepEqual([x.evaluated, x.device], [false, null], 'its input keeps its data, not its evaluation');
  assert.deepEqual(await outer.readValue(), new Float32Array([2, 3, 4]));
  assert.deepEqual(await x.readValue(), new Float32Array([1, 4, 9]));
  // readValue() of an evaluator never evaluated evaluates it on the CPU device first.
  const late = gt.multiply(x, 2);
  assert.deepEqual(await late.readValue(), new Float32Array([2, 8, 18]));
  assert.equal(late.evaluated, true);
  assert.equal(late.device?.type, 'cpu');
  late.destroy();
  assert.deepEqual([late.evaluated, late.device], [false, null]);
  const fresh = E.fromArray(new Float32Array([5, 6]));
  assert.deepEqual(fresh.readValueSync(1), new Float32Array([6]));
  assert.deepEqual([fresh.evaluated, fresh.device?.type], [true, 'cpu'], 'a source read is evaluated on the CPU too');
});

test('fromVector borrows an evaluated output', async () => {
  const v = await gt.add(f32([1, 2]), 1).evaluate();
  const again = gt.multiply(E.fromVector(v), 10);
  assert.deepEqual(await again.readValue(), new Float32Array([20, 30]));
  assert.deepEqual(await gt.add(v, 1).readValue(), new Float32Array([3, 4]), 'vectors are accepted as inputs');
  // Destroying the view ends only the view: the output and its evaluator stay (they were
  // destroyed with it, the view being the evaluator itself).
  const produced = gt.add(f32([1, 2]), 1);
  const output = await produced.evaluate();
  const view = E.fromVector(output);
  assert.notEqual(view, produced);
  assert.deepEqual([view.evaluated, view.device?.type], [true, 'cpu']);
  view.destroy();
  await rejectsWith(view.readValue(), 'DESTROYED');
  assert.equal(output.destroyed, false);
  assert.deepEqual(await output.readValue(), new Float32Array([2, 3]));
  assert.deepEqual([produced.evaluated, await produced.readValue()], [true, new Float32Array([2, 3])]);
  E.fromVector(output).destroy();
  assert.deepEqual(await E.fromVector(output).readValue(), new Float32Array([2, 3]));
  produced.destroy();
  assert.equal(output.destroyed, true);
  await rejectsWith(() => E.fromVector(output), 'DESTROYED');
});

test('readValue row ranges', async () => {
  const x = f32([1, 2, 3, 4, 5, 6], 2);
  assert.deepEqual(await x.readValue(1, 2), new Float32Array([3, 4]));
  assert.deepEqual(await x.readValue(-4, 99), new Float32Array([1, 2, 3, 4, 5, 6]));
  assert.deepEqual(await x.readValue(2, 1), new Float32Array([]));
  await rejectsWith(x.readValue('a'), 'INVALID_ARGUMENT');
});

test('malformed input never breaks the instance', async () => {
  const bad = [undefined, null, NaN, Infinity, -1, 2 ** 40, 'x', {}, [], [NaN], new Float32Array(0)];
  for (const a of bad) {
    for (const op of [gt.sequence, gt.sqrt, gt.extent, gt.fround, v => gt.swizzle(f32([1]), [a]), v => gt.segmentedMap(f32([0]), v), v => gt.gather(v, f32([1]))]) {
      try {
        const r = op(a);
        if (r) await r.evaluate();
      } catch (error) {
        assert.equal(error.name, 'GpuTableError', `${op} ${a}: ${error}`);
        assert.notEqual(error.code, 'INTERNAL', `${op} ${a}: ${error.message}`);
      }
    }
  }
  assert.deepEqual(await gt.add(f32([1]), 1).readValue(), new Float32Array([2]));
});

test('zero rows of a huge row size allocate nothing', async () => {
  const wide = E.fromArray(new Float32Array(0), {size: 2 ** 32 - 1});
  const r = gt.multiply(gt.add(wide, 1), 2);
  assert.deepEqual([r.size, r.length], [2 ** 32 - 1, 0]);
  assert.deepEqual(await r.readValue(), new Float32Array(0));
  // Its extent would be 2^32 - 1 rows of [min, max]: more than a wasm32 allocation.
  await rejectsWith(() => gt.extent(wide), 'LIMIT_EXCEEDED');
  await rejectsWith(gt.extent(E.fromArray(new Float32Array(0), {size: 1000})).evaluate(), 'EMPTY_INPUT');
});

// Unknown option names were ignored by these (reductions refused them): a misspelt option
// did nothing, silently.
test('every options object refuses names it does not know', async () => {
  await rejectsWith(() => gt.createDevice({type: 'cpu', alowedMem: 1024}), 'INVALID_ARGUMENT');
  await rejectsWith(() => E.fromArray([1, 2], {sizes: 2}), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.GPUVector.appendable({bogus: 1}), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.blockwise(() => [], [f32([1])], {chunk: [1]}), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.GPUTable.fromArrowIPCSync(new Uint8Array(8), {colums: ['x']}), 'INVALID_ARGUMENT');
  await rejectsWith(() => gt.GPUTable.fromArrowIPC(new Uint8Array(8), {colums: ['x']}), 'INVALID_ARGUMENT');
});
