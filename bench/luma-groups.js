// luma.gl 9.4.2 @luma.gl/gpgpu gpu-core classes as WebGPU peers for gputable's grouping
// benchmark (browser ES module). The page that imports it needs an import map for the bare
// specifiers inside luma's dist files (bench/gpu.html has it):
//   @luma.gl/core, @luma.gl/engine, @luma.gl/shadertools, @luma.gl/shadertools/wgsl,
//   @luma.gl/gpgpu/gpu-data, @math.gl/core, @math.gl/types, @probe.gl/env, @probe.gl/log,
//   @probe.gl/stats
// each mapped to /node_modules/<package>/dist/index.js (shadertools/wgsl: dist/wgsl.js,
// gpgpu/gpu-data: dist/gpu-data/index.js), the same URLs imported below, so that luma's core
// is one module instance.
//
// Every function uploads its inputs once, builds and compiles one GPUCommandGraph, and times
// (performance.now(), median of `runs` = 7 after `warmups` = 2): encode the compiled graph and a
// copy of its outputs into a GPUReadbackRing staging buffer in one command encoder, submit,
// map the staging buffer and view it as typed arrays. Outputs stay in separate GPU buffers;
// one staging buffer and one map per run carries them all.
//
// Each returns {ms, times, result, passes, graph}: `passes` is the number of compute
// dispatches one run records (counted on an untimed run by wrapping the compute pass);
// `graph` has luma's own encoding stats (graph nodes, physical compute passes: luma coalesces
// consecutive compute nodes into one pass by default).
import {luma, Buffer} from '/node_modules/@luma.gl/core/dist/index.js';
import {webgpuAdapter} from '/node_modules/@luma.gl/webgpu/dist/index.js';
import {
  GPUCommandGraph,
  GPUGroupAggregation,
  GPUHashIndex,
  GPUHashIndexQuery,
  GPUHashJoin,
  GPUHistogram,
  GPUReadbackRing
} from '/node_modules/@luma.gl/gpgpu/dist/gpu-core/index.js';

const RUNS = 7;
const WARMUPS = 2;
/** luma's literal-edge limit: more edges than this must live in a GPU buffer. */
const MAXIMUM_LITERAL_EDGE_COUNT = 257;

const deviceErrors = [];
let devicePromise;

/**
 * The one luma WebGPU device (created on first use). `featureLevel: 'max'` requests every
 * adapter feature (so subgroups where the adapter has them: luma then picks its subgroup
 * kernels) and the adapter's maximum limits. Device errors are collected and rethrown by the
 * op that caused them.
 */
export function getLumaDevice() {
  devicePromise ??= luma.createDevice({
    type: 'webgpu',
    adapters: [webgpuAdapter],
    featureLevel: 'max',
    onError: error => {
      deviceErrors.push(error?.message ?? String(error));
      return true;
    }
  });
  return devicePromise;
}

/** True if a luma WebGPU device can be created here. */
export async function lumaAvailable() {
  try {
    const device = await getLumaDevice();
    return device.type === 'webgpu' && !device.isLost;
  } catch {
    devicePromise = undefined;
    return false;
  }
}

/** What luma reports about the device: adapter, subgroup support, limits used by the graphs. */
export async function lumaDeviceInfo() {
  const device = await getLumaDevice();
  return {
    gpu: device.info.gpu,
    vendor: device.info.vendor,
    renderer: device.info.renderer,
    subgroups: device.features.has('subgroups'),
    subgroupId: device.wgslLanguageFeatures.has('subgroup_id'),
    maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
    maxBufferSize: device.limits.maxBufferSize
  };
}

/**
 * Equal-width histogram: GPUHistogram with a literal `domain` (inclusive at both ends) and a
 * `bins`-row uint32 output. Bin = min(u32(f32((v - lo) / (hi - lo)) * bins), bins - 1) in f32,
 * v == hi counts in the last bin; values outside [lo, hi], NaN and +-Inf are ignored.
 * Dispatches: 2 (clear, accumulate; workgroup-local atomics up to 256 bins, subgroup-coalesced
 * up to 16 bins where the device has subgroups). result: Uint32Array(bins).
 */
export async function lumaHistogram({values, bins = 24, domain = [-100, 100], runs = RUNS, warmups = WARMUPS}) {
  const device = await getLumaDevice();
  return withResources(device, async own => {
    const graph = new GPUCommandGraph(device, {id: 'luma-histogram'});
    const input = importView(graph, own, 'values', values, 'float32');
    const output = importOutput(graph, own, 'counts', 'uint32', bins);
    new GPUHistogram({id: 'histogram', input, output: output.view, domain: [domain[0], domain[1]]}).addToGraph(graph);
    const compiled = own(graph.compile());
    return timeGraph(device, own, compiled, [output], ([counts]) => counts, {runs, warmups});
  });
}

/**
 * Irregular-edge histogram: GPUHistogram with `edges` (strictly increasing; edges.length - 1
 * bins). Bin i holds edges[i] <= v < edges[i + 1]; the last bin also holds v == edges[last]
 * (binary search for the first edge above v); values below the first edge, above the last,
 * NaN and +-Inf are ignored. Up to 257 edges luma compiles them into the shader as literals
 * (`edgesIn: 'auto'`); more (e.g. 1,001) are a GPU buffer, and then luma adds a
 * one-workgroup pass that validates their order on the GPU every run. Over 256 bins it
 * accumulates with global atomics (no workgroup-local counts). Dispatches: 3 with a GPU edge
 * buffer (validate edges, clear, accumulate), 2 with literals. result: Uint32Array(bins).
 */
export async function lumaHistogramEdges({values, edges, edgesIn = 'auto', runs = RUNS, warmups = WARMUPS}) {
  const device = await getLumaDevice();
  const edgeArray = Float32Array.from(edges);
  const literal = edgesIn === 'literal' || (edgesIn === 'auto' && edgeArray.length <= MAXIMUM_LITERAL_EDGE_COUNT);
  return withResources(device, async own => {
    const graph = new GPUCommandGraph(device, {id: 'luma-histogram-edges'});
    const input = importView(graph, own, 'values', values, 'float32');
    const output = importOutput(graph, own, 'counts', 'uint32', edgeArray.length - 1);
    const edgeProp = literal ? Array.from(edgeArray) : importView(graph, own, 'edges', edgeArray, 'float32');
    new GPUHistogram({id: 'histogram-edges', input, output: output.view, edges: edgeProp}).addToGraph(graph);
    const compiled = own(graph.compile());
    const timed = await timeGraph(device, own, compiled, [output], ([counts]) => counts, {runs, warmups});
    return {...timed, edgesIn: literal ? 'literal' : 'gpu-buffer'};
  });
}

/**
 * Dense group aggregation: one GPUGroupAggregation per operation in `operations` (default
 * count, sum and mean, as G1/G2 ask), all in one graph. luma computes one statistic per
 * GPUGroupAggregation; keys >= `groups` are ignored.
 *   count: Uint32Array(groups), rows per key (all rows; values are not read).
 *   sum:   Float32Array(groups), f32 compare-exchange atomic adds (order varies run to run);
 *          NaN/Inf values are skipped; empty groups 0.
 *   mean:  Float32Array(groups), luma's own sum and count of the finite values (it repeats
 *          the accumulation; count and sum are not shared), then sum / count; empty groups NaN.
 * Up to 256 groups count uses workgroup-local atomics; sum/mean always use global atomics
 * (subgroup-coalesced when the device has subgroups and groups <= 16). Dispatches: count 2
 * (clear, count), sum 2 (clear, add), mean 3 (initialize, add + count, divide): 7 for all three.
 * result: {count, sum, mean} (those requested).
 */
export async function lumaGroupAggregation({keys, values, groups, operations = ['count', 'sum', 'mean'], runs = RUNS, warmups = WARMUPS}) {
  const device = await getLumaDevice();
  return withResources(device, async own => {
    const graph = new GPUCommandGraph(device, {id: 'luma-group-aggregation'});
    const keyView = importView(graph, own, 'keys', keys, 'uint32');
    const valueView = operations.some(op => op !== 'count') ? importView(graph, own, 'values', values, 'float32') : undefined;
    const outputs = operations.map(op => {
      const output = importOutput(graph, own, op, op === 'count' ? 'uint32' : 'float32', groups);
      new GPUGroupAggregation(op === 'count'
        ? {id: `group-${op}`, keys: keyView, output: output.view, operation: 'count'}
        : {id: `group-${op}`, keys: keyView, values: valueView, output: output.view, operation: op}
      ).addToGraph(graph);
      return output;
    });
    const compiled = own(graph.compile());
    return timeGraph(device, own, compiled, outputs, arrays => Object.fromEntries(operations.map((op, i) => [op, arrays[i]])), {runs, warmups});
  });
}

/**
 * Many-to-one lookup of every probe key in a table of build keys.
 *
 * The index: GPUHashIndex (open addressing, linear probing, power-of-two capacity
 * >= buildKeys.length / `loadFactor`; probe bound `maxProbeCount`, by default the largest luma
 * accepts: min(capacity, floor(0xffffffff / max(rows)))) from buildKeys to build row IDs,
 * or to `buildValues` when given (Float32Array values are stored as their bits). A duplicated
 * build key keeps the value of its lowest build row. Key 0xffffffff is reserved (ignored in
 * the build). With `rebuild` (default) the index is rebuilt inside the timed graph every run,
 * as a lookup that starts from the two key columns; `rebuild: false` builds it once before
 * timing and times only the probe side.
 *
 * mode 'join' (default): GPUHashJoin, a stable inner join with output capacity
 *   probeKeys.length: probe rows without a match are dropped; result {count, overflow,
 *   leftRows: Uint32Array(count) probe row IDs ascending, right: Uint32Array(count) of the
 *   matched build row IDs, or of buildValues (same type as given)}. Dispatches at 100k rows:
 *   12 (index initialize, build, finalize; query initialize, lookup; a 3-level GPUScan of the
 *   found flags, 5 dispatches; scatter; build-overflow propagation), 9 with `rebuild: false`.
 *   overflow is 1 if the build overflowed its table/probe bound (luma's index statistics).
 * mode 'query': GPUHashIndexQuery, one row per probe: result {values: Uint32Array(n) build
 *   row ID or 0xffffffff on a miss, or buildValues' type with `found` (Uint32Array, 0/1)
 *   read as well}. Dispatches: 5 (index initialize, build, finalize; query initialize, lookup).
 */
export async function lumaLookup({probeKeys, buildKeys, buildValues, mode = 'join', rebuild = true, loadFactor = 0.5, maxProbeCount, runs = RUNS, warmups = WARMUPS}) {
  const device = await getLumaDevice();
  const n = probeKeys.length;
  const capacity = nextPowerOfTwo(Math.max(2, Math.ceil(buildKeys.length / loadFactor)));
  // luma requires rows * maxProbeCount to fit its uint32 probe statistics, on both sides.
  const probeBound = maxProbeCount ?? Math.min(capacity, Math.floor(0xffffffff / Math.max(n, buildKeys.length, 1)));
  const valueBits = buildValues === undefined ? undefined
    : buildValues instanceof Float32Array ? new Uint32Array(buildValues.buffer, buildValues.byteOffset, buildValues.length)
      : Uint32Array.from(buildValues);
  const asValues = array => buildValues instanceof Float32Array ? new Float32Array(array.buffer, array.byteOffset, array.length) : array;
  return withResources(device, async own => {
    const graph = new GPUCommandGraph(device, {id: `luma-lookup-${mode}`});
    const probeView = importView(graph, own, 'probe-keys', probeKeys, 'uint32');
    let index;
    if (rebuild) {
      const tableKeys = transientView(graph, 'table-keys', capacity);
      const tableValues = transientView(graph, 'table-values', capacity);
      const statistics = transientView(graph, 'index-statistics', 6);
      index = new GPUHashIndex({
        id: 'hash-index', keys: importView(graph, own, 'build-keys', buildKeys, 'uint32'),
        ...(valueBits ? {values: importView(graph, own, 'build-values', valueBits, 'uint32')} : {}),
        tableKeys, tableValues, statistics, maxProbeCount: probeBound
      });
      index.addToGraph(graph);
    } else {
      // A GPUHashIndexView over the buffers of an index built once, imported into this graph.
      const built = await buildIndexOnce(device, own, buildKeys, valueBits, capacity, probeBound);
      index = {
        tableKeys: importBufferView(graph, 'table-keys', built.tableKeysBuffer, 'uint32', capacity),
        tableValues: importBufferView(graph, 'table-values', built.tableValuesBuffer, 'uint32', capacity),
        statistics: importBufferView(graph, 'index-statistics', built.statisticsBuffer, 'uint32', 6),
        maxProbeCount: probeBound
      };
    }
    let outputs, decode;
    if (mode === 'join') {
      const leftRows = importOutput(graph, own, 'left-rows', 'uint32', n);
      const rightRows = importOutput(graph, own, 'right-rows', 'uint32', n);
      const count = importOutput(graph, own, 'count', 'uint32', 1);
      const overflow = importOutput(graph, own, 'overflow', 'uint32', 1);
      const statistics = transientView(graph, 'join-statistics', 4);
      new GPUHashJoin({
        id: 'hash-join', index, keys: probeView, outputLeftRows: leftRows.view, outputRightRows: rightRows.view,
        count: count.view, overflow: overflow.view, statistics
      }).addToGraph(graph);
      outputs = [leftRows, rightRows, count, overflow];
      decode = ([left, right, [matched], [overflowed]]) => {
        const kept = Math.min(matched, n);
        return {count: matched, overflow: overflowed, leftRows: left.subarray(0, kept), right: asValues(right.subarray(0, kept))};
      };
    } else if (mode === 'query') {
      const values = importOutput(graph, own, 'values', 'uint32', n);
      // `found` is read only where a miss cannot be told from a value (buildValues given).
      const found = valueBits ? importOutput(graph, own, 'found', 'uint32', n) : undefined;
      new GPUHashIndexQuery({
        id: 'hash-query', index, keys: probeView, values: values.view, found: found?.view ?? transientView(graph, 'found', n),
        probes: transientView(graph, 'probes', n), statistics: transientView(graph, 'query-statistics', 4)
      }).addToGraph(graph);
      outputs = valueBits ? [values, found] : [values];
      decode = ([rows, foundFlags]) => (valueBits ? {values: asValues(rows), found: foundFlags} : {values: rows});
    } else {
      throw new Error(`lumaLookup mode must be 'join' or 'query', not ${mode}`);
    }
    const compiled = own(graph.compile());
    const timed = await timeGraph(device, own, compiled, outputs, decode, {runs, warmups});
    return {...timed, capacity, maxProbeCount: probeBound, mode, rebuild};
  });
}

// ---------------------------------------------------------------------------------------------

/** Runs `body(own)`; everything passed to own() is destroyed afterwards. Rethrows device errors. */
async function withResources(device, body) {
  const owned = [];
  const own = resource => (owned.push(resource), resource);
  const firstError = deviceErrors.length;
  try {
    const value = await body(own);
    await device.handle.queue.onSubmittedWorkDone();
    await new Promise(resolve => setTimeout(resolve, 0));
    if (deviceErrors.length > firstError) throw new Error(`luma device errors: ${deviceErrors.slice(firstError).join(' | ')}`);
    return value;
  } catch (error) {
    if (deviceErrors.length > firstError && !String(error?.message).startsWith('luma device errors')) {
      error.message = `${error.message} (luma device errors: ${deviceErrors.slice(firstError).join(' | ')})`;
    }
    throw error;
  } finally {
    for (const resource of owned.reverse()) resource.destroy();
  }
}

const GRAPH_INPUT_USAGE = Buffer.STORAGE | Buffer.COPY_DST;
const GRAPH_OUTPUT_USAGE = Buffer.STORAGE | Buffer.COPY_SRC;

/** Uploads a typed array once and imports it into the graph as a packed view. */
function importView(graph, own, id, array, format) {
  const buffer = own(graph.device.createBuffer({id: `luma-${id}`, usage: GRAPH_INPUT_USAGE, data: array}));
  return importBufferView(graph, id, buffer, format, array.length);
}

function importBufferView(graph, id, buffer, format, length) {
  const handle = graph.importBuffer({id, byteLength: buffer.byteLength, usage: buffer.usage}, buffer);
  return graph.createDataView(handle, {format, length});
}

/** A caller-owned output buffer the timed runs copy to the staging buffer and read. */
function importOutput(graph, own, id, format, length) {
  const byteLength = Math.max(length, 1) * 4;
  const buffer = own(graph.device.createBuffer({id: `luma-out-${id}`, usage: GRAPH_OUTPUT_USAGE, byteLength}));
  const view = importBufferView(graph, id, buffer, format, length);
  return {id, buffer, view, format, length, byteLength: length * 4};
}

/** Graph-owned scratch: index tables, and outputs luma requires but the runs do not read. */
function transientView(graph, id, length) {
  const handle = graph.createTransientBuffer({id, byteLength: Math.max(length, 1) * 4, usage: Buffer.STORAGE});
  return graph.createDataView(handle, {format: 'uint32', length});
}

/** Builds a GPUHashIndex once (its own graph, run once) into buffers a probe graph imports. */
async function buildIndexOnce(device, own, buildKeys, valueBits, capacity, maxProbeCount) {
  const graph = new GPUCommandGraph(device, {id: 'luma-index-build'});
  const make = (id, length) => own(device.createBuffer({id: `luma-${id}`, usage: Buffer.STORAGE | Buffer.COPY_SRC, byteLength: length * 4}));
  const tableKeysBuffer = make('table-keys', capacity);
  const tableValuesBuffer = make('table-values', capacity);
  const statisticsBuffer = make('index-statistics', 6);
  new GPUHashIndex({
    id: 'hash-index', keys: importView(graph, own, 'build-keys', buildKeys, 'uint32'),
    ...(valueBits ? {values: importView(graph, own, 'build-values', valueBits, 'uint32')} : {}),
    tableKeys: importBufferView(graph, 'table-keys', tableKeysBuffer, 'uint32', capacity),
    tableValues: importBufferView(graph, 'table-values', tableValuesBuffer, 'uint32', capacity),
    statistics: importBufferView(graph, 'index-statistics', statisticsBuffer, 'uint32', 6),
    maxProbeCount
  }).addToGraph(graph);
  const compiled = own(graph.compile());
  const encoder = device.createCommandEncoder({id: 'luma-index-build'});
  compiled.encode(encoder, {parameters: undefined});
  device.submit(encoder.finish());
  await device.handle.queue.onSubmittedWorkDone();
  return {tableKeysBuffer, tableValuesBuffer, statisticsBuffer};
}

/**
 * Times encode + submit + readback of a compiled graph. All `outputs` are copied into one
 * ring slot (8-byte-aligned offsets) in the graph's command encoder; one map reads them.
 */
async function timeGraph(device, own, compiled, outputs, decode, {runs, warmups}) {
  let offset = 0;
  const layout = outputs.map(output => {
    const at = offset;
    offset = Math.ceil((at + output.byteLength) / 8) * 8;
    return at;
  });
  const ring = own(new GPUReadbackRing(device, {id: `${compiled.id}-readback`, byteLength: Math.max(offset, 8), slotCount: 2}));

  const runOnce = async countDispatches => {
    const ticket = await ring.acquire();
    const encoder = device.createCommandEncoder({id: `${compiled.id}-run`});
    const counter = countDispatches ? countComputeDispatches(encoder) : undefined;
    const encoding = compiled.encode(encoder, {parameters: undefined});
    outputs.forEach((output, i) => {
      if (output.byteLength > 0) {
        encoder.copyBufferToBuffer({sourceBuffer: output.buffer, sourceOffset: 0, destinationBuffer: ticket.buffer, destinationOffset: layout[i], size: output.byteLength});
      }
    });
    ticket.markEncoded({byteOffset: 0, byteLength: Math.max(offset, 8)});
    device.submit(encoder.finish());
    const bytes = await ticket.read();
    const arrays = outputs.map((output, i) =>
      output.format === 'float32'
        ? new Float32Array(bytes.buffer, bytes.byteOffset + layout[i], output.length)
        : new Uint32Array(bytes.buffer, bytes.byteOffset + layout[i], output.length));
    return {result: decode(arrays), encoding, dispatches: counter?.()};
  };

  // Untimed: compiles pipelines on first use and counts the dispatches one run records.
  const first = await runOnce(true);
  for (let i = 0; i < warmups; i++) await runOnce(false);
  const times = [];
  let last = first;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    last = await runOnce(false);
    times.push(performance.now() - t0);
  }
  const {nodeCount, computePassCount, coalescedComputeNodeCount} = first.encoding.stats;
  return {
    ms: median(times),
    times,
    result: last.result,
    passes: first.dispatches,
    graph: {nodes: nodeCount, computeNodes: computePassCount + coalescedComputeNodeCount, computePasses: computePassCount, nodeIds: first.encoding.stats.nodes.map(node => node.id)}
  };
}

/** Wraps the encoder's compute passes so one run's dispatches are counted (untimed run only). */
function countComputeDispatches(encoder) {
  let count = 0;
  const beginComputePass = encoder.beginComputePass.bind(encoder);
  encoder.beginComputePass = props => {
    const pass = beginComputePass(props);
    for (const name of ['dispatch', 'dispatchIndirect']) {
      const original = pass[name].bind(pass);
      pass[name] = (...args) => {
        count++;
        return original(...args);
      };
    }
    return pass;
  };
  return () => count;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function nextPowerOfTwo(value) {
  return 2 ** Math.ceil(Math.log2(value));
}
