// The text demo of `npm run demo` (www/demo-node.js): a deterministic table of 1M taxi
// trips and a chain of lazy, fused computations over it. scripts/make-sample-arrow.js
// writes the bundled Arrow file from the same trips; the page (www/app.js) has its own.
import {xorshift} from './random.js';

/** Deterministic sample data: pickup/dropoff positions (km), fare, passengers, start time. */
export function makeTrips(rows) {
  const random = xorshift(0x9e3779b9);
  const pickup = new Float32Array(rows * 2);
  const dropoff = new Float32Array(rows * 2);
  const fare = new Float32Array(rows);
  const passengers = new Uint8Array(rows);
  const startTime = new Float64Array(rows);
  for (let i = 0; i < rows; i++) {
    const x = random() * 30 - 15, y = random() * 20 - 10;
    const dx = (random() - 0.5) * 12, dy = (random() - 0.5) * 12;
    pickup[2 * i] = x; pickup[2 * i + 1] = y;
    dropoff[2 * i] = x + dx; dropoff[2 * i + 1] = y + dy;
    fare[i] = 3 + Math.hypot(dx, dy) * 1.8 + random() * 4;
    passengers[i] = 1 + Math.floor(random() * random() * 6);
    // Milliseconds since 1970: more precision than float32 has, hence fround().
    startTime[i] = 1.7e12 + i * 2500 + random() * 1000;
  }
  return {rows, pickup, dropoff, fare, passengers, startTime};
}

const mb = bytes => `${(bytes / 1e6).toFixed(2)} MB`;
const round = v => (Number.isInteger(v) ? String(v) : Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4));
const rowsOf = (values, size, count) =>
  Array.from({length: count}, (_, r) => `[${Array.from(values.subarray(r * size, r * size + size), round).join(', ')}]`).join(' ');

/** Runs the demo with the package `gt` on `device`, reporting lines through `print`. */
export async function runDemo(gt, device, trips, print) {
  const {GPUTableEvaluator: E} = gt;
  const timings = [];
  const timed = async (label, evaluator) => {
    const t = performance.now();
    await evaluator.evaluate(device);
    const ms = performance.now() - t;
    timings.push([label, ms]);
    return evaluator;
  };

  let t = performance.now();
  const pickup = E.fromArray(trips.pickup, {size: 2});
  const dropoff = E.fromArray(trips.dropoff, {size: 2});
  const fare = E.fromArray(trips.fare);
  const passengers = E.fromArray(trips.passengers);
  const startTime = E.fromArray(trips.startTime);
  timings.push(['fromArray 5 columns (host memory)', performance.now() - t]);
  print(`${trips.rows.toLocaleString('en-US')} trips on the ${device.type} device`);

  // Trip length, fare per km (0 for zero-length trips), and a per-passenger fare: one fused pass.
  const distance = gt.length(gt.subtract(dropoff, pickup));
  const farePerKm = gt.select(gt.greater(distance, 0), gt.divide(fare, distance), 0);
  const perPassenger = gt.divide(fare, passengers);
  const stats = gt.interleave(distance, farePerKm, perPassenger);
  print('\nplan for interleave(distance, farePerKm, perPassenger):\n' + stats.explain(device).trimEnd());
  await timed('distance, fare/km, fare/passenger (fused)', stats);
  print(`first rows [km, fare/km, fare/passenger]: ${rowsOf(await stats.readValue(0, 3), 3, 3)}`);

  // Bounding box of pickups and the range of each statistic (extent with a fused prologue).
  const box = await timed('extent(pickup)', gt.extent(pickup));
  print(`pickup extent [min, max] per axis: ${rowsOf(await box.readValue(), 2, 2)}`);
  const ranges = await timed('extent(stats)', gt.extent(stats));
  print(`stats extent: ${rowsOf(await ranges.readValue(), 2, 3)}`);

  // Unit direction of each trip, scaled by 1/km: rows with size 2.
  const direction = gt.divide(gt.subtract(dropoff, pickup), distance);
  await timed('direction = (dropoff - pickup) / km', direction);
  print(`first directions: ${rowsOf(await direction.readValue(0, 2), 2, 2)}`);

  // Reverse the table with a gather of a sequence (ids computed, rows fetched by id).
  const reversed = gt.gather(gt.sequence(trips.rows, trips.rows - 1, -1), fare);
  await timed('gather(sequence) reversal of fare', reversed);
  print(`last fares via reversal: ${rowsOf(await reversed.readValue(0, 3), 1, 3)}`);

  // Polylines: 3 paths of 4, 0 and 5 vertices; segmentedMap labels each vertex.
  const segments = E.fromArray([0, 4, 4], {type: 'uint32'});
  const labels = await timed('segmentedMap', gt.segmentedMap(segments, 9));
  print(`segmentedMap([0, 4, 4], 9) = ${rowsOf(await labels.readValue(), 2, 9)}`);

  // Float64 timestamps split into float32 high/low parts for fp64-style GPU math.
  const split = await timed('fround(startTime)', gt.fround(startTime));
  const parts = await split.readValue(0, 1);
  print(`startTime[0] = ${trips.startTime[0]} -> high ${parts[0]} + low ${parts[1]} (sum ${parts[0] + parts[1]})`);

  // Passengers on trips with a fare above 20: a predicate, a masked reduction in one pass.
  const pricey = gt.greater(fare, 20);
  const counted = await timed('mean(passengers, {where: fare > 20})', gt.mean(passengers, {where: pricey}));
  print(`mean passengers on trips over $20: ${rowsOf(await counted.readValue(), 1, 1)}`);

  print('\ntimings (ms):');
  for (const [label, ms] of timings) print(`  ${ms.toFixed(2).padStart(8)}  ${label}`);
  const {uploadBytes, readbackBytes, kernels, pipelines} = device.stats;
  print(`device: ${kernels} kernels, ${pipelines} pipelines compiled, ${mb(uploadBytes)} uploaded, ${mb(readbackBytes)} read back (only the rows printed)`);
  print(`memory: ${mb(device.memory.liveBytes)} live, ${mb(device.memory.pooledBytes)} pooled, ${mb(device.memory.peakBytes)} at most`);
  for (const e of [pickup, dropoff, fare, passengers, startTime]) e.destroy();
  return timings;
}

/**
 * The bundled Arrow IPC file (www/data/trips.arrow): read into a GPUTable, computed on batch
 * by batch, written back as Arrow IPC, then packed into one batch.
 */
export async function runArrowDemo(gt, device, bytes, print) {
  const t0 = performance.now();
  const table = await gt.GPUTable.fromArrowIPC(bytes, {device});
  const loadMs = performance.now() - t0;
  print(`\nArrow IPC: ${bytes.length.toLocaleString('en-US')} bytes -> GPUTable of ${table.numRows.toLocaleString('en-US')} rows in ${table.batches.length} batches (${loadMs.toFixed(1)} ms)`);
  for (const field of table.schema.fields) {
    print(`  ${field.name.padEnd(10)} ${field.format.padEnd(10)} from ${field.metadata.arrowType}${field.nullable ? ', nullable' : ''}`);
  }
  const fare = table.getVector('fare');
  const km = gt.length(gt.subtract(table.getVector('dropoff'), table.getVector('pickup')));
  // A null fare gives a null price: nulls flow through the expression, reductions skip them.
  const perKm = gt.divide(fare, km);
  const t1 = performance.now();
  const out = await perKm.evaluate(device);
  print(`fare per km, batch by batch: ${out.data.length} output chunks, first ${rowsOf(await perKm.readValue(0, 4), 1, 4)} (${(performance.now() - t1).toFixed(1)} ms)`);
  const [missing] = await gt.count(gt.isNull(fare)).readValue();
  print(`missing fares: ${missing}; fare per km extent: ${rowsOf(await gt.extent(perKm).readValue(), 2, 1)}`);
  const ipc = await perKm.toArrowIPC('farePerKm');
  print(`toArrowIPC: ${ipc.length.toLocaleString('en-US')} bytes, ${out.data.length} record batches`);
  await table.packBatches();
  print(`packBatches(): ${table.batches.length} batch of ${table.numRows.toLocaleString('en-US')} rows; layout ${table.bufferLayout.map(l => `${l.name}:${l.attributes[0].format}`).join(' ')}`);
  perKm.destroy();
  table.destroy();
}
