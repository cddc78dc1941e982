// Part of the headless-Chromium suite (gpu-suite.js): sparse matrices on one GPU device
// (api.md "Sparse arrays"). Each check returns null or a problem; every result must have
// been computed on the device by its kernels, and match the CPU device's.

import {runChecks} from './gpu-engine.js';
import {firstDifference} from './reduce-reference.js';

/**
 * `evaluator` evaluated on `device` by kernels there, compared with its CPU twin. A result
 * computed when its operation resolved passes `since`, the kernel count before that.
 */
async function sameOnDevice(device, evaluator, cpuTwin, since = device.stats.kernels) {
  const vector = await evaluator.evaluate(device);
  if (vector.device !== device) return 'the output is not on the device';
  if (device.stats.kernels <= since && evaluator.length > 0) return 'no kernel ran on the device';
  return firstDifference(await evaluator.readValue(), await cpuTwin.readValue(), 1e-6);
}

/** A random COO matrix's components (duplicates likely), the same for both devices. */
function randomCoo(m, n, entries, seed) {
  let state = seed;
  const next = bound => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % bound;
  };
  const rowInd = new Uint32Array(entries);
  const colInd = new Uint32Array(entries);
  const nzVal = new Float32Array(entries);
  for (let k = 0; k < entries; k++) {
    rowInd[k] = next(m);
    colInd[k] = next(n);
    nzVal[k] = next(9) - 4;
  }
  return {rowInd, colInd, nzVal, shape: [m, n]};
}

export async function sparseChecks(gt, device) {
  const {SparseMatrix, GPUTableEvaluator: E} = gt;
  const fields = randomCoo(300, 400, 20_000, 7);
  const checks = {
    async 'COO with duplicates to canonical CSR and CSC on the device'() {
      // Each conversion is computed on the device (one evaluation) by the time it resolves.
      const before = device.stats.kernels;
      const [gpu, cpu] = [await SparseMatrix.fromCOO(fields, {device}).toCSR(), await SparseMatrix.fromCOO(fields).toCSR()];
      const problem = await sameOnDevice(device, gpu.rowPtr, cpu.rowPtr, before) ??
        await sameOnDevice(device, gpu.colVal, cpu.colVal, before) ??
        await sameOnDevice(device, gpu.nzVal, cpu.nzVal, before);
      const beforeCsc = device.stats.kernels;
      const csc = await SparseMatrix.fromCOO(fields, {device}).toCSC();
      const cpuCsc = await SparseMatrix.fromCOO(fields).toCSC();
      return problem ?? await sameOnDevice(device, csc.rowVal, cpuCsc.rowVal, beforeCsc);
    },
    async 'fromDense, triu and droptol on the device'() {
      // 40 lanes: a WebGL2 draw samples at most 64 lanes of a row (16 textures of 4).
      const cells = Float32Array.from({length: 120 * 40}, (_, i) => (i * 7919 % 11 === 0 ? (i % 13) - 6 : 0));
      // Each result is computed on the device by the time it resolves.
      const before = device.stats.kernels;
      const [A, B] = [await SparseMatrix.fromDense(E.fromArray(cells, {size: 40}), {device}), await SparseMatrix.fromDense(E.fromArray(cells, {size: 40}))];
      const afterA = device.stats.kernels;
      const [upper, cpuUpper] = [await A.triu(3), await B.triu(3)];
      const afterUpper = device.stats.kernels;
      const [big, cpuBig] = [await A.droptol(2), await B.droptol(2)];
      return await sameOnDevice(device, A.colVal, B.colVal, before) ??
        await sameOnDevice(device, upper.colVal, cpuUpper.colVal, afterA) ??
        await sameOnDevice(device, big.nzVal, cpuBig.nzVal, afterUpper);
    },
    async 'norms, symmetry and entries resolve on the device'() {
      const [A, B] = [SparseMatrix.fromCOO(fields, {device}), SparseMatrix.fromCOO(fields)];
      const kernels = device.stats.kernels;
      const got = [await A.norm(), await A.opnorm(1), await A.get(3, 5)];
      if (device.stats.kernels <= kernels) return 'no kernel ran on the device';
      const want = [await B.norm(), await B.opnorm(1), await B.get(3, 5)];
      if (!got.every((v, i) => Math.abs(v - want[i]) <= 1e-5 * Math.abs(want[i]))) return `device ${got}, CPU ${want}`;
      // Symmetry of square matrices (a non-square one is refused before any kernel): the
      // entries of a random one mirrored (duplicates and all), and the random one itself.
      const square = randomCoo(200, 200, 3_000, 9);
      const mirrored = {
        rowInd: Uint32Array.of(...square.rowInd, ...square.colInd),
        colInd: Uint32Array.of(...square.colInd, ...square.rowInd),
        nzVal: Float32Array.of(...square.nzVal, ...square.nzVal),
        shape: [200, 200]
      };
      for (const [what, parts, symmetric] of [['mirrored', mirrored, true], ['random', square, false]]) {
        const before = device.stats.kernels;
        const answer = await SparseMatrix.fromCOO(parts, {device}).isSymmetric();
        if (device.stats.kernels <= before) return `isSymmetric of the ${what} matrix ran no kernel on the device`;
        if (answer !== symmetric || (await SparseMatrix.fromCOO(parts).isSymmetric()) !== symmetric) {
          return `isSymmetric of the ${what} matrix: ${answer} on the device`;
        }
      }
      return null;
    },
    async 'SpMV, SpMM and the dense form on the device'() {
      const A = SparseMatrix.fromCOO(fields, {device});
      const B = SparseMatrix.fromCOO(fields);
      const x = Float32Array.from({length: 400}, (_, i) => (i % 5) - 2);
      const x2 = Float32Array.from({length: 800}, (_, i) => (i % 7) - 3);
      return await sameOnDevice(device, A.multiply(x), B.multiply(x)) ??
        await sameOnDevice(device, A.multiply(E.fromArray(x2, {size: 2}), {alpha: 2, beta: 1, y: E.fromArray(new Float32Array(600).fill(1), {size: 2})}),
          B.multiply(E.fromArray(x2, {size: 2}), {alpha: 2, beta: 1, y: E.fromArray(new Float32Array(600).fill(1), {size: 2})})) ??
        await sameOnDevice(device, A.transpose().toDense(), B.transpose().toDense());
    },
    async 'sparse arithmetic, sums, min, max and kron on the device'() {
      const other = randomCoo(300, 400, 5_000, 11);
      const on = async (settings, run) => run(SparseMatrix.fromCOO(fields, settings), SparseMatrix.fromCOO(other, settings));
      const before = device.stats.kernels;
      const [gpu, cpu] = await Promise.all([{device}, undefined].map(settings => on(settings, async (a, b) => {
        const union = await gt.subtract(a, b);
        const both = await gt.multiply(b, a);
        const magnitude = await gt.abs(b);
        return [union.nzVal, both.nzVal, magnitude.nzVal, gt.sum(a, {axis: 0}), gt.sum(a, {axis: 1}), gt.min(a), gt.max(b),
          (await gt.kron(b, SparseMatrix.fromCSR({rowPtr: [0, 1, 2], colVal: [1, 0], nzVal: [2, -1], shape: [2, 2]}, settings))).colInd];
      })));
      // The sparse results (a - b, a .* b, abs, kron) are computed by the time they resolve;
      // the rest when evaluated here.
      const computed = new Set([0, 1, 2, 7]);
      for (let i = 0; i < gpu.length; i++) {
        const problem = await sameOnDevice(device, gpu[i], cpu[i], computed.has(i) ? before : undefined);
        if (problem) return `result ${i}: ${problem}`;
      }
      return null;
    },
    async 'components already on the device are validated there'() {
      // Computed on the device (no host copy): the constructor validates them with kernels
      // there and gives a Promise of the matrix.
      const onDevice = async array => {
        const computed = gt.add(E.fromArray(array), E.fromArray(new array.constructor(array.length)));
        await computed.evaluate(device);
        return computed;
      };
      const parts = async (rowPtr, colVal) => ({rowPtr: await onDevice(Uint32Array.from(rowPtr)), colVal: await onDevice(Uint32Array.from(colVal)),
        nzVal: await onDevice(new Float32Array([1, 2, 3])), shape: [2, 3]});
      const kernels = device.stats.kernels;
      const made = SparseMatrix.fromCSR(await parts([0, 2, 3], [0, 2, 1]), {device});
      if (!(made instanceof Promise)) return 'device components were not validated on the device';
      const A = await made;
      if (device.stats.kernels <= kernels) return 'no validation kernel ran on the device';
      const dense = [...await A.toDense().readValue()];
      if (dense.join() !== '1,0,2,0,3,0') return `dense form ${dense}`;
      for (const [rowPtr, colVal, what] of [[[0, 3, 2], [0, 2, 1], 'a decreasing rowPtr'], [[0, 2, 3], [0, 3, 1], 'a column past the shape']]) {
        const error = await SparseMatrix.fromCSR(await parts(rowPtr, colVal), {device}).then(() => null, e => e);
        if (error?.code !== 'INVALID_ARGUMENT') return `${what} gave ${error?.code ?? 'a matrix'}`;
      }
      return null;
    },
    async 'a sparse vector as the operand of SpMV on the device'() {
      const x = {nzInd: Uint32Array.from({length: 50}, (_, i) => (i * 37) % 400), nzVal: Float32Array.from({length: 50}, (_, i) => i - 20), length: 400};
      const [gpu, cpu] = [await gt.SparseVector.fromArrays(x, {device}), gt.SparseVector.fromArrays(x)];
      return await sameOnDevice(device, SparseMatrix.fromCOO(fields, {device}).multiply(gpu), SparseMatrix.fromCOO(fields).multiply(cpu));
    },
    async 'every other entry point of the JS API on the device'() {
      // Each result was computed on the device by the time its operation resolved, or is
      // lazy and computed there by kernels when evaluated; it matches the CPU device's.
      const small = randomCoo(60, 50, 900, 5);
      const cells = Float32Array.from({length: 60 * 30}, (_, i) => (i * 7919 % 7 === 0 ? (i % 9) - 4 : 0));
      const entries = Float32Array.from({length: 80}, (_, i) => (i % 6 === 0 ? (i % 5) - 2 : 0));
      const x = Float32Array.from({length: 60}, (_, i) => (i % 4) - 1);
      const run = async settings => {
        const A = SparseMatrix.fromCOO(small, settings);
        const csc = await A.toCSC();
        const fromCsc = await SparseMatrix.fromCSC({colPtr: csc.colPtr, rowVal: csc.rowVal, nzVal: csc.nzVal, shape: csc.shape}, settings);
        const dense = E.fromArray(cells, {size: 30});
        const v = await gt.SparseVector.fromDense(E.fromArray(entries), settings);
        const evaluators = {
          fromCSC: fromCsc.toDense(),
          zeros: SparseMatrix.zeros([4, 5], {...settings, format: 'csc'}).toDense(),
          'fromDense csc': (await SparseMatrix.fromDense(dense, {...settings, format: 'csc'})).rowVal,
          'fromDense coo': (await SparseMatrix.fromDense(dense, {...settings, format: 'coo'})).colInd,
          toCOO: (await A.toCOO()).colInd,
          findnz: A.findnz().values,
          tril: (await A.tril(-2)).nzVal,
          'droptol of duplicates': (await A.droptol(1)).nzVal,
          add: (await gt.add(A, fromCsc)).nzVal,
          'multiply by a number': gt.multiply(2, A).nzVal,
          'divide by a number': gt.divide(A, 4).toDense(),
          'sqrt of abs': (await gt.sqrt(await gt.abs(A))).nzVal,
          sin: (await gt.sin(A)).nzVal,
          tan: (await gt.tan(A)).toDense(),
          'zeros coo': SparseMatrix.zeros([3, 2], {...settings, format: 'coo', type: 'sint32'}).toDense(),
          sum: gt.sum(A),
          'transposed SpMV': A.transpose().multiply(x),
          'vector indices': v.nzInd,
          'vector dense form': v.toDense(),
          'vector droptol': (await v.droptol(1)).nzVal,
          'vector findnz': v.findnz().values,
          'vector zeros': gt.SparseVector.zeros(5, settings).toDense(),
          'vector sum': gt.sum(v),
          'vector min': gt.min(v),
          'kron of vectors': (await gt.kron(v, v)).nzVal
        };
        // The device operations run on: the one given, else the default CPU device.
        const devices = [A.device, csc.device, v.device];
        if (devices.some(d => (settings ? d !== settings.device : d?.type !== 'cpu'))) throw new Error(`a matrix's device is ${devices.map(d => d?.type)}`);
        const numbers = [await A.norm(1), await A.norm(Infinity), await A.opnorm(Infinity), await A.isZero(), await v.norm(), await v.get(6)];
        return {evaluators, numbers};
      };
      const [gpu, cpu] = [await run({device}), await run(undefined)];
      for (const [name, evaluator] of Object.entries(gpu.evaluators)) {
        const computedOn = evaluator.device;
        if (computedOn !== null && computedOn !== device) return `${name}: computed on ${computedOn}`;
        // Computed on the device already: no new kernel needed; lazy: its own must run.
        const since = computedOn === device ? -1 : device.stats.kernels;
        const problem = await sameOnDevice(device, evaluator, cpu.evaluators[name], since);
        if (problem) return `${name}: ${problem}`;
      }
      return firstDifference(gpu.numbers.map(Number), cpu.numbers.map(Number), 1e-6);
    },
    async 'a row of 150,000 entries is summed whole on the device, SpMV and SpMM'() {
      // Past the 65,535 loop iterations llvmpipe and lavapipe give an invocation: the row's
      // whole blocks are summed by a pass of their own (ir/segment.rs), in the CPU's order.
      const lengths = [3, 150_000, 0, 9_000];
      const rowPtr = Uint32Array.from([0, ...lengths.map((_, i) => lengths.slice(0, i + 1).reduce((a, b) => a + b))]);
      const nnz = rowPtr[rowPtr.length - 1];
      const colVal = Uint32Array.from({length: nnz}, (_, k) => (k * 7) % 1000);
      // Eighths times small integers: exact products, so only the order of the sums counts.
      const nzVal = Float32Array.from({length: nnz}, (_, k) => ((k * 7919) % 2001 - 1000) / 8);
      const x = Float32Array.from({length: 1000}, (_, j) => (j % 11) - 5);
      // And SpMM by 16 columns: its products are stored, and each row's 16 lanes are added
      // inside one loop over the rows.
      const x16 = Float32Array.from({length: 16_000}, (_, j) => (j % 7) - 3);
      const on = (settings, operand) => SparseMatrix.fromCSR({rowPtr, colVal, nzVal, shape: [lengths.length, 1000]}, settings).multiply(operand);
      return await sameOnDevice(device, on({device}, x), on(undefined, x)) ??
        await sameOnDevice(device, on({device}, E.fromArray(x16, {size: 16})), on(undefined, E.fromArray(x16, {size: 16})));
    },
    async 'a million random entries: COO to CSR and SpMM on the device'() {
      const big = randomCoo(20_000, 30_000, 1_000_000, 3);
      const x = E.fromArray(Float32Array.from({length: 60_000}, (_, i) => (i % 5) - 2), {size: 2});
      const kernels = device.stats.kernels;
      const [gpu, cpu] = [await SparseMatrix.fromCOO(big, {device}).toCSR(), await SparseMatrix.fromCOO(big).toCSR()];
      // The device's own sort (WebGPU's radix passes, WebGL2's merge passes) keeps the whole
      // conversion under 100 kernels; with its 30 bits as one-bit split passes, WebGL2 ran
      // 358 (natively on llvmpipe).
      const conversion = device.stats.kernels - kernels;
      if (conversion >= 100) return `the conversion ran ${conversion} kernels`;
      // Computed by the time it resolves (one evaluation); the product when evaluated here.
      return await sameOnDevice(device, gpu.colVal, cpu.colVal, kernels) ??
        await sameOnDevice(device, gpu.nzVal, cpu.nzVal, kernels) ??
        await sameOnDevice(device, gpu.multiply(x), cpu.multiply(x));
    },
    async 'Promise.all of conversions on one device, and a matrix destroyed while it converts'() {
      const inputs = Array.from({length: 6}, (_, k) => randomCoo(200 + 10 * k, 300, 8_000 + 500 * k, 20 + k));
      const names = k => (k % 2 ? ['colPtr', 'rowVal', 'nzVal'] : ['rowPtr', 'colVal', 'nzVal']);
      const convert = (A, k) => (k % 2 ? A.toCSC() : A.toCSR());
      /** The problem with `got` (converted on the device) against the CPU's conversion of input k. */
      const compare = async (got, k) => {
        const want = await convert(SparseMatrix.fromCOO(inputs[k]), k);
        for (const name of names(k)) {
          const vector = await got[name].evaluate(device);
          if (vector.device !== device) return `${k}: ${name} is not on the device`;
          const problem = firstDifference(await got[name].readValue(), await want[name].readValue(), 0);
          if (problem) return `${k}: ${name}: ${problem}`;
        }
        return null;
      };
      const kernels = device.stats.kernels;
      const converted = await Promise.all(inputs.map((f, k) => convert(SparseMatrix.fromCOO(f, {device}), k)));
      if (device.stats.kernels <= kernels) return 'no kernel ran on the device';
      for (const k of inputs.keys()) {
        const problem = await compare(converted[k], k);
        if (problem) return problem;
      }
      // Destroyed while converting: the conversion finishes or says DESTROYED, and the
      // device converts as before after it.
      const A = SparseMatrix.fromCOO(inputs[0], {device});
      const pending = A.toCSR();
      A.destroy();
      try {
        const problem = await compare(await pending, 0);
        if (problem) return `converted after destroy: ${problem}`;
      } catch (error) {
        if (error.code !== 'DESTROYED') return `destroyed while converting: ${error.code}: ${error.message}`;
      }
      return compare(await SparseMatrix.fromCOO(inputs[0], {device}).toCSR(), 0);
    }
  };
  return runChecks(checks);
}
