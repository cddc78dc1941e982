// The demo page (`npm run serve`, then http://localhost:8080/www/): the bundled Arrow file
// streamed onto the device, then 1M generated trips kept resident there, filtered by the
// sliders through one fused graph per change, drawn from the device's own buffer on WebGPU.
// `?device=best|webgpu|webgl|cpu&rows=N` pick the device and the table size.
import * as gt from '../dist/web/index.js';
import {cityTrips} from './city.js';
import {BIN_WIDTH, filterGraph, filterLoop, sameCounts} from './filters.js';
import {CanvasPoints, WebGpuPoints, drawBars, intensityFor} from './views.js';

const $ = id => document.getElementById(id);
const query = new URLSearchParams(location.search);
const settings = {device: query.get('device') ?? 'best', rows: Number(query.get('rows') ?? 1_000_000)};
const ms = value => value.toFixed(1);

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

/** Streams the Arrow file onto the device, batch by batch, and computes on the table there. */
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
  // Null fares read 0; their validity keeps them out of the price per km (a column without
  // nulls has none).
  const valid = fare.validity ?? gt.GPUTableEvaluator.fromConstant(1, 'uint8');
  const perKm = gt.select(valid, gt.divide(fare, km), 0);
  const roots = {range: gt.extent(perKm), missing: gt.sum(gt.subtract(1, valid))};
  await gt.cleanEvaluate(device, roots);
  const [low, high] = await roots.range.readValue();
  const [missing] = await roots.missing.readValue();
  $('arrow').textContent = [
    `trips.arrow: ${table.numRows.toLocaleString('en-US')} rows in ${table.batches.length} batches`,
    ...table.schema.fields.map(field => `  ${field.name.padEnd(10)} ${field.format} from ${field.metadata.arrowType}`),
    `missing fares: ${missing}`,
    `fare per km: ${low.toFixed(3)} .. ${high.toFixed(3)}`
  ].join('\n');
  for (const e of [...Object.values(roots), perKm, ...(fare.validity ? [] : [valid])]) e.destroy();
  table.destroy();
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
  const E = gt.GPUTableEvaluator;
  // Evaluated once: the columns stay on the device and every graph reads them in place.
  const columns = {
    pickup: await E.fromArray(trips.pickup, {size: 2}).evaluate(device),
    dropoff: await E.fromArray(trips.dropoff, {size: 2}).evaluate(device),
    fare: await E.fromArray(trips.fare).evaluate(device)
  };
  const intensity = intensityFor(settings.rows);
  const painter = device.type === 'webgpu' ? new WebGpuPoints($('plot'), device, intensity) : new CanvasPoints($('plot'), intensity);
  let shown = null, running = false, again = false, renders = 0;

  async function render() {
    const filter = {minFare: Number($('min-fare').value), maxKm: Number($('max-km').value)};
    $('min-fare-value').textContent = `$${filter.minFare}`;
    $('max-km-value').textContent = String(filter.maxKm);
    const kernelsBefore = device.stats.kernels;
    const graph = filterGraph(gt, columns, filter);
    const plan = `${graph.points.explain(device)}\n${graph.histogram.explain(device)}`;
    let count, histogram, evaluateMs, drawMs;
    try {
      const t0 = performance.now();
      await gt.cleanEvaluate(device, graph);
      [count] = await graph.count.readValue();
      histogram = Array.from(await graph.histogram.readValue());
      evaluateMs = performance.now() - t0;
      const t1 = performance.now();
      // WebGPU draws the output's own buffer; the others draw the rows read back.
      await painter.draw(device.type === 'webgpu' ? await graph.points.evaluate(device) : await graph.points.readValue());
      drawMs = performance.now() - t1;
    } catch (error) {
      for (const e of Object.values(graph)) e.destroy();
      throw error;
    }
    const kernels = device.stats.kernels - kernelsBefore;
    // The picture on screen is drawn: the graph it came from may go.
    if (shown) for (const e of Object.values(shown)) e.destroy();
    shown = graph;

    const t2 = performance.now();
    const reference = filterLoop(trips, filter);
    const jsMs = performance.now() - t2;
    const same = sameCounts(reference, count, histogram);

    $('shown').textContent = count.toLocaleString('en-US');
    $('evaluate-ms').textContent = ms(evaluateMs);
    $('draw-ms').textContent = ms(drawMs);
    $('js-ms').textContent = ms(jsMs);
    $('check').textContent = same ? 'the same counts' : 'different counts!';
    $('check').className = same ? 'ok' : 'bad';
    $('kernels').textContent = `${kernels} ${device.type === 'cpu' ? 'passes' : 'kernels'} for this change, ${(device.memory.liveBytes / 1e6).toFixed(1)} MB live`;
    $('histogram').dataset.counts = JSON.stringify(histogram);
    drawBars($('histogram'), histogram, histogram.map((_, i) => (i % 4 === 0 ? `$${i * BIN_WIDTH}` : '')), {format: () => ''});
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
