// The user trial's ten tasks end to end (issues 38 and 39: what a new user tried to ask of
// 1M taxi trips), on the CPU device: each task's verbs on a table loaded once from Arrow
// IPC, and every answer read into JS arrays, against hand-written JS loops, Arquero 8 and
// DuckDB-wasm 1.32 (SQL over the same table), in one process on the same data. Each answer
// is checked against the JS loops' before anything is timed. Prints a markdown table.
//
// BENCH_ROWS=1e6 (default; a list picks several) and BENCH_PEERS=js,arquero,duckdb.
import * as gt from 'gputable';
import * as aq from 'arquero';
import * as arrow from 'apache-arrow';
import {openDuckdb, runSeries, xorshift} from './series.js';

const {op} = aq;
const ROWS = (process.env.BENCH_ROWS ?? '1e6').split(',').map(Number);
const PEERS = (process.env.BENCH_PEERS ?? 'js,arquero,duckdb').split(',').filter(p => p && p !== 'none');
const VENDORS = ['Creative Mobile', 'VeriFone', 'Curb', 'Flywheel'];
const ZONES = Array.from({length: 260}, (_, z) => `Zone ${z} ${'abcdefghijklm'.slice(0, z % 13)}`);

const TASKS = [
  {id: 'T1', name: 'count trips with fare > 10'},
  {id: 'T2', name: 'trips with fare > 10: fare, tip, vendor'},
  {id: 'T3', name: 'top 10 fares with their vendors'},
  {id: 'T4', name: 'trips sorted by fare: fare, vendor'},
  {id: 'T5', name: 'running total of fares'},
  {id: 'T6', name: 'mean tip (a quarter of tips null)'},
  {id: 'T7', name: 'trips and mean fare by vendor name'},
  {id: 'T8', name: 'distinct zones and their trips'},
  {id: 'T9', name: 'fare histogram, 24 bins of $2'},
  {id: 'T10', name: 'each trip\'s zone name (join 260 zones)'}
];

// Fares $2.50-$62.50 (more of them low), tips with nulls, four vendors as text, 260 zones;
// the zones' names as a second table. Both as Arrow IPC files, as an app would fetch them.
function makeData(n) {
  const next = xorshift(23);
  const fare = new Float32Array(n), zone = new Uint32Array(n);
  const tip = new Array(n), vendor = new Array(n);
  for (let i = 0; i < n; i++) {
    const u = next() / 4294967296;
    fare[i] = 2.5 + u * u * 60;
    tip[i] = next() % 4 === 0 ? null : Math.fround(fare[i] * (next() % 30) / 100);
    vendor[i] = VENDORS[next() % VENDORS.length];
    zone[i] = next() % ZONES.length;
  }
  const tripsIpc = arrow.tableToIPC(new arrow.Table({
    fare: arrow.makeVector(fare),
    tip: arrow.vectorFromArray(tip, new arrow.Float32()),
    vendor: arrow.vectorFromArray(vendor, new arrow.Utf8()),
    zone: arrow.makeVector(zone)
  }));
  const zonesIpc = arrow.tableToIPC(new arrow.Table({
    id: arrow.makeVector(Uint32Array.from(ZONES, (_, z) => z)),
    name: arrow.vectorFromArray(ZONES, new arrow.Utf8())
  }));
  return {n, fare, tip, vendor, zone, tripsIpc, zonesIpc};
}

// The verbs each task takes.
const VERBS = {
  T1: 'count(greater(fare, 10))',
  T2: 'table.filter(t => greater(t.fare, 10))',
  T3: "table.topK('fare', 10)",
  T4: "table.orderBy(['fare'])",
  T5: 'cumsum(fare)',
  T6: 'mean(tip)',
  T7: "table.groupBy(['vendor']).rollup({trips: 'count', meanFare: ['mean', 'fare']})",
  T8: 'valueCounts(zone)',
  T9: 'histogram(fare, {bins: 24, range: [0, 48]})',
  T10: "table.join(zones, {on: ['zone', 'id']})"
};

// Each task as a user writes it with gputable's verbs; every answer read into JS arrays.
function gputableRunner(d) {
  const trips = gt.GPUTable.fromArrowIPCSync(d.tripsIpc);
  const zones = gt.GPUTable.fromArrowIPCSync(d.zonesIpc);
  const fare = trips.getVector('fare');
  const value = async e => {
    const v = await e.readValue();
    e.destroy();
    return v;
  };
  // The named columns of a verb's table read out, text as its strings' codes and dictionary.
  const read = async (made, names) => {
    const t = await made;
    const out = {};
    for (const name of names) {
      const vector = t.getVector(name);
      out[name] = await vector.readValue();
      const dictionary = t.schema.field(name).dictionary;
      if (dictionary) out[name] = {codes: out[name], dictionary};
      if (vector.validity) out[name] = {values: out[name], valid: await vector.validity.readValue()};
    }
    t.destroy();
    return out;
  };
  const tasks = {
    T1: () => value(gt.count(gt.greater(fare, 10))).then(c => c[0]),
    T2: () => read(trips.filter(t => gt.greater(t.fare, 10)), ['fare', 'tip', 'vendor']),
    T3: () => read(trips.topK('fare', 10), ['fare', 'vendor']),
    T4: () => read(trips.orderBy(['fare']), ['fare', 'vendor']),
    T5: () => value(gt.cumsum(fare)),
    T6: () => value(gt.mean(trips.getVector('tip'))).then(m => m[0]),
    T7: () => read(trips.groupBy(['vendor']).rollup({trips: 'count', meanFare: ['mean', 'fare']}), ['vendor', 'trips', 'meanFare']),
    T8: async () => {
      const {values, counts} = gt.valueCounts(trips.getVector('zone'));
      return {zone: await value(values), trips: await value(counts)};
    },
    T9: () => value(gt.histogram(fare, {bins: 24, range: [0, 48]})),
    T10: () => read(trips.join(zones, {on: ['zone', 'id']}), ['name'])
  };
  return {
    ...tasks,
    passes: id => VERBS[id],
    dispose: () => [trips, zones].forEach(t => t.destroy())
  };
}

// What a JS user writes over the decoded columns: one loop per task.
function jsRunner(d) {
  const {n, fare, tip, vendor, zone} = d;
  const byFare = () => Uint32Array.from({length: n}, (_, i) => i).sort((a, b) => fare[a] - fare[b] || a - b);
  return {
    T1: () => {
      let c = 0;
      for (let i = 0; i < n; i++) if (fare[i] > 10) c++;
      return c;
    },
    T2: () => {
      const out = {fare: [], tip: [], vendor: []};
      for (let i = 0; i < n; i++) {
        if (fare[i] > 10) {
          out.fare.push(fare[i]);
          out.tip.push(tip[i]);
          out.vendor.push(vendor[i]);
        }
      }
      return {fare: Float32Array.from(out.fare), tip: out.tip, vendor: out.vendor};
    },
    T3: () => {
      // A running top 10, kept sorted (ties by row).
      const top = [];
      for (let i = 0; i < n; i++) {
        if (top.length === 10 && fare[i] <= fare[top[9]]) continue;
        let at = top.length;
        while (at > 0 && fare[top[at - 1]] < fare[i]) at--;
        top.splice(at, 0, i);
        if (top.length > 10) top.pop();
      }
      return {fare: Float32Array.from(top, i => fare[i]), vendor: top.map(i => vendor[i])};
    },
    T4: () => {
      const order = byFare();
      return {fare: Float32Array.from(order, i => fare[i]), vendor: Array.from(order, i => vendor[i])};
    },
    T5: () => {
      const out = new Float32Array(n);
      let sum = 0;
      for (let i = 0; i < n; i++) out[i] = sum += fare[i];
      return out;
    },
    T6: () => {
      let sum = 0, count = 0;
      for (let i = 0; i < n; i++) {
        if (tip[i] !== null) {
          sum += tip[i];
          count++;
        }
      }
      return sum / count;
    },
    T7: () => {
      const groups = new Map();
      for (let i = 0; i < n; i++) {
        const g = groups.get(vendor[i]);
        if (g === undefined) groups.set(vendor[i], {trips: 1, sum: fare[i]});
        else {
          g.trips++;
          g.sum += fare[i];
        }
      }
      const names = [...groups.keys()].sort();
      return {vendor: names, trips: names.map(v => groups.get(v).trips), meanFare: names.map(v => groups.get(v).sum / groups.get(v).trips)};
    },
    T8: () => {
      const counts = new Uint32Array(ZONES.length);
      for (let i = 0; i < n; i++) counts[zone[i]]++;
      const zones = [];
      for (let z = 0; z < counts.length; z++) if (counts[z]) zones.push(z);
      return {zone: Uint32Array.from(zones), trips: Uint32Array.from(zones, z => counts[z])};
    },
    T9: () => {
      const counts = new Uint32Array(24);
      for (let i = 0; i < n; i++) if (fare[i] >= 0 && fare[i] <= 48) counts[Math.min(23, Math.floor(fare[i] / 2))]++;
      return counts;
    },
    T10: () => {
      const names = new Map(ZONES.map((name, z) => [z, name]));
      return {name: Array.from(zone, z => names.get(z))};
    },
    dispose() {}
  };
}

// Arquero's verbs over the same Arrow table; each answer materialized as arrays.
function arqueroRunner(d) {
  const t = aq.fromArrow(arrow.tableFromIPC(d.tripsIpc));
  const zones = aq.fromArrow(arrow.tableFromIPC(d.zonesIpc));
  return {
    T1: () => t.filter(r => r.fare > 10).numRows(),
    T2: () => {
      const f = t.filter(r => r.fare > 10).select('fare', 'tip', 'vendor').reify();
      return {fare: f.array('fare'), tip: f.array('tip'), vendor: f.array('vendor')};
    },
    T3: () => {
      const top = t.orderby(aq.desc('fare')).slice(0, 10).reify();
      return {fare: top.array('fare'), vendor: top.array('vendor')};
    },
    T4: () => {
      const s = t.orderby('fare').reify();
      return {fare: s.array('fare'), vendor: s.array('vendor')};
    },
    T5: () => t.derive({run: aq.rolling(r => op.sum(r.fare))}).array('run'),
    T6: () => t.rollup({m: aq.op.mean('tip')}).get('m', 0),
    T7: () => {
      const g = t.groupby('vendor').rollup({trips: aq.op.count(), meanFare: aq.op.mean('fare')}).orderby('vendor');
      return {vendor: g.array('vendor'), trips: g.array('trips'), meanFare: g.array('meanFare')};
    },
    T8: () => {
      const g = t.groupby('zone').count({as: 'trips'}).orderby('zone');
      return {zone: g.array('zone'), trips: g.array('trips')};
    },
    T9: () => t.filter(r => r.fare >= 0 && r.fare <= 48).derive({bin: aq.escape(r => Math.min(23, Math.floor(r.fare / 2)))}).groupby('bin').count().orderby('bin').array('count'),
    T10: () => ({name: t.lookup(zones, ['zone', 'id'], 'name').array('name')}),
    dispose() {}
  };
}

async function duckdbRunner(d) {
  const {db, conn} = await openDuckdb();
  conn.insertArrowFromIPCStream(arrow.tableToIPC(arrow.tableFromIPC(d.tripsIpc), 'stream'), {name: 'trips'});
  conn.insertArrowFromIPCStream(arrow.tableToIPC(arrow.tableFromIPC(d.zonesIpc), 'stream'), {name: 'zones'});
  const columns = (sql, names) => () => {
    const table = conn.query(sql);
    return Object.fromEntries(names.map(name => [name, table.getChild(name).toArray()]));
  };
  return {
    T1: () => conn.query('SELECT count(*) AS c FROM trips WHERE fare > 10').getChild('c').get(0),
    T2: columns('SELECT fare, tip, vendor FROM trips WHERE fare > 10 ORDER BY rowid', ['fare', 'tip', 'vendor']),
    T3: columns('SELECT fare, vendor FROM trips ORDER BY fare DESC, rowid LIMIT 10', ['fare', 'vendor']),
    T4: columns('SELECT fare, vendor FROM trips ORDER BY fare, rowid', ['fare', 'vendor']),
    T5: columns('SELECT sum(fare) OVER (ORDER BY rowid) AS run FROM trips ORDER BY rowid', ['run']),
    T6: () => conn.query('SELECT avg(tip) AS m FROM trips').getChild('m').get(0),
    T7: columns('SELECT vendor, count(*) AS trips, avg(fare) AS meanFare FROM trips GROUP BY vendor ORDER BY vendor', ['vendor', 'trips', 'meanFare']),
    T8: columns('SELECT zone, count(*) AS trips FROM trips GROUP BY zone ORDER BY zone', ['zone', 'trips']),
    T9: columns('SELECT least(floor(fare / 2), 23) AS bin, count(*) AS c FROM trips WHERE fare BETWEEN 0 AND 48 GROUP BY bin ORDER BY bin', ['c']),
    T10: columns('SELECT z.name FROM trips t JOIN zones z ON t.zone = z.id ORDER BY t.rowid', ['name']),
    dispose() {
      conn.close();
      db.reset();
    }
  };
}

const PEER_RUNNERS = {
  js: {label: 'JS loops', make: d => jsRunner(d)},
  arquero: {label: 'Arquero 8.0', make: d => arqueroRunner(d)},
  duckdb: {label: 'DuckDB-wasm 1.32', make: d => duckdbRunner(d)}
};

// Text as strings (a dictionary column's codes through its dictionary), numbers as numbers.
function plain(answer) {
  if (answer?.codes) return Array.from(answer.codes, c => answer.dictionary[c]);
  if (answer?.valid) return Array.from(answer.values, (v, i) => (answer.valid[i] ? v : null));
  if (ArrayBuffer.isView(answer) || Array.isArray(answer)) return Array.from(answer);
  if (answer && typeof answer === 'object') return Object.fromEntries(Object.entries(answer).map(([k, v]) => [k, plain(v)]));
  return answer;
}

// Whether `ours` is the loops' answer: exact, but for float sums (running totals, means)
// within float32's rounding of a total of many rows.
function agrees(id, ours, theirs) {
  const close = (a, b) => a === b || (a === null && b === null) || Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b));
  const same = (a, b) => (Array.isArray(a) ? a.length === b.length && a.every((v, i) => same(v, b[i])) : ['T5', 'T6', 'T7'].includes(id) ? close(a, b) : a === b || (Number.isNaN(a) && Number.isNaN(b)));
  if (typeof theirs !== 'object' || Array.isArray(theirs)) return same(ours, theirs);
  return Object.keys(theirs).every(k => same(ours[k], theirs[k]));
}

const n0 = ROWS[0];
console.log('# the user trial\'s ten tasks end to end on the CPU device (T-series)');
console.log(`node ${process.version}; one thread per engine; ${n0.toLocaleString('en-US')} trips and 260 zones loaded once from Arrow IPC (gputable: GPUTable.fromArrowIPCSync, text as dictionaries)`);
console.log('median ms of each task\'s verbs (or loop, or query) and every answer read into JS arrays\n');
{
  // Every answer checked against the loops' once, before the timings.
  const d = makeData(n0);
  const ours = gputableRunner(d), loops = jsRunner(d);
  const differ = [];
  for (const {id} of TASKS) {
    if (!agrees(id, plain(await ours[id]()), plain(loops[id]()))) differ.push(id);
  }
  ours.dispose();
  console.log(differ.length ? `answers that differ from the JS loops: ${differ.join(', ')}\n` : 'every answer equals the JS loops\' (float sums within 1e-4)\n');
}

await runSeries({
  rows: ROWS,
  workloads: TASKS,
  makeData,
  ours: gputableRunner,
  peers: PEERS,
  runners: PEER_RUNNERS,
  rate: (w, n, ms) => (n / ms / 1e3).toFixed(0),
  rateLabel: 'M rows/s',
  passesLabel: 'gputable verbs per task:'
});
