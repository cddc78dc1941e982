// The demo page (`npm run serve`, then http://localhost:8080/www/): the bundled Arrow file
// streamed onto the device and summarised there by table verbs, then 1M generated trips kept
// resident there and asked the page's questions (www/queries.js) again on each slider move,
// as one evaluation: the shown trips drawn from the device's own buffer on WebGPU (their
// count never read for it), a fare histogram, trips and mean fare by company, the top ten.
// `?device=best|webgpu|webgl|cpu&rows=N` pick the device and the table size.
import * as gt from '../dist/web/index.js';
import {VENDORS, cityTrips} from './city.js';
import {BIN_WIDTH, answersOf, destroyGraph, sameAnswers, tripsLoop, tripsQuery} from './queries.js';
import {CanvasPoints, WebGpuPoints, drawBars, drawGroups, intensityFor} from './views.js';

const $ = id => document.getElementById(id);
const query = new URLSearchParams(location.search);
const settings = {device: query.get('device') ?? 'best', rows: Number(query.get('rows') ?? 1_000_000)};
const ms = value => value.toFixed(1);
const dollars = value => `$${value.toFixed(2)}`;

for (const id of ['device', 'rows']) {
  const picker = $(id);
  if (![...picker.options].some(option => option.value === String(settings[id]))) picker.add(new Option(String(settings[id]), String(settings[id])));
  picker.value = String(settings[id]);
  picker.addEventListener('change', () => {
    query.set(id, picker.value);
    location.search = query.toString();
  });
}

const deviceLabel = device => `on the ${device.type} device${device.adapterName ? ` (${device.adapterName})` : ''}`;

function fail(error) {
  $('status').textContent = `${error.name} ${error.code ?? ''}: ${error.message}`;
  $('status').className = 'bad';
  document.body.dataset.state = 'error';
}

/** Streams the Arrow file onto the device, batch by batch, and summarises the table there. */
async function loadArrow(device) {
  const response = await fetch('./data/trips.arrow');
  if (!response.ok) throw new Error(`fetching data/trips.arrow: ${response.status}`);
  const total = Number(response.headers.get('content-length')) || 0;
  let received = 0, batches = 0;
  const show = () => {
    $('progress').max = total || received || 1;
    $('progress').value = received;
    $('progress-text').textContent = `${(received / 1e3).toFixed(0)}${total ? ` of ${(total / 1e3).toFixed(0)}` : ''} kB, ${batches} record batches on the device`;
  };
  const reader = response.body.getReader();
  async function* pieces() {
    for (;;) {
      const {done, value} = await reader.read();
      if (done) return;
      received += value.length;
      show();
      yield value;
    }
  }
  const table = await gt.GPUTable.fromArrowIPC(pieces(), {device, onBatch: () => void (batches++, show())});
  show();
  const fare = table.getVector('fare');
  const km = gt.length(gt.subtract(table.getVector('dropoff'), table.getVector('pickup')));
  // A null fare gives a null price, which reductions skip.
  const roots = {range: gt.extent(gt.divide(fare, km)), missing: gt.count(gt.isNull(fare))};
  await gt.cleanEvaluate(device, roots);
  const [low, high] = await roots.range.readValue();
  const [missing] = await roots.missing.readValue();
  // The vendor column is an Arrow dictionary of strings: grouped by its values.
  const byVendor = await table.groupBy(['vendor']).rollup({trips: 'count', meanFare: ['mean', 'fare']});
  const names = byVendor.schema.field('vendor').dictionary;
  const [codes, trips, means] = await Promise.all(['vendor', 'trips', 'meanFare'].map(name => byVendor.getVector(name).readValue()));
  $('arrow').textContent = [
    `trips.arrow: ${table.numRows.toLocaleString('en-US')} rows in ${table.batches.length} batches`,
    ...table.schema.fields.map(field => `  ${field.name.padEnd(10)} ${field.format} from ${field.metadata.arrowType}`),
    `missing fares: ${missing}`,
    `fare per km: ${low.toFixed(3)} .. ${high.toFixed(3)}`,
    ...Array.from(codes, (code, i) => `  ${names[code]}: ${trips[i].toLocaleString('en-US')} trips, mean fare ${dollars(means[i])}`)
  ].join('\n');
  for (const e of Object.values(roots)) e.destroy();
  byVendor.destroy();
  table.destroy();
}

/** The generated trips as a table on the device, the vendor codes with their names. */
async function residentTrips(device, trips) {
  const E = gt.GPUTableEvaluator;
  const schema = new gt.GPUSchema([
    new gt.GPUField({name: 'pickup', type: 'float32', size: 2}),
    new gt.GPUField({name: 'dropoff', type: 'float32', size: 2}),
    new gt.GPUField({name: 'fare', type: 'float32'}),
    new gt.GPUField({name: 'vendor', type: 'uint8', dictionary: VENDORS})
  ]);
  const vectors = await Promise.all([
    E.fromArray(trips.pickup, {size: 2}), E.fromArray(trips.dropoff, {size: 2}), E.fromArray(trips.fare), E.fromArray(trips.vendor)
  ].map(e => e.evaluate(device)));
  const table = new gt.GPUTable({schema, batches: [new gt.GPURecordBatch(vectors, schema)], device});
  // Evaluated once: every graph reads the columns in place.
  const columns = Object.fromEntries(schema.names.map(name => [name, E.fromVector(table.getVector(name))]));
  return {table, columns};
}

/** The plans of the graph's results, as `explain()` shows them. */
function plans(device, graph) {
  const shown = {points: graph.points, histogram: graph.histogram, 'byVendor.meanFare': graph.byVendor.meanFare, 'dearest.fare': graph.dearest.fare};
  return Object.entries(shown).map(([name, e]) => `${name}:\n${e.explain(device).trimEnd()}`).join('\n\n');
}

function showDearest(rows) {
  const body = $('dearest').tBodies[0];
  body.replaceChildren(...rows.map((row, i) => {
    const tr = document.createElement('tr');
    for (const text of [String(i + 1), row.vendor, dollars(row.fare), row.km.toFixed(2), dollars(row.perKm)]) tr.insertCell().textContent = text;
    return tr;
  }));
}

async function main() {
  // WebGL2 asked for: its module is the one init() loads. Otherwise the default module, and
  // 'best' loads the WebGL2 one only if it falls back to it (nothing is made before).
  if (settings.device === 'webgl') gt.backendRegistry.add(gt.webglBackend);
  await gt.init();
  gt.backendRegistry.add(gt.webgpuBackend);
  gt.backendRegistry.add(gt.webglBackend);
  const device = await gt.createDevice({type: settings.device});
  $('status').textContent = deviceLabel(device);
  document.body.dataset.device = device.type;
  await loadArrow(device);

  const trips = cityTrips(settings.rows);
  const {columns} = await residentTrips(device, trips);
  const intensity = intensityFor(settings.rows);
  const painter = device.type === 'webgpu' ? new WebGpuPoints($('plot'), device, intensity) : new CanvasPoints($('plot'), intensity);
  let shown = null, running = false, again = false, renders = 0;

  async function render() {
    const filter = {minFare: Number($('min-fare').value), maxKm: Number($('max-km').value)};
    $('min-fare-value').textContent = `$${filter.minFare}`;
    $('max-km-value').textContent = String(filter.maxKm);
    const before = device.stats;
    const graph = tripsQuery(gt, columns, filter);
    const plan = plans(device, graph);
    let answers, evaluateMs, drawMs;
    try {
      const t0 = performance.now();
      await gt.cleanEvaluate(device, graph);
      answers = await answersOf(device, graph);
      evaluateMs = performance.now() - t0;
      const t1 = performance.now();
      // WebGPU draws the output's own buffer, as many points as its count on the device; the
      // others draw the rows read back.
      await painter.draw(device.type === 'webgpu' ? await graph.points.evaluate(device) : await graph.points.readValue());
      drawMs = performance.now() - t1;
    } catch (error) {
      destroyGraph(graph);
      throw error;
    }
    const after = device.stats;
    // The picture on screen is drawn: the graph it came from may go.
    if (shown) destroyGraph(shown);
    shown = graph;

    const t2 = performance.now();
    const reference = tripsLoop(trips, VENDORS, filter);
    const jsMs = performance.now() - t2;
    const same = sameAnswers(reference, answers);

    $('shown').textContent = answers.count.toLocaleString('en-US');
    $('evaluate-ms').textContent = ms(evaluateMs);
    $('draw-ms').textContent = ms(drawMs);
    $('js-ms').textContent = ms(jsMs);
    $('check').textContent = same ? 'the same answers' : 'different answers!';
    $('check').className = same ? 'ok' : 'bad';
    const work = device.type === 'cpu' ? 'passes' : 'kernels';
    $('kernels').textContent = `${after.kernels - before.kernels} ${work} in one evaluation, ${after.readbackBytes - before.readbackBytes} bytes read back, ${(device.memory.liveBytes / 1e6).toFixed(1)} MB live`;
    $('histogram').dataset.counts = JSON.stringify(answers.histogram);
    drawBars($('histogram'), answers.histogram, answers.histogram.map((_, i) => (i % 4 === 0 ? `$${i * BIN_WIDTH}` : '')), {format: () => ''});
    $('vendors').dataset.groups = JSON.stringify(answers.vendors);
    drawGroups($('vendors'), answers.vendors.map(g => g.trips), answers.vendors.map(g => g.vendor),
      (trips, i) => `${trips.toLocaleString('en-US')}, mean ${dollars(answers.vendors[i].meanFare)}`);
    $('dearest').dataset.rows = JSON.stringify(answers.dearest);
    showDearest(answers.dearest);
    $('explain').textContent = plan;
    $('status').className = '';
    $('status').textContent = deviceLabel(device);
    document.body.dataset.renders = String(++renders);
    document.body.dataset.state = 'ready';
  }

  // A change while one renders is drawn once that one ends (the last change wins).
  async function schedule() {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await render();
      } while (again);
    } catch (error) {
      fail(error);
    } finally {
      running = false;
    }
  }
  for (const id of ['min-fare', 'max-km']) $(id).addEventListener('input', schedule);
  $('bench-run').addEventListener('click', () => runBenchmark(device).catch(fail));
  await schedule();
}

/**
 * Runs bench/gpu-bench.js (served from the checkout) in a frame on this page's backend and
 * charts gputable's speed-up over TensorFlow.js per workload. `?bench-rows=` and the like
 * shrink it.
 */
async function runBenchmark(device) {
  if (device.type === 'cpu') {
    $('bench-status').textContent = 'the browser benchmark compares GPU backends: pick WebGPU or WebGL2 (the CPU one is `npm run bench` in Node)';
    return;
  }
  $('bench-run').disabled = true;
  $('bench-status').textContent = 'running… (minutes on a software adapter)';
  const sizes = new URLSearchParams({backend: device.type});
  for (const name of ['rows', 'reduceRows', 'sparseRows', 'sparseEntries']) {
    const value = query.get(`bench-${name}`);
    if (value) sizes.set(name, value);
  }
  const frame = document.createElement('iframe');
  frame.hidden = true;
  frame.src = `../bench/gpu.html?${sizes}`;
  document.body.append(frame);
  // The frame sets window.__bench when it is done (an error included); one that never
  // loads, or dies first, ends the wait after half an hour.
  const report = await new Promise(resolve => {
    const started = performance.now();
    const poll = setInterval(() => {
      const result = frame.contentWindow?.__bench;
      const late = performance.now() - started > 1_800_000;
      if (result !== undefined || late) {
        clearInterval(poll);
        resolve(result ?? {error: 'the benchmark frame did not finish in 30 minutes'});
      }
    }, 250);
    frame.addEventListener('error', () => {
      clearInterval(poll);
      resolve({error: 'the benchmark frame did not load'});
    });
  });
  frame.remove();
  $('bench-run').disabled = false;
  if (report.error) throw new Error(`benchmark: ${report.error}`);
  const rows = [...report.results.map(r => [r.id, r.tfMs / r.gputableMs]), ['chain', report.chain.tfMs / report.chain.ms]];
  $('bench-chart').dataset.ratios = JSON.stringify(Object.fromEntries(rows));
  drawBars($('bench-chart'), rows.map(r => r[1]), rows.map(r => r[0]), {
    log: true,
    color: ratio => (ratio >= 1 ? '#5c5' : '#d55'),
    format: ratio => `${ratio.toFixed(2)}x`
  });
  $('bench-status').textContent = `times faster than tfjs-backend-${device.type} (above the line: gputable faster), ${report.rows.toLocaleString('en-US')} rows, adapter "${report.adapter || 'unnamed'}"`;
}

main().catch(fail);
