// Part of the headless-Chromium suite (gpu-suite.js): chunked columns on one GPU device
// (api.md "Chunked evaluation"). Each check returns null or a problem; every result must
// have been computed on the device, with the chunks it should have.

import {runChecks} from './gpu-engine.js';
import {REDUCTIONS, firstDifference, reduceReference, reductionSample} from './reduce-reference.js';

/**
 * Evaluates `evaluator` on `device` and checks where it lives, its chunks and values (within
 * `tolerance`, relative).
 */
async function expectOn(device, evaluator, chunks, values, tolerance = 0) {
  const kernels = device.stats.kernels;
  const vector = await evaluator.evaluate(device);
  if (vector.device !== device) return 'the output is not on the device';
  if (device.stats.kernels <= kernels) return 'no kernel ran on the device';
  if (vector.chunks.join() !== chunks.join()) return `chunks [${vector.chunks}] instead of [${chunks}]`;
  return firstDifference(await evaluator.readValue(), values, tolerance);
}

export async function chunkedChecks(gt, device) {
  const E = gt.GPUTableEvaluator;
  const {makeTable, tableToIPC, Table} = window.Arrow;
  /** A table on the device with an int32 column `x` = 1, 2, ... in batches of `sizes` rows. */
  const batched = sizes => {
    const whole = makeTable({x: Int32Array.from({length: sizes.reduce((a, b) => a + b, 0)}, (_, i) => i + 1)});
    const batches = [];
    let at = 0;
    for (const rows of sizes) {
      batches.push(...whole.slice(at, at + rows).batches);
      at += rows;
    }
    return gt.GPUTable.fromArrowIPC(tableToIPC(new Table(batches)), {device});
  };
  const checks = {
    async 'a column in batches plus another column: one row per row, the batches kept'() {
      const table = await batched([2, 4]);
      const x = table.getVector('x');
      const problem = await expectOn(device, gt.add(x, E.fromArray([1, 1, 1, 1, 1, 1])), [2, 4], [2, 3, 4, 5, 6, 7]) ??
        await expectOn(device, gt.interleave(E.fromArray(new Int32Array([10, 20, 30, 40, 50, 60]), {chunks: 3}), x), [3, 3],
          [10, 1, 20, 2, 30, 3, 40, 4, 50, 5, 60, 6]) ??
        await expectOn(device, gt.add(gt.extent(x), 1), [1], [2, 7]);
      table.destroy();
      return problem;
    },
    async 'each output chunk is a GPUData of its own; on WebGPU its own resident GPUBuffer'() {
      const x = E.fromArray(new Float32Array([1, 2, 3, 4, 5]), {chunks: [2, 0, 3]});
      const vector = await gt.multiply(x, 2).evaluate(device);
      if (vector.data.length !== 3 || vector.chunks.join() !== '2,0,3') return `chunks [${vector.chunks}]`;
      const parts = [];
      let first = 0;
      for (const chunk of vector.data) {
        parts.push([...await vector.readValue(first, first + chunk.length)]);
        first += chunk.length;
      }
      if (parts.map(p => p.join(' ')).join('|') !== '2 4||6 8 10') return `chunk values ${JSON.stringify(parts)}`;
      if (device.type !== 'webgpu') return null;
      const buffers = vector.data.map(d => d.buffer.gpuBuffer);
      if (buffers.some(b => !b)) return 'a chunk has no GPUBuffer';
      return new Set(buffers).size === 3 ? null : 'chunks share a GPUBuffer';
    },
    async 'a filter keeps its chunks, reads back only its counts, and draws indirect on WebGPU'() {
      const x = E.fromArray(Float32Array.from([5, -1, 7, 2, -3, 9, 0, 4]), {chunks: [3, 0, 5]});
      await x.evaluate(device);
      const read = device.stats.readbackBytes;
      const kept = gt.filter(x, gt.greater(x, 1));
      if (kept.length !== null) return `length ${kept.length} before evaluation`;
      const problem = await expectOn(device, kept, [2, 0, 3], [5, 7, 2, 9, 4]);
      if (problem) return problem;
      // The three chunk counts (12 bytes), then the five values read back by expectOn.
      if (device.stats.readbackBytes - read !== 12 + 20) return `${device.stats.readbackBytes - read} bytes read back`;
      const vector = await kept.evaluate(device);
      if (device.type !== 'webgpu') return vector.drawIndirect === null ? null : 'draw arguments off WebGPU';
      const args = vector.drawIndirect;
      if (!args || !(args.usage & GPUBufferUsage.INDIRECT)) return 'no indirect draw buffer';
      const gpu = device.gpuDevice;
      const staging = gpu.createBuffer({size: 16, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ});
      const encoder = gpu.createCommandEncoder();
      encoder.copyBufferToBuffer(args, 0, staging, 0, 16);
      gpu.queue.submit([encoder.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      const words = [...new Uint32Array(staging.getMappedRange())];
      staging.destroy();
      return words.join() === '5,1,0,0' ? null : `draw arguments [${words}]`;
    },
    async 'chunk tasks of a fused graph compile one pipeline'() {
      const x = E.fromArray(Float32Array.from({length: 3000}, (_, i) => i), {chunks: [1000, 0, 2000]});
      await x.evaluate(device);
      const pipelines = device.stats.pipelines;
      const r = gt.add(gt.sqrt(gt.multiply(x, 4)), 1);
      const problem = await expectOn(device, r, [1000, 0, 2000], Array.from({length: 3000}, (_, i) => Math.sqrt(4 * i) + 1), 1e-6);
      const compiled = device.stats.pipelines - pipelines;
      return problem ?? (compiled <= 1 ? null : `${compiled} pipelines for one fused graph`);
    },
    async 'slice, concat and rechunk share whole chunks and copy parts'() {
      const x = E.fromArray(new Int32Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), {chunks: [3, 3, 4]});
      await x.evaluate(device);
      const kernels = device.stats.kernels;
      const whole = gt.concat(gt.slice(x, 3, 6), x);
      await whole.evaluate(device);
      if (device.stats.kernels !== kernels) return 'whole chunks were copied';
      if (whole.chunks.join() !== '3,3,3,4') return `concat chunks [${whole.chunks}]`;
      return await expectOn(device, gt.slice(x, 2, 7), [1, 3, 1], [2, 3, 4, 5, 6]) ??
        await expectOn(device, gt.rechunk(x, [5, 5]), [5, 5], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) ??
        await expectOn(device, gt.gather(E.fromArray([9, 0, 4], {type: 'uint32'}), x), [3], [9, 0, 4]);
    },
    async 'cast truncates, zeroes NaN and out-of-range values, wraps integers'() {
      const x = E.fromArray(new Float32Array([1.9, -1.9, 255.5, 256, NaN, Infinity, -0.5]), {chunks: [3, 4]});
      return await expectOn(device, gt.cast(gt.add(x, 0), 'uint8'), [3, 4], [1, 0, 255, 0, 0, 0, 0]) ??
        await expectOn(device, gt.cast(gt.add(x, 0), 'sint8'), [3, 4], [1, -1, 0, 0, 0, 0, 0]) ??
        await expectOn(device, gt.cast(E.fromArray(new Int32Array([-1, 300, -129])), 'uint8'), [3], [255, 44, 127]);
    },
    async 'a fetched Arrow file streams onto the device batch by batch'() {
      const url = new URL('../../www/data/trips.arrow', import.meta.url);
      const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
      const whole = await gt.GPUTable.fromArrowIPC(bytes, {device});
      const arrived = [];
      const streamed = await gt.GPUTable.fromArrowIPC((await fetch(url)).body, {device, onBatch: batch => arrived.push(batch.numRows)});
      try {
        if (streamed.numRows !== whole.numRows || arrived.length !== whole.batches.length) {
          return `${streamed.numRows} rows in ${arrived.length} batches, not ${whole.numRows} in ${whole.batches.length}`;
        }
        const fare = streamed.getVector('fare');
        if (fare.device !== device) return 'the streamed table is not on the device';
        const [a, b] = [await gt.extent(fare).readValue(), await gt.extent(whole.getVector('fare')).readValue()];
        return a.join() === b.join() ? null : `fare extent [${a}] vs [${b}]`;
      } finally {
        whole.destroy();
        streamed.destroy();
      }
    },
    async 'every reduction of every type over uneven chunks, NaN and ties, splitEvery 2, 3 and 4'() {
      const problems = [];
      for (const Typed of [Uint8Array, Int8Array, Uint16Array, Int16Array, Uint32Array, Int32Array, Float32Array]) {
        const values = reductionSample(Typed, 3 * 26);
        const x = E.fromArray(values, {size: 3, chunks: [5, 0, 17, 1, 3]});
        for (const kind of REDUCTIONS) {
          const want = reduceReference(kind, x.type, values, 3);
          for (const splitEvery of [2, 3, 4]) {
            const rows = kind === 'extent' ? 3 : 1;
            const problem = await expectOn(device, gt[kind](x, {splitEvery}), [rows], want, kind === 'mean' ? 1e-6 : 0);
            if (problem) problems.push(`${kind} of ${x.type}, splitEvery ${splitEvery}: ${problem}`);
          }
        }
      }
      return problems.length ? problems.slice(0, 5).join('; ') : null;
    },
    async 'reductions skip null slots and an empty input is EMPTY_INPUT (sum: 0)'() {
      const {vectorFromArray, Int32, Table} = window.Arrow;
      const whole = new Table({x: vectorFromArray([4, null, -2, 7, null, 7], new Int32())});
      const table = await gt.GPUTable.fromArrowIPC(tableToIPC(new Table([...whole.slice(0, 2).batches, ...whole.slice(2).batches])), {device});
      try {
        const x = table.getVector('x');
        for (const kind of REDUCTIONS) {
          const want = reduceReference(kind, 'sint32', [4, 0, -2, 7, 0, 7], 1, r => r !== 1 && r !== 4);
          const problem = await expectOn(device, gt[kind](x), [1], want, 1e-6);
          if (problem) return `${kind} with nulls: ${problem}`;
        }
      } finally {
        table.destroy();
      }
      const empty = E.fromArray(new Float32Array(0), {chunks: [0, 0]});
      const zero = await expectOn(device, gt.sum(empty), [1], [0]);
      if (zero) return `sum of no rows: ${zero}`;
      try {
        await gt.argmax(empty).evaluate(device);
        return 'argmax of no rows did not fail';
      } catch (error) {
        return error.code === 'EMPTY_INPUT' ? null : `argmax of no rows: ${error.code}`;
      }
    },
    async 'a float sum of a million rows stays accurate, in one chunk and in 64'() {
      const values = new Float32Array(1 << 20).fill(0.1);
      const exact = Math.fround(0.1) * values.length;
      for (const chunks of [values.length, values.length / 64]) {
        const x = E.fromArray(values, {chunks});
        const problem = await expectOn(device, gt.sum(x), [1], [exact], 1e-5) ??
          await expectOn(device, gt.argmax(gt.add(x, E.fromArray(new Float32Array(values.length).fill(0).fill(1, 777_777, 777_778)))), [1], [777_777]);
        if (problem) return `${x.chunks.length} chunk(s): ${problem}`;
      }
      return null;
    },
    async 'packBatches joins batches on the device: nothing read back or uploaded'() {
      const table = await batched([2, 4, 1]);
      try {
        const [read, up, kernels] = [device.stats.readbackBytes, device.stats.uploadBytes, device.stats.kernels];
        await table.packBatches({minBatchSize: 6});
        if (device.stats.readbackBytes !== read || device.stats.uploadBytes !== up) return 'packing moved data through the host';
        if (device.stats.kernels <= kernels) return 'no copy kernel ran';
        if (table.batches.map(b => b.numRows).join() !== '6,1') return `batches of ${table.batches.map(b => b.numRows)}`;
        const x = table.getVector('x');
        if (x.device !== device || table.batches[0].getVector('x').data[0].buffer.device !== device) return 'the packed batch is not on the device';
        const values = [...await x.readValue()];
        return values.join() === '1,2,3,4,5,6,7' ? null : `values [${values}]`;
      } finally {
        table.destroy();
      }
    },
    async 'extent of batches of every integer type, with an empty batch'() {
      const problems = [];
      for (const Typed of [Int8Array, Uint16Array, Int32Array, Uint32Array, Float32Array]) {
        const values = Typed.from([5, 3, 9, 7]);
        const source = E.fromArray(values, {chunks: [2, 0, 2]});
        const range = gt.extent(source);
        await range.evaluate(device);
        const got = [...await range.readValue()];
        if (got.join() !== '3,9') problems.push(`${Typed.name}: [${got}]`);
      }
      return problems.length ? problems.join('; ') : null;
    }
  };
  return runChecks(checks);
}

/**
 * A device of `type` with `allowedMem`: a column 8 x larger streams through within it, a
 * chunk at a time, or cut into row ranges where a chunk's task does not fit; a budget no
 * row fits is refused before any kernel runs.
 */
export async function budgetCheck(gt, type) {
  const rows = 32_768;
  const values = Float32Array.from({length: rows * 8}, (_, i) => i);
  const build = () => gt.add(gt.sqrt(gt.GPUTableEvaluator.fromArray(values, {chunks: rows})), 1);
  for (const allowed of [3 * rows * 4 + 65_536, 2 * rows * 4 + 65_536]) {
    const device = await gt.createDevice({type, allowedMem: allowed});
    try {
      device.resetPeak();
      const kernels = device.stats.kernels;
      const streamed = build();
      await streamed.evaluate(device);
      if (device.stats.kernels < kernels + 8) return 'the chunks did not run on the device';
      if (device.memory.peakBytes > allowed) return `peak ${device.memory.peakBytes} over allowedMem ${allowed}`;
      const got = await streamed.readValue();
      const wrong = got.findIndex((v, i) => Math.abs(v - (Math.sqrt(i) + 1)) > 1e-6 * (Math.sqrt(i) + 1));
      if (wrong >= 0) return `value ${wrong} under ${allowed}: ${got[wrong]}`;
    } finally {
      device.destroy();
    }
  }
  const tiny = await gt.createDevice({type, allowedMem: 65_536});
  const kernels = tiny.stats.kernels;
  try {
    await build().evaluate(tiny);
    return 'a task over allowedMem ran';
  } catch (error) {
    if (error.code !== 'LIMIT_EXCEEDED') return `${error.code}: ${error.message}`;
    if (tiny.stats.kernels !== kernels) return 'kernels ran before the refusal';
  } finally {
    tiny.destroy();
  }
  return null;
}

/**
 * A sort of a column over twice `allowedMem` on a device of `type`: runs that fit sorted on
 * the device and merged (explain says so), the peak within the budget, the order the plain
 * stable one. (WebGL2 stores a value in whole texture rows, so its sorts need budgets of
 * megabytes; the native GL suite sorts 1.6M rows that way.)
 */
export async function budgetSortCheck(gt, type) {
  const n = 100_000;
  const keys = Float32Array.from({length: n}, (_, i) => (i % 13 === 0 ? NaN : ((i * 7919) % 1009) - 500));
  const allowed = 65_536 + n;
  const device = await gt.createDevice({type, allowedMem: allowed});
  try {
    const x = gt.GPUTableEvaluator.fromArray(keys, {chunks: [40_000, 0, 60_000]});
    const order = gt.argsort(x, {descending: true});
    const text = order.explain(device);
    if (!/external sort .* runs of up to \d+ rows .*one merge pass/.test(text) || !text.includes('fits')) return `explain: ${text}`;
    device.resetPeak();
    const kernels = device.stats.kernels;
    await order.evaluate(device);
    if (device.stats.kernels < kernels + 20) return 'the runs did not run on the device';
    if (device.memory.peakBytes > allowed) return `peak ${device.memory.peakBytes} over allowedMem ${allowed}`;
    const rank = v => (Number.isNaN(v) ? Infinity : -v);
    const want = Array.from({length: n}, (_, i) => i).sort((i, j) => rank(keys[i]) - rank(keys[j]) || i - j);
    const got = await order.readValue();
    const wrong = want.findIndex((w, r) => got[r] !== w);
    return wrong >= 0 ? `row ${wrong}: ${got[wrong]}, not ${want[wrong]}` : null;
  } finally {
    device.destroy();
  }
}

/**
 * WebGPU's radix sort ranks rows by subgroup ballots on an adapter with the `subgroups`
 * feature (SwiftShader's in Chromium: 4 lanes, so a block's rows are placed in four parts;
 * the device is asked for the feature, which wgpu has no name for): `explain` says so, and a
 * two-key sort of 300,001 rows (repeated digits, ties, NaN, one key descending, uneven
 * chunks) is the plain stable one.
 */
export async function subgroupSortCheck(gt) {
  const adapter = await navigator.gpu.requestAdapter();
  const device = await gt.createDevice({type: 'webgpu'});
  try {
    const n = 300_001;
    const wide = Uint32Array.from({length: n}, (_, i) => Math.imul(i, 2654435761) >>> (i % 32));
    const few = Float32Array.from({length: n}, (_, i) => (i % 17 === 0 ? NaN : ((i * 7919) % 101) - 50));
    const x = gt.GPUTableEvaluator.fromArray(wide, {chunks: [100_000, 0, 200_001]});
    const y = gt.GPUTableEvaluator.fromArray(few);
    const order = gt.argsort([y, x], {descending: [true, false]});
    const text = order.explain(device);
    const ranked = text.includes('ranking rows by subgroup ballots');
    // This Chromium's SwiftShader offers subgroups: the check would prove nothing without.
    if (!adapter.features.has('subgroups')) return 'the adapter offers no subgroups';
    if (!ranked) return `the adapter offers subgroups, but explain says: ${text}`;
    const kernels = device.stats.kernels;
    await order.evaluate(device);
    if (device.stats.kernels < kernels + 12) return 'the sort did not run on the device';
    const rank = v => (Number.isNaN(v) ? Infinity : -v);
    const want = Array.from({length: n}, (_, i) => i).sort((i, j) => rank(few[i]) - rank(few[j]) || wide[i] - wide[j] || i - j);
    const got = await order.readValue();
    const wrong = want.findIndex((w, r) => got[r] !== w);
    return wrong >= 0 ? `row ${wrong}: ${got[wrong]}, not ${want[wrong]}` : null;
  } finally {
    device.destroy();
  }
}

/**
 * A table join on a device of `type` under an `allowedMem` below what the whole join needs:
 * joined a range of left rows at a time (a batch per range), the peak within the budget,
 * kernels run there, the rows a double loop's, nothing left on the device after.
 */
export async function budgetJoinCheck(gt, type) {
  const {makeTable, tableToIPC} = window.Arrow;
  const n = 40_000;
  const zoneOf = i => (i * 7919) % 300;
  const trips = tableToIPC(makeTable({zone: Int32Array.from({length: n}, (_, i) => zoneOf(i)), fare: Float32Array.from({length: n}, (_, i) => i / 4)}));
  const zones = tableToIPC(makeTable({zone: Int32Array.from({length: 260}, (_, i) => i), area: Float32Array.from({length: 260}, (_, i) => i * 2)}));
  const joinOn = async device => {
    const t = await gt.GPUTable.fromArrowIPC(trips, {device});
    const z = await gt.GPUTable.fromArrowIPC(zones, {device});
    const before = device.memory.liveBytes;
    device.resetPeak();
    const kernels = device.stats.kernels;
    const joined = await t.join(z, {on: 'zone', how: 'left'});
    return {joined, before, peak: device.memory.peakBytes - before, kernels: device.stats.kernels - kernels};
  };
  const whole = await gt.createDevice({type});
  const {joined: reference, peak} = await joinOn(whole);
  reference.destroy();
  whole.destroy();
  const allowed = Math.ceil(peak * 0.6);
  const device = await gt.createDevice({type, allowedMem: allowed});
  try {
    const {joined, before, peak: held, kernels} = await joinOn(device);
    if (joined.batches.length < 2) return `joined in ${joined.batches.length} part under ${allowed} (the whole join held ${peak})`;
    if (held > allowed) return `held ${held} over allowedMem ${allowed}`;
    if (kernels < 10) return `${kernels} kernels ran on the device`;
    if (joined.numRows !== n) return `${joined.numRows} rows, not ${n}`;
    const fare = await joined.getVector('fare').readValue();
    const area = await joined.getVector('area').readValue();
    const valid = await joined.getVector('area').validity.readValue();
    for (let i = 0; i < n; i++) {
      const zone = zoneOf(i);
      if (fare[i] !== i / 4 || (zone < 260 ? !valid[i] || area[i] !== zone * 2 : valid[i])) return `row ${i}: ${fare[i]}, ${area[i]}, valid ${valid[i]}`;
    }
    joined.destroy();
    if (device.memory.liveBytes !== before) return `${device.memory.liveBytes - before} bytes left on the device`;
    return null;
  } finally {
    device.destroy();
  }
}
