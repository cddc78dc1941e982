// W6, shared by the Node (CPU) and browser (WebGPU, WebGL2) benchmarks: CSR SpMV of an m x m
// float32 matrix with `perRow` entries per row, and COO (unsorted, one entry in ten a
// duplicate) to canonical CSR. The data, the JS loops and the tfjs peer (SpMV as gather +
// unsortedSegmentSum) live here so every engine runs on the same arrays.

function xorshift(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** An m x m CSR matrix, `perRow` sorted distinct-ish columns per row, and x. */
export function spmvData(m, perRow, seed = 1) {
  const next = xorshift(seed);
  const nnz = m * perRow;
  const rowPtr = new Uint32Array(m + 1);
  const colVal = new Uint32Array(nnz);
  const nzVal = new Float32Array(nnz);
  const rowIds = new Int32Array(nnz);
  for (let i = 0; i < m; i++) {
    rowPtr[i + 1] = (i + 1) * perRow;
    const row = colVal.subarray(i * perRow, (i + 1) * perRow);
    for (let k = 0; k < perRow; k++) row[k] = Math.floor(next() * m);
    row.sort();
    rowIds.fill(i, i * perRow, (i + 1) * perRow);
  }
  for (let k = 0; k < nnz; k++) nzVal[k] = next() * 2 - 1;
  const x = Float32Array.from({length: m}, () => next() * 2 - 1);
  return {m, nnz, rowPtr, colVal, nzVal, rowIds, x};
}

/** `entries` COO entries of an m x m matrix in random order; every tenth repeats a cell. */
export function cooData(m, entries, seed = 2) {
  const next = xorshift(seed);
  const rowInd = new Uint32Array(entries);
  const colInd = new Uint32Array(entries);
  const nzVal = new Float32Array(entries);
  for (let k = 0; k < entries; k++) {
    const repeat = k % 10 === 9;
    const from = repeat ? Math.floor(next() * k) : k;
    rowInd[k] = repeat ? rowInd[from] : Math.floor(next() * m);
    colInd[k] = repeat ? colInd[from] : Math.floor(next() * m);
    nzVal[k] = next() * 2 - 1;
  }
  return {m, nnz: entries, rowInd, colInd, nzVal};
}

/** Bytes an SpMV must move: pointers, indices, values, one x per entry, y. */
export const spmvBytes = d => 4 * (d.m + 1) + 12 * d.nnz + 4 * d.m;
/** Bytes a conversion must move: the entries read, the CSR written. */
export const convertBytes = d => 24 * d.nnz + 4 * (d.m + 1);

/** y = A x as a JS user writes it. */
export function jsSpmv(d) {
  const {m, rowPtr, colVal, nzVal, x} = d;
  return () => {
    const y = new Float32Array(m);
    for (let i = 0; i < m; i++) {
      let sum = 0;
      for (let k = rowPtr[i]; k < rowPtr[i + 1]; k++) sum += nzVal[k] * x[colVal[k]];
      y[i] = sum;
    }
    return y;
  };
}

/**
 * COO to canonical CSR in JS, scipy's way: a counting sort by row, an insertion sort of
 * each row's columns, then duplicates summed in place.
 */
export function jsCooToCsr(d) {
  const {m, nnz, rowInd, colInd, nzVal} = d;
  return () => {
    const rowPtr = new Uint32Array(m + 1);
    for (let k = 0; k < nnz; k++) rowPtr[rowInd[k] + 1]++;
    for (let i = 0; i < m; i++) rowPtr[i + 1] += rowPtr[i];
    const next = rowPtr.slice(0, m);
    const cols = new Uint32Array(nnz);
    const vals = new Float32Array(nnz);
    for (let k = 0; k < nnz; k++) {
      const at = next[rowInd[k]]++;
      cols[at] = colInd[k];
      vals[at] = nzVal[k];
    }
    let out = 0;
    for (let i = 0; i < m; i++) {
      const [start, end] = [rowPtr[i], rowPtr[i + 1]];
      for (let k = start + 1; k < end; k++) {
        const [c, v] = [cols[k], vals[k]];
        let j = k - 1;
        for (; j >= start && cols[j] > c; j--) {
          cols[j + 1] = cols[j];
          vals[j + 1] = vals[j];
        }
        cols[j + 1] = c;
        vals[j + 1] = v;
      }
      rowPtr[i] = out;
      for (let k = start; k < end; k++) {
        if (k > start && cols[k] === cols[out - 1]) {
          vals[out - 1] += vals[k];
        } else {
          cols[out] = cols[k];
          vals[out++] = vals[k];
        }
      }
    }
    rowPtr[m] = out;
    return {rowPtr, colVal: cols.slice(0, out), nzVal: vals.slice(0, out)};
  };
}

/**
 * The most rows tfjs's SpMV runs at: its cpu kernel of unsortedSegmentSum builds one mask
 * over every entry per segment (O(entries x rows): a 1M-row product never finishes).
 */
export const TFJS_MAX_ROWS = 1e4;

/** tfjs SpMV: y = unsortedSegmentSum(values * gather(x, cols), rows, m), read back. */
export function tfSpmv(tf, d) {
  const x = tf.tensor1d(d.x);
  const cols = tf.tensor1d(Int32Array.from(d.colVal), 'int32');
  const values = tf.tensor1d(d.nzVal);
  const rows = tf.tensor1d(d.rowIds, 'int32');
  return {
    run: async () => {
      const y = tf.tidy(() => tf.unsortedSegmentSum(tf.mul(values, tf.gather(x, cols)), rows, d.m));
      await y.data();
      y.dispose();
    },
    dispose: () => tf.dispose([x, cols, values, rows])
  };
}

/** Components as evaluators resident on `device` (uploaded once, outside the timings). */
async function resident(gt, device, arrays) {
  const evaluators = arrays.map(a => gt.GPUTableEvaluator.fromArray(a));
  for (const e of evaluators) await e.evaluate(device);
  return evaluators;
}

/** gputable SpMV on `device`: A x evaluated and read back. */
export async function gputableSpmv(gt, d, device) {
  const [rowPtr, colVal, nzVal, x] = await resident(gt, device, [d.rowPtr, d.colVal, d.nzVal, d.x]);
  const A = await gt.SparseMatrix.fromCSR({rowPtr, colVal, nzVal, shape: [d.m, d.m]}, {device});
  return {
    run: async () => {
      const y = A.multiply(x);
      await y.evaluate(device);
      await y.readValue();
      y.destroy();
    },
    explain: () => {
      const y = A.multiply(x);
      try {
        return y.explain(device);
      } finally {
        y.destroy();
      }
    },
    dispose: () => [A, rowPtr, colVal, nzVal, x].forEach(o => o.destroy())
  };
}

/** gputable COO to canonical CSR on `device`, its three components evaluated there. */
export async function gputableCooToCsr(gt, d, device) {
  const [rowInd, colInd, nzVal] = await resident(gt, device, [d.rowInd, d.colInd, d.nzVal]);
  const A = await gt.SparseMatrix.fromCOO({rowInd, colInd, nzVal, shape: [d.m, d.m]}, {device});
  return {
    run: async () => {
      const csr = await A.toCSR();
      await gt.cleanEvaluate(device, [csr.rowPtr, csr.colVal, csr.nzVal]);
      await csr.nzVal.readValue(0, 1);
      csr.destroy();
    },
    dispose: () => [A, rowInd, colInd, nzVal].forEach(o => o.destroy())
  };
}

/**
 * The straightforward WebGPU SpMV a user would write: one thread per row walking its
 * entries, y copied to a mappable buffer and read.
 */
export async function naiveWgslSpmv(gpu, d) {
  const usage = globalThis.GPUBufferUsage;
  const upload = data => {
    const buffer = gpu.createBuffer({size: data.byteLength, usage: usage.STORAGE | usage.COPY_DST});
    gpu.queue.writeBuffer(buffer, 0, data);
    return buffer;
  };
  const inputs = [d.rowPtr, d.colVal, d.nzVal, d.x].map(upload);
  const y = gpu.createBuffer({size: 4 * d.m, usage: usage.STORAGE | usage.COPY_SRC});
  const read = gpu.createBuffer({size: 4 * d.m, usage: usage.MAP_READ | usage.COPY_DST});
  const shader = await fetch(new URL('./naive-spmv.wgsl', import.meta.url));
  if (!shader.ok) throw new Error(`bench/naive-spmv.wgsl: HTTP ${shader.status}`);
  const code = await shader.text();
  const module = gpu.createShaderModule({code});
  const pipeline = gpu.createComputePipeline({layout: 'auto', compute: {module, entryPoint: 'main'}});
  const bindings = gpu.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [...inputs, y].map((buffer, binding) => ({binding, resource: {buffer}}))
  });
  const groups = Math.ceil(d.m / 64);
  const [gx, gy] = groups > 65535 ? [65535, Math.ceil(groups / 65535)] : [groups, 1];
  return {
    run: async () => {
      const encoder = gpu.createCommandEncoder();
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindings);
      pass.dispatchWorkgroups(gx, gy);
      pass.end();
      encoder.copyBufferToBuffer(y, 0, read, 0, 4 * d.m);
      gpu.queue.submit([encoder.finish()]);
      await read.mapAsync(globalThis.GPUMapMode.READ);
      new Float32Array(read.getMappedRange()).slice();
      read.unmap();
    },
    dispose: () => [...inputs, y, read].forEach(b => b.destroy())
  };
}
