// Grouping, histograms, lookups and joins on the CPU device (issue 39's G-series): gputable vs
// hand-written JS loops (Map and typed-array tables), TensorFlow.js (cpu backend:
// unsortedSegmentSum, bincount), Arquero 8 and DuckDB-wasm 1.32 (its blocking Node build,
// SQL over the same columns inserted once as a table), in one process on the same data.
// Prints a markdown table.
//
// Timed: building the lazy graph plus evaluating it to materialized outputs (JS: fresh
// typed arrays; tfjs: tensors). Inputs are made once, outside the timings.
//
// BENCH_ROWS=1e6,1e7 (default) picks the row counts; BENCH_PEERS=js,tfjs-cpu,arquero,duckdb
// the peers.
import * as gt from 'gputable';
import * as tf from '@tensorflow/tfjs-core';
import * as aq from 'arquero';
import * as arrow from 'apache-arrow';
import '@tensorflow/tfjs-backend-cpu';
import {openDuckdb, printHeading, runSeries, xorshift} from './series.js';
import {groupLoops} from './group-loops.js';

const ROWS = (process.env.BENCH_ROWS ?? '1e6,1e7').split(',').map(Number);
const PEERS = (process.env.BENCH_PEERS ?? 'js,tfjs-cpu,arquero,duckdb').split(',').filter(p => p && p !== 'none');
const TABLE_ROWS = 100000;


// Fares in [-100, 100), 20 vendor codes, 1M distinct-ish uint32 keys, 1,000 zones, keys
// into a 100k-row table (one in ten missing), 1,000 irregular histogram edges.
function makeData(n) {
  const next = xorshift(11);
  const fare = new Float32Array(n), vendor = new Uint8Array(n), key = new Uint32Array(n);
  const zone = new Uint32Array(n), probe = new Uint32Array(n);
  // Join keys: n left and n right rows over n/3 values, ~3 matches per left row.
  const leftKey = new Uint32Array(n), rightKey = new Uint32Array(n);
  const joinKeys = Math.max(1, Math.floor(n / 3));
  for (let i = 0; i < n; i++) {
    leftKey[i] = next() % joinKeys;
    rightKey[i] = next() % joinKeys;
    fare[i] = (next() / 4294967296) * 200 - 100;
    vendor[i] = next() % 20;
    key[i] = next() % 1e6;
    zone[i] = next() % 1000;
    probe[i] = next() % (TABLE_ROWS + TABLE_ROWS / 10);
  }
  const tableKeys = new Uint32Array(TABLE_ROWS);
  for (let i = 0; i < TABLE_ROWS; i++) tableKeys[i] = (i * 7919) % TABLE_ROWS;
  const edges = Array.from({length: 1001}, (_, i) => (i * i) / 5000 - 100);
  // Text: 260 zone names, as JS strings and as the Arrow IPC of a Utf8 column with the fares.
  const zoneNames = Array.from({length: 260}, (_, i) => `Zone ${i} ${'abcdefghijklm'.slice(0, i % 13)}`);
  const names = Array.from(zone, z => zoneNames[z % 260]);
  const textIpc = arrow.tableToIPC(arrow.tableFromArrays({name: arrow.vectorFromArray(names, new arrow.Utf8()), fare}));
  return {n, fare, vendor, key, zone, probe, tableKeys, edges, leftKey, rightKey, names, textIpc};
}

const WORKLOADS = [
  {id: 'G1', name: 'groupBy 20 keys: sum, count, mean of fare'},
  {id: 'G2', name: 'groupBy ~1M distinct uint32 keys: sum, count, mean'},
  {id: 'G3', name: 'valueCounts of 1k distinct uint32'},
  {id: 'G4', name: 'histogram 24 equal bins over [-100, 100]'},
  {id: 'G5', name: 'histogram 1,000 irregular edges'},
  {id: 'G6', name: 'lookup of every row in 100k keys'},
  {id: 'G7', name: 'inner join n x n rows, ~3 matches per key (pairs ordered)'},
  {id: 'G8', name: 'groupBy a text column of 260 names: count, mean of fare'}
];

function gputableRunner(d) {
  const E = gt.GPUTableEvaluator;
  const fare = E.fromArray(d.fare), vendor = E.fromArray(d.vendor), key = E.fromArray(d.key);
  const zone = E.fromArray(d.zone), probe = E.fromArray(d.probe), tableKeys = E.fromArray(d.tableKeys);
  const leftKey = E.fromArray(d.leftKey), rightKey = E.fromArray(d.rightKey);
  // Loaded once, as a user's table would be: uint32 codes and the names in the dictionary.
  const text = gt.GPUTable.fromArrowIPCSync(d.textIpc);
  const rollup = keys => () => gt.groupBy(keys, {sum: ['sum', fare], count: 'count', mean: ['mean', fare]});
  const graphs = {
    G1: rollup(vendor),
    G2: rollup(key),
    G3: () => gt.valueCounts(zone),
    G4: () => ({counts: gt.histogram(fare, {bins: 24, range: [-100, 100]})}),
    G5: () => ({counts: gt.histogram(fare, {edges: d.edges})}),
    G6: () => ({rows: gt.lookup(probe, tableKeys)}),
    // A capacity as a user estimating ~3 matches a key would give (the default is the keys'
    // rows together).
    G7: () => gt.join(leftKey, rightKey, {capacity: 4 * d.n}),
    G8: () => gt.groupBy(text.getVector('name'), {count: 'count', mean: ['mean', text.getVector('fare')]})
  };
  // Every result of a workload in one evaluation.
  const roots = result => Object.values(result).flat();
  const run = build => async () => {
    const out = roots(build());
    await gt.cleanEvaluate(null, out);
    out.forEach(e => e.destroy());
  };
  return {
    ...Object.fromEntries(Object.entries(graphs).map(([id, build]) => [id, run(build)])),
    passes: id => {
      const out = roots(graphs[id]());
      return out[out.length - 1].explain().split('\n')[0].replace('plan on cpu: ', '');
    },
    dispose: () => {
      [fare, vendor, key, zone, probe, tableKeys, leftKey, rightKey].forEach(e => e.destroy());
      text.destroy();
    }
  };
}

// What a JS user writes: one loop per workload into typed-array tables where the keys are
// small, a Map where they are not, a sort of the Map's keys for the order.
function jsRunner(d) {
  const {n, fare, key} = d;
  const grouped = keys => {
    const slots = new Map();
    const sums = [], counts = [];
    for (let i = 0; i < n; i++) {
      let s = slots.get(keys[i]);
      if (s === undefined) {
        s = sums.length;
        slots.set(keys[i], s);
        sums.push(0);
        counts.push(0);
      }
      sums[s] += fare[i];
      counts[s]++;
    }
    const order = Float64Array.from(slots.keys()).sort();
    const out = {keys: order, sum: new Float32Array(order.length), count: new Uint32Array(order.length), mean: new Float32Array(order.length)};
    order.forEach((k, g) => {
      const s = slots.get(k);
      out.sum[g] = sums[s];
      out.count[g] = counts[s];
      out.mean[g] = sums[s] / counts[s];
    });
    return out;
  };
  return {
    ...groupLoops(d),
    G8: () => {
      const slots = new Map();
      for (let i = 0; i < n; i++) {
        const s = slots.get(d.names[i]);
        if (s === undefined) slots.set(d.names[i], [1, fare[i]]);
        else {
          s[0]++;
          s[1] += fare[i];
        }
      }
      const order = [...slots.keys()].sort();
      return {names: order, count: Uint32Array.from(order, k => slots.get(k)[0]), mean: Float32Array.from(order, k => slots.get(k)[1] / slots.get(k)[0])};
    },
    G2: () => grouped(key),
    G7: () => {
      const {leftKey, rightKey} = d;
      const rows = new Map();
      for (let r = 0; r < n; r++) {
        const list = rows.get(rightKey[r]);
        if (list === undefined) rows.set(rightKey[r], [r]);
        else list.push(r);
      }
      const left = [], right = [];
      for (let l = 0; l < n; l++) {
        for (const r of rows.get(leftKey[l]) ?? []) {
          left.push(l);
          right.push(r);
        }
      }
      return {left: Int32Array.from(left), right: Int32Array.from(right)};
    },
    dispose() {}
  };
}

async function tfjsRunner(d) {
  await tf.setBackend('cpu');
  await tf.ready();
  const fare = tf.tensor1d(d.fare);
  const vendor = tf.tensor1d(Int32Array.from(d.vendor), 'int32');
  const key = tf.tensor1d(Int32Array.from(d.key), 'int32');
  const zone = tf.tensor1d(Int32Array.from(d.zone), 'int32');
  const ones = tf.onesLike(fare);
  const rollup = (keys, segments) => () => tf.dispose(tf.tidy(() => {
    const sum = tf.unsortedSegmentSum(fare, keys, segments);
    const count = tf.unsortedSegmentSum(ones, keys, segments);
    return [sum, count, tf.div(sum, count)];
  }));
  return {
    // G2 left out: unsortedSegmentSum with 1M segments grew past 16 GB on the cpu backend.
    G1: rollup(vendor, 20),
    G3: () => tf.dispose(tf.tidy(() => tf.bincount(zone, [], 1000))),
    // Equal bins as bin numbers (a floor), then bincount; rows outside dropped by a clamp
    // into a spare bin.
    G4: () => tf.dispose(tf.tidy(() => {
      const bin = tf.clipByValue(tf.floor(tf.div(tf.add(fare, 100), 200 / 24)), 0, 23);
      return tf.bincount(tf.cast(bin, 'int32'), [], 24);
    })),
    dispose: () => tf.dispose([fare, vendor, key, zone, ones])
  };
}

// Arquero's verbs over a table of the same typed arrays; each result materialized.
function arqueroRunner(d) {
  const t = aq.table({fare: d.fare, vendor: d.vendor, key: d.key, zone: d.zone, probe: d.probe, name: d.names});
  const zones = aq.table({probe: d.tableKeys, row: Int32Array.from(d.tableKeys, (_, i) => i)});
  const lefts = aq.table({k: d.leftKey, l: Int32Array.from(d.leftKey, (_, i) => i)});
  const rights = aq.table({k: d.rightKey, r: Int32Array.from(d.rightKey, (_, i) => i)});
  const rollup = name => () => t.groupby(name).rollup({sum: aq.op.sum('fare'), count: aq.op.count(), mean: aq.op.mean('fare')}).orderby(name).reify();
  return {
    G1: rollup('vendor'),
    G2: rollup('key'),
    G3: () => t.groupby('zone').count().orderby('zone').reify(),
    G4: () => t.derive({bin: aq.escape(r => Math.min(23, Math.floor((r.fare + 100) / (200 / 24))))}).groupby('bin').count().orderby('bin').reify(),
    G6: () => t.lookup(zones, 'probe', 'row').array('row'),
    G7: () => lefts.join(rights, 'k').orderby('l', 'r').reify(),
    G8: () => t.groupby('name').rollup({count: aq.op.count(), mean: aq.op.mean('fare')}).orderby('name').reify(),
    dispose() {}
  };
}

async function duckdbRunner(d) {
  const {db, conn} = await openDuckdb();
  const columns = {fare: d.fare, vendor: d.vendor, key: d.key, zone: d.zone, probe: d.probe};
  conn.insertArrowFromIPCStream(arrow.tableToIPC(arrow.tableFromArrays(columns), 'stream'), {name: 'trips'});
  const rows = Int32Array.from(d.tableKeys, (_, i) => i);
  conn.insertArrowFromIPCStream(arrow.tableToIPC(arrow.tableFromArrays({id: d.tableKeys, row: rows}), 'stream'), {name: 'zones'});
  const edges = d.edges.map((e, i) => `(${i}, ${e})`).join(', ');
  conn.query(`CREATE TABLE edges AS SELECT * FROM (VALUES ${edges}) v(i, e)`);
  conn.insertArrowFromIPCStream(arrow.tableToIPC(arrow.tableFromArrays({k: d.leftKey}), 'stream'), {name: 'lefts'});
  conn.insertArrowFromIPCStream(arrow.tableToIPC(arrow.tableFromArrays({k: d.rightKey}), 'stream'), {name: 'rights'});
  conn.insertArrowFromIPCStream(d.textIpc, {name: 'texts'});
  const query = sql => () => conn.query(sql);
  const rollup = name => query(`SELECT ${name}, sum(fare), count(*), avg(fare) FROM trips GROUP BY ${name} ORDER BY ${name}`);
  return {
    G1: rollup('vendor'),
    G2: rollup('key'),
    G3: query('SELECT zone, count(*) FROM trips GROUP BY zone ORDER BY zone'),
    G4: query('SELECT least(floor((fare + 100) / (200 / 24)), 23) AS bin, count(*) FROM trips WHERE fare BETWEEN -100 AND 100 GROUP BY bin ORDER BY bin'),
    G6: query('SELECT z.row FROM trips t LEFT JOIN zones z ON t.probe = z.id ORDER BY t.rowid'),
    G7: query('SELECT l.rowid, r.rowid FROM lefts l JOIN rights r ON l.k = r.k ORDER BY l.rowid, r.rowid'),
    G8: query('SELECT name, count(*), avg(fare) FROM texts GROUP BY name ORDER BY name'),
    dispose() {
      conn.close();
      db.reset();
    }
  };
}

const PEER_RUNNERS = {
  js: {label: 'JS loops', make: d => jsRunner(d)},
  'tfjs-cpu': {label: 'tfjs-core 4.22 cpu', make: d => tfjsRunner(d)},
  arquero: {label: 'Arquero 8.0', make: d => arqueroRunner(d)},
  duckdb: {label: 'DuckDB-wasm 1.32', make: d => duckdbRunner(d)}
};

printHeading('gputable grouping, histograms, lookups and joins on the CPU device (G-series)');

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
