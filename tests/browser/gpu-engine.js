// Part of the headless-Chromium suite (gpu-suite.js): where results live, what the device
// counts, overlapping work, and the regressions of past defects, on one GPU device. Each
// check returns null or a problem; every compared result must have been computed there.

const floats = (n, seed = 7) => {
  let s = seed;
  return Float32Array.from({length: n}, () => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return ((s >>> 0) % 2001 - 1000) / 8;
  });
};

function sameValues(actual, expected, tolerance = 0) {
  if (actual.length !== expected.length) return `length ${actual.length} vs ${expected.length}`;
  for (let i = 0; i < actual.length; i++) {
    const [a, e] = [actual[i], expected[i]];
    const close = a === e || (Number.isNaN(a) && Number.isNaN(e)) ||
      (tolerance > 0 && Number.isFinite(e) && Math.abs(a - e) <= tolerance * Math.max(Math.abs(e), 1));
    if (!close) return `element ${i}: device ${a} vs CPU ${e}`;
  }
  return null;
}

/** `build()` on the CPU and on `device`, checked to run there, compared. */
async function compareOn(gt, device, build, tolerance = 0) {
  const expected = await build().readValue();
  const evaluator = build();
  const kernels = device.stats.kernels;
  const vector = await evaluator.evaluate(device);
  if (evaluator.device !== device || vector.device !== device) return 'the output is not on the device';
  if (device.stats.kernels <= kernels) return 'no kernel ran on the device';
  const problem = sameValues(await evaluator.readValue(), expected, tolerance);
  evaluator.destroy();
  return problem;
}

export async function engineChecks(gt, device) {
  const E = gt.GPUTableEvaluator;
  const checks = {
    async 'results stay on the device until read'() {
      const xs = floats(100_000);
      const x = E.fromArray(xs);
      const r = gt.add(x, 1);
      if (x.evaluated || x.device !== null) return 'user data counts as evaluated';
      const before = device.stats;
      const vector = await r.evaluate(device);
      const after = device.stats;
      if (!r.evaluated || r.device !== device) return `the output is on ${r.device?.type}`;
      // api.md: a source is evaluated once uploaded for a graph.
      if (!x.evaluated || x.device !== device) return `the uploaded input is on ${x.device?.type}`;
      if (after.readbackBytes !== before.readbackBytes) return 'evaluate read something back';
      if (after.uploadBytes - before.uploadBytes < 400_000) return `uploaded ${after.uploadBytes - before.uploadBytes} bytes`;
      if (device.type === 'webgpu' && !(vector.data[0].buffer.gpuBuffer instanceof GPUBuffer)) return 'no resident GPUBuffer';
      const part = await r.readValue(10, 20);
      const read = device.stats.readbackBytes - after.readbackBytes;
      // Only the texels of the rows asked (WebGL2 copied whole texture rows: 32 kB).
      if (read < 40 || read > 256) return `reading 10 rows read back ${read} bytes`;
      const problem = sameValues(part, xs.subarray(10, 20).map(v => v + 1));
      x.destroy();
      r.destroy();
      return problem;
    },
    async 'a chain of three evaluations moves nothing between steps'() {
      const x = E.fromArray(floats(50_000), {size: 2});
      const a = gt.add(x, 1);
      await a.evaluate(device);
      const {uploadBytes, readbackBytes} = device.stats;
      const b = gt.multiply(a, [2, 3]);
      await b.evaluate(device);
      const c = gt.sqrt(gt.abs(b));
      await c.evaluate(device);
      const after = device.stats;
      if (after.uploadBytes !== uploadBytes || after.readbackBytes !== readbackBytes) return `moved ${after.uploadBytes - uploadBytes} up, ${after.readbackBytes - readbackBytes} down`;
      const expected = gt.sqrt(gt.abs(gt.multiply(gt.add(x, 1), [2, 3])));
      const problem = sameValues(await c.readValue(), await expected.readValue(), 1e-6);
      for (const e of [x, a, b, c]) e.destroy();
      return problem;
    },
    async 'destroying every value returns liveBytes; trim empties the pool'() {
      const start = device.memory.liveBytes;
      const made = [];
      for (let k = 0; k < 20; k++) {
        const x = E.fromArray(floats(1000 + 500 * k));
        const r = gt.extent(gt.multiply(x, x));
        await r.evaluate(device);
        made.push(x, r);
      }
      const held = device.memory.liveBytes;
      if (held <= start) return 'nothing was live';
      for (const e of made) e.destroy();
      if (device.memory.liveBytes > start) return `liveBytes ${device.memory.liveBytes} after destroying, started at ${start}`;
      device.trim();
      if (device.memory.pooledBytes !== 0) return `pooledBytes ${device.memory.pooledBytes} after trim()`;
      device.resetPeak();
      return device.memory.peakBytes === device.memory.liveBytes ? null : 'resetPeak() kept the old peak';
    },
    async 'destroying a filtered nullable value frees its flags and count while its vector is held'() {
      // A device of its own: the collector freeing earlier checks' values on the shared one
      // would move liveBytes meanwhile.
      const own = await gt.createDevice({type: device.type});
      try {
        const {makeTable, tableToIPC, vectorFromArray, Float32} = window.Arrow;
        const fares = Array.from({length: 3000}, (_, i) => (i % 7 === 3 ? null : (i % 50) - 10));
        const table = await gt.GPUTable.fromArrowIPC(tableToIPC(makeTable({fare: vectorFromArray(fares, new Float32())})), {device: own});
        const fare = table.getVector('fare');
        const before = own.memory.liveBytes;
        const kept = gt.filter(gt.add(fare, 1), gt.greater(fare, 0));
        const vector = await kept.evaluate(own);
        const validity = vector.validity;
        if (own.stats.kernels === 0) return 'no kernel ran on the device';
        const rows = fares.filter(v => v !== null && v > 0).length;
        if (vector.length !== rows) return `${vector.length} rows, not ${rows}`;
        if (own.memory.liveBytes <= before) return 'nothing was live';
        kept.destroy();
        const left = own.memory.liveBytes - before;
        table.destroy();
        if (left !== 0) return `${left} bytes left on the device while the vector ${validity ? 'and its validity are' : 'is'} held`;
        return vector.destroyed ? null : 'the output vector is not destroyed';
      } finally {
        own.destroy();
      }
    },
    async 'a cached loop allocates nothing after its first pass'() {
      const x = E.fromArray(floats(20_000), {size: 2});
      let allocations = 0;
      await device.cached('loop', async () => {
        for (let pass = 0; pass < 5; pass++) {
          const r = gt.extent(gt.add(x, [pass, 1]));
          await r.evaluate(device);
          await r.readValue();
          r.destroy();
          if (pass === 0) allocations = device.stats.allocations;
        }
      });
      const problem = device.stats.allocations === allocations ? null : `${device.stats.allocations - allocations} allocations after the first pass`;
      device.trim('loop');
      await device.uncached(async () => {
        const r = gt.add(x, 1);
        await r.evaluate(device);
        r.destroy();
      });
      x.destroy();
      return problem;
    },
    async 'Promise.all of many evaluations and reads on one device'() {
      const builds = Array.from({length: 16}, (_, k) => {
        const size = 1 + (k % 3);
        return () => gt.sqrt(gt.add(gt.abs(E.fromArray(floats((3000 + 100 * k) * size, k + 1), {size})), k));
      });
      const expected = await Promise.all(builds.map(b => b().readValue()));
      const evaluators = builds.map(b => b());
      const reads = await Promise.all(evaluators.map(async e => {
        const [vector, early] = await Promise.all([e.evaluate(device), e.readValue(0, 5)]);
        return {vector, early, all: await e.readValue()};
      }));
      for (const [k, {vector, early, all}] of reads.entries()) {
        if (vector.device !== device) return `evaluation ${k} is not on the device`;
        const problem = sameValues(all, expected[k], 1e-6) ?? sameValues(early, expected[k].subarray(0, early.length), 1e-6);
        if (problem) return `evaluation ${k}: ${problem}`;
      }
      return null;
    },
    async 'destroying an input during an evaluation'() {
      const xs = floats(200_000);
      const x = E.fromArray(xs);
      const r = gt.multiply(x, 3);
      const pending = r.evaluate(device);
      x.destroy();
      try {
        await pending;
        return sameValues(await r.readValue(0, 100), xs.subarray(0, 100).map(v => Math.fround(v * 3)));
      } catch (error) {
        return error.code === 'DESTROYED' ? null : `${error.code}: ${error.message}`;
      }
    },
    async 'literals are parameters, not bindings'() {
      return await compareOn(gt, device, () => gt.add(E.fromArray(floats(3000)), 1, 2, 3, 4, 5, 6, 7, 8, 9)) ??
        await compareOn(gt, device, () => {
          let y = E.fromArray(floats(3000));
          for (let k = 0; k < 5; k++) y = gt.add(gt.multiply(y, 2), 1);
          return y;
        }) ??
        await compareOn(gt, device, () => gt.interleave(...Array.from({length: 10}, (_, k) => E.fromArray(floats(200 + k, k + 3)))));
    },
    async 'a 5,000-step chain runs in bounded kernels'() {
      return compareOn(gt, device, () => {
        let y = E.fromArray(floats(10_000));
        for (let k = 0; k < 5000; k++) y = gt.abs(gt.sqrt(y));
        return y;
      }, 1e-6);
    },
    async 'pow special values follow powf'() {
      const special = [NaN, Infinity, -Infinity, 0, -0, 1, -1, 0.5, -0.5, 2, -2, 3, -3, 2.5, -2.5, 1.5, -1.5, 0.1, -0.1, 10, -10, 1e-30, -1e-30, 1e30, -1e30, 1.1754943508222875e-38, 1e-45, 3.4028234663852886e38, -3.4028234663852886e38, 16777216, 16777217, -16777215, 0.9999999, 1.0000001];
      const bases = special.flatMap(b => special.map(() => b));
      const exponents = special.flatMap(() => special);
      return compareOn(gt, device, () => gt.pow(E.fromArray(bases), E.fromArray(exponents)), 1e-4);
    },
    async 'sin, cos and tan of large arguments'() {
      const xs = new Float32Array([2 ** 31, -(2 ** 31), 16777217, 1e7, 123456789, 3e9, 1e10, -1e20, 1e30, 3e38, 8192, 65536, 1e6 + 0.5]);
      const ints = new Int32Array(Array.from({length: 500}, (_, i) => (i * 2654435761) | 0));
      for (const x of [xs, ints]) {
        for (const op of [gt.sin, gt.cos, gt.tan]) {
          const expected = await op(E.fromArray(x)).readValue();
          const r = op(E.fromArray(x));
          await r.evaluate(device);
          const actual = await r.readValue();
          for (let i = 0; i < actual.length; i++) {
            if (op !== gt.tan && Math.abs(actual[i]) > 1) return `${op.name}(${x[i]}) = ${actual[i]}`;
            if (Math.abs(actual[i] - expected[i]) > 2e-5 * Math.max(1, Math.abs(expected[i]))) return `${op.name}(${x[i]}): device ${actual[i]} vs CPU ${expected[i]}`;
          }
        }
      }
      return null;
    },
    async 'extent of 12,000-lane rows'() {
      const lanes = 12_000;
      const values = Float32Array.from({length: lanes * 5}, (_, i) => ((i * 7919) % 100_003) - 50_000);
      return compareOn(gt, device, () => gt.extent(E.fromArray(values, {size: lanes})));
    },
    async 'elementwise work on 12,000-lane rows'() {
      const lanes = 12_000;
      const values = Float32Array.from({length: lanes * 5}, (_, i) => ((i * 7919) % 100_003) - 50_000);
      const build = () => gt.sqrt(gt.abs(gt.add(E.fromArray(values, {size: lanes}), 1)));
      if (device.type === 'webgl') {
        // A WebGL2 draw samples 16 textures of 4 lanes; a row is computed whole.
        try {
          await build().evaluate(device);
          return 'WebGL2 computed 12,000 lanes in one draw';
        } catch (error) {
          return error.code === 'LIMIT_EXCEEDED' && /maxSampledTexturesPerShaderStage/.test(error.message) ? null : `${error.code}: ${error.message}`;
        }
      }
      return compareOn(gt, device, build, 1e-6);
    },
    async 'extent of a multi-batch integer column, with an empty batch'() {
      const {makeTable, tableToIPC, Table} = window.Arrow;
      const problems = [];
      for (const values of [[5, 6, 7, 8], [-5, -6, -7, -8]]) {
        const whole = makeTable({n: Int32Array.from(values)});
        const source = new Table([...whole.slice(0, 2).batches, ...whole.slice(0, 0).batches, ...whole.slice(2).batches]);
        const table = await gt.GPUTable.fromArrowIPC(tableToIPC(source), {device});
        const range = gt.extent(table.getVector('n'));
        await range.evaluate(device);
        const got = [...await range.readValue()];
        const want = [Math.min(...values), Math.max(...values)];
        if (got.join() !== want.join()) problems.push(`extent of [${values}] in batches: [${got}] instead of [${want}]`);
        table.destroy();
      }
      return problems.length ? problems.join('; ') : null;
    },
    async 'cleanEvaluate takes multi-batch arguments'() {
      const {makeTable, tableToIPC, Table} = window.Arrow;
      const whole = makeTable({x: Float32Array.from({length: 100}, (_, i) => i)});
      const table = await gt.GPUTable.fromArrowIPC(tableToIPC(new Table([...whole.slice(0, 40).batches, ...whole.slice(40).batches])), {device});
      const doubled = gt.multiply(table.getVector('x'), 2);
      await gt.cleanEvaluate(device, [doubled]);
      const values = await doubled.readValue();
      table.destroy();
      return values.length === 100 && values[99] === 198 ? null : `read ${values.length} values, last ${values[99]}`;
    },
    async 'text columns filter, order, group and join by value on the device'() {
      const {tableFromArrays, tableToIPC, tableFromIPC, vectorFromArray, Utf8, Int32, Dictionary, Table} = window.Arrow;
      const words = ['b', '', 'é', '😀', '\uFFFD', 'a', null, 'b'];
      const names = Array.from({length: 5000}, (_, i) => words[(i * 7919) % words.length]);
      const part = (at, end) => tableFromArrays({name: vectorFromArray(names.slice(at, end), new Utf8()), amount: Float32Array.from({length: end - at}, (_, i) => at + i)});
      const trips = tableToIPC(new Table([...part(0, 2000).batches, ...part(2000, 5000).batches]));
      const zoneNames = ['😀', 'b', 'a', 'never'];
      const zones = tableToIPC(tableFromArrays({name: vectorFromArray(zoneNames, new Dictionary(new Utf8(), new Int32())), zone: Int32Array.from([10, 11, 12, 13])}));
      // The verbs on one device: their tables written back as Arrow JSON rows.
      const verbs = async target => {
        const t = await gt.GPUTable.fromArrowIPC(trips, {device: target});
        const z = await gt.GPUTable.fromArrowIPC(zones, {device: target});
        const kernels = target.stats.kernels;
        const made = [
          await t.filter(c => gt.equal(c.name, 'b')),
          await t.orderBy('name', {descending: true}),
          await t.groupBy('name').rollup({n: 'count', total: ['sum', 'amount']}),
          await t.join(z, {on: 'name', how: 'left'}),
        ];
        const ran = target.stats.kernels > kernels;
        const onDevice = made.every(m => m.schema.names.every(n => m.getVector(n).device === target));
        const rows = [];
        for (const m of made) rows.push(JSON.stringify(tableFromIPC(await m.toArrowIPC()).toArray()));
        for (const m of [t, z, ...made]) m.destroy();
        return {rows, ran, onDevice};
      };
      const cpu = await verbs(await gt.createDevice({type: 'cpu'}));
      const here = await verbs(device);
      if (!here.ran || !here.onDevice) return 'the verbs did not run on the device or left their tables elsewhere';
      const verbNames = ['filter', 'orderBy', 'groupBy', 'join'];
      for (let k = 0; k < verbNames.length; k++) {
        if (here.rows[k] !== cpu.rows[k]) return `${verbNames[k]}: ${here.rows[k].slice(0, 200)} vs the CPU's ${cpu.rows[k].slice(0, 200)}`;
      }
      const grouped = JSON.parse(cpu.rows[2]).map(r => r.name);
      const wanted = ['', 'a', 'b', 'é', '\uFFFD', '😀', null];
      return grouped.join('|') === wanted.join('|') ? null : `groups ${JSON.stringify(grouped)}`;
    }
  };
  return runChecks(checks);
}

/** Runs each named check in turn: `{name, problem}` (null, or what went wrong). */
export async function runChecks(checks) {
  const results = [];
  for (const [name, check] of Object.entries(checks)) {
    try {
      results.push({name, problem: await check()});
    } catch (error) {
      results.push({name, problem: `${error.code ?? error.name}: ${error.message}`});
    }
  }
  return results;
}

/** Destroys the device while an evaluation waits for it: DESTROYED, never a crash. */
export async function destroyDuringEvaluation(gt, device) {
  const x = gt.GPUTableEvaluator.fromArray(floats(300_000));
  const pending = gt.sqrt(gt.abs(x)).evaluate(device);
  device.destroy();
  try {
    await pending;
    return null;
  } catch (error) {
    return error.code === 'DESTROYED' ? null : `${error.code}: ${error.message}`;
  }
}
