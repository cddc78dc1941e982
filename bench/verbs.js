// Table verbs on the CPU device (issue 38's V-series): gputable vs hand-written JS loops,
// TensorFlow.js (cpu and wasm backends), Arquero 8 and DuckDB-wasm 1.32 (its blocking Node
// build, SQL over the same columns inserted once as a table), in one process on the same
// data. Prints a markdown table.
//
// Timed: building the lazy graph plus evaluating it to a materialized output (JS: a fresh
// typed array; tfjs: a tensor). Inputs are made once, outside the timings.
//
// BENCH_ROWS=1e6,1e7 (default) picks the row counts; BENCH_PEERS=js,tfjs-cpu,tfjs-wasm,arquero,duckdb
// the peers.
import {createRequire} from 'node:module';
import {dirname, join} from 'node:path';
import * as gt from 'gputable';
import * as tf from '@tensorflow/tfjs-core';
import * as aq from 'arquero';
import * as arrow from 'apache-arrow';
import '@tensorflow/tfjs-backend-cpu';
import {setWasmPaths} from '@tensorflow/tfjs-backend-wasm';
import {openDuckdb, printHeading, runSeries, xorshift} from './series.js';

const require = createRequire(import.meta.url);
setWasmPaths(join(dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + '/');

const ROWS = (process.env.BENCH_ROWS ?? '1e6,1e7').split(',').map(Number);
const PEERS = (process.env.BENCH_PEERS ?? 'js,tfjs-cpu,tfjs-wasm,arquero,duckdb').split(',').filter(p => p && p !== 'none');

// Deterministic data (xorshift32): fares in [-100, 100), uint32 keys, vendors 0..3.
function makeData(n) {
  const next = xorshift(7);
  const fare = new Float32Array(n), key = new Uint32Array(n), vendor = new Uint8Array(n), payload = new Uint32Array(n);
  const zone = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    fare[i] = (next() / 4294967296) * 200 - 100;
    key[i] = next();
    vendor[i] = next() & 3;
    payload[i] = i;
    zone[i] = next() % 1000;
  }
  // 1M queries into the n sorted keys (api.md's V-series: 1M values in 10M).
  const sorted = Float32Array.from(fare).sort();
  const queries = new Float32Array(Math.min(n, 1e6));
  for (let i = 0; i < queries.length; i++) queries[i] = (next() / 4294967296) * 200 - 100;
  return {n, fare, key, vendor, payload, zone, sorted, queries};
}

const WORKLOADS = [
  {id: 'V1', name: 'count(greater(fare, 0))'},
  {id: 'V2', name: 'sum(fare, {where: greater(fare, 50)})'},
  {id: 'V3', name: 'cumsum(fare)'},
  {id: 'V4', name: 'argsort float32 keys + gather uint32 payload'},
  {id: 'V5', name: 'argsort uint32 keys + gather uint32 payload'},
  {id: 'V6', name: 'argsort [vendor, fare desc] (2 keys)'},
  {id: 'V7', name: 'topK(fare, 10)'},
  {id: 'V8', name: 'searchSorted of 1M values'},
  {id: 'V9', name: 'filter 3 columns, 50% kept (fare > 0)'},
  {id: 'V10', name: 'filter 3 columns, 1% kept (fare > 98)'},
  {id: 'V11', name: 'unique of 1k distinct uint32'}
];

function gputableRunner(d) {
  const E = gt.GPUTableEvaluator;
  const fare = E.fromArray(d.fare), key = E.fromArray(d.key), vendor = E.fromArray(d.vendor);
  const payload = E.fromArray(d.payload), sorted = E.fromArray(d.sorted), queries = E.fromArray(d.queries);
  const zone = E.fromArray(d.zone);
  const graphs = {
    V1: () => gt.count(gt.greater(fare, 0)),
    V2: () => gt.sum(fare, {where: gt.greater(fare, 50)}),
    V3: () => gt.cumsum(fare),
    V4: () => gt.gather(gt.argsort(fare), payload),
    V5: () => gt.gather(gt.argsort(key), payload),
    V6: () => gt.argsort([vendor, fare], {descending: [false, true]}),
    V7: () => gt.topK(fare, 10).indices,
    V8: () => gt.searchSorted(sorted, queries),
    V11: () => gt.unique(zone)
  };
  const run = build => () => {
    const r = build();
    r.evaluateSync();
    r.destroy();
  };
  // Three columns filtered by one mask in one evaluation (the scan of the mask shared).
  const filtered = threshold => async () => {
    const mask = gt.greater(fare, threshold);
    const kept = [fare, key, vendor].map(column => gt.filter(column, mask));
    await gt.cleanEvaluate(null, kept);
    kept.forEach(e => e.destroy());
  };
  return {
    ...Object.fromEntries(Object.entries(graphs).map(([id, build]) => [id, run(build)])),
    V9: filtered(0),
    V10: filtered(98),
    // V9 and V10 evaluate three filters together; one of them shows the plan's shape.
    passes: id => (graphs[id] ?? (() => gt.filter(fare, gt.greater(fare, id === 'V9' ? 0 : 98))))().explain().split('\n')[0].replace('plan on cpu: ', ''),
    dispose: () => [fare, key, vendor, payload, sorted, queries, zone].forEach(e => e.destroy())
  };
}

// What a JS user writes: loops, TypedArray sorts, index sorts with a comparator.
function jsRunner(d) {
  const {n, fare, key, vendor, payload, zone, sorted, queries} = d;
  const filtered = threshold => {
    const f = new Float32Array(n), k = new Uint32Array(n), v = new Uint8Array(n);
    let kept = 0;
    for (let i = 0; i < n; i++) {
      if (fare[i] > threshold) {
        f[kept] = fare[i];
        k[kept] = key[i];
        v[kept++] = vendor[i];
      }
    }
    return [f.slice(0, kept), k.slice(0, kept), v.slice(0, kept)];
  };
  const indexSort = compare => {
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    return order.sort(compare);
  };
  const gather = order => {
    const out = new Uint32Array(n);
    for (let i = 0; i < n; i++) out[i] = payload[order[i]];
    return out;
  };
  return {
    V1: () => {
      let count = 0;
      for (let i = 0; i < n; i++) if (fare[i] > 0) count++;
      return count;
    },
    V2: () => {
      let sum = 0;
      for (let i = 0; i < n; i++) if (fare[i] > 50) sum += fare[i];
      return sum;
    },
    V3: () => {
      const out = new Float32Array(n);
      let sum = 0;
      for (let i = 0; i < n; i++) out[i] = sum += fare[i];
      return out;
    },
    V4: () => gather(indexSort((a, b) => fare[a] - fare[b])),
    V5: () => gather(indexSort((a, b) => (key[a] < key[b] ? -1 : key[a] > key[b] ? 1 : 0))),
    V6: () => indexSort((a, b) => vendor[a] - vendor[b] || fare[b] - fare[a]),
    // A partial selection: the 10 largest in one pass, as a JS user would keep them.
    V7: () => {
      const best = [];
      for (let i = 0; i < n; i++) {
        const v = fare[i];
        if (best.length < 10 || v > fare[best[best.length - 1]]) {
          let at = best.length;
          while (at > 0 && fare[best[at - 1]] < v) at--;
          best.splice(at, 0, i);
          if (best.length > 10) best.pop();
        }
      }
      return best;
    },
    V8: () => {
      const out = new Uint32Array(queries.length);
      for (let q = 0; q < queries.length; q++) {
        let lo = 0, hi = sorted.length;
        const v = queries[q];
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (sorted[mid] < v) lo = mid + 1;
          else hi = mid;
        }
        out[q] = lo;
      }
      return out;
    },
    V9: () => filtered(0),
    V10: () => filtered(98),
    V11: () => Uint32Array.from(new Set(zone)).sort(),
    dispose() {}
  };
}

async function tfjsRunner(d, backend) {
  await tf.setBackend(backend);
  await tf.ready();
  const fare = tf.tensor1d(d.fare);
  const zoneTensor = tf.tensor1d(Int32Array.from(d.zone), 'int32');
  const run = build => () => tf.dispose(tf.tidy(build));
  return {
    V1: run(() => tf.sum(tf.cast(tf.greater(fare, 0), 'int32'))),
    V2: run(() => tf.sum(tf.where(tf.greater(fare, 50), fare, tf.zerosLike(fare)))),
    V3: run(() => tf.cumsum(fare)),
    // tfjs sorts through topk with k = n (its only sort).
    V4: run(() => tf.topk(tf.neg(fare), d.n).indices),
    V7: run(() => tf.topk(fare, 10).indices),
    V11: run(() => tf.unique(zoneTensor).values),
    dispose: () => tf.dispose([fare, zoneTensor])
  };
}

// Arquero's verbs over a table of the same typed arrays; each result materialized (`array`,
// `reify`, `indices`), as its verbs are lazy about order and filters.
function arqueroRunner(d) {
  const t = aq.table({fare: d.fare, key: d.key, vendor: d.vendor, payload: d.payload, zone: d.zone});
  const filtered = threshold => () => t.params({threshold}).filter((r, $) => r.fare > $.threshold).reify(['fare', 'key', 'vendor']);
  return {
    V1: () => t.filter(r => r.fare > 0).numRows(),
    V2: () => t.filter(r => r.fare > 50).rollup({s: aq.op.sum('fare')}).get('s', 0),
    V3: () => t.derive({c: aq.rolling(r => aq.op.sum(r.fare))}).array('c'),
    V4: () => t.orderby('fare').array('payload'),
    V5: () => t.orderby('key').array('payload'),
    V6: () => t.orderby('vendor', aq.desc('fare')).indices(),
    V7: () => t.orderby(aq.desc('fare')).slice(0, 10).indices(),
    V9: filtered(0),
    V10: filtered(98),
    V11: () => t.select('zone').dedupe().orderby('zone').array('zone'),
    dispose() {}
  };
}

// DuckDB-wasm in Node (the blocking build, one thread): the columns inserted once as a table,
// each workload one SQL query whose result is an Arrow table.
async function duckdbRunner(d) {
  const {db, conn} = await openDuckdb();
  const columns = {fare: d.fare, key: d.key, vendor: d.vendor, payload: d.payload, zone: d.zone};
  conn.insertArrowFromIPCStream(arrow.tableToIPC(arrow.tableFromArrays(columns), 'stream'), {name: 'trips'});
  const query = sql => () => conn.query(sql);
  return {
    V1: query('SELECT count(*) FROM trips WHERE fare > 0'),
    V2: query('SELECT sum(fare) FROM trips WHERE fare > 50'),
    V3: query('SELECT sum(fare) OVER (ORDER BY rowid) AS c FROM trips'),
    V4: query('SELECT payload FROM trips ORDER BY fare'),
    V5: query('SELECT payload FROM trips ORDER BY key'),
    V6: query('SELECT rowid FROM trips ORDER BY vendor, fare DESC'),
    V7: query('SELECT rowid FROM trips ORDER BY fare DESC LIMIT 10'),
    V9: query('SELECT fare, key, vendor FROM trips WHERE fare > 0'),
    V10: query('SELECT fare, key, vendor FROM trips WHERE fare > 98'),
    V11: query('SELECT DISTINCT zone FROM trips ORDER BY zone'),
    dispose() {
      conn.close();
      db.reset();
    }
  };
}

const PEER_RUNNERS = {
  js: {label: 'JS loops and sorts', make: d => jsRunner(d)},
  'tfjs-cpu': {label: 'tfjs-core 4.22 cpu', make: d => tfjsRunner(d, 'cpu')},
  'tfjs-wasm': {label: 'tfjs-core 4.22 wasm', make: d => tfjsRunner(d, 'wasm')},
  arquero: {label: 'Arquero 8.0', make: d => arqueroRunner(d)},
  duckdb: {label: 'DuckDB-wasm 1.32', make: d => duckdbRunner(d)}
};

printHeading('gputable table verbs on the CPU device (V-series)');

await runSeries({
  rows: ROWS,
  workloads: WORKLOADS,
  makeData,
  ours: gputableRunner,
  peers: PEERS,
  runners: PEER_RUNNERS,
  rate: (w, n, ms) => (n / ms / 1e3).toFixed(0),
  rateLabel: 'M rows/s'
});
