// In a browser, beside gpu-bench.js: the G-series workloads that luma.gl's gpu-core also
// runs (histograms, a group-by of dense keys, a lookup), on a gputable GPU device, beside a
// JS loop and, on WebGPU, luma.gl 9.4.2 on the same adapter (bench/luma-groups.js). Each
// side's inputs stay on its device between runs; timed: the work plus reading every output
// back into JS.
import {groupLoops} from './group-loops.js';

function xorshift(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return s >>> 0;
  };
}

/**
 * The G-series data of `n` rows (bench/groups.js's, without the text column): 20 vendor codes
 * as uint8, as a user stores them (luma.gl takes them as uint32).
 */
function groupData(n) {
  const next = xorshift(11);
  const fare = new Float32Array(n), vendor = new Uint8Array(n), zone = new Uint32Array(n);
  const probe = new Uint32Array(n);
  const tableRows = 100000;
  for (let i = 0; i < n; i++) {
    fare[i] = (next() / 4294967296) * 200 - 100;
    vendor[i] = next() % 20;
    zone[i] = next() % 1000;
    probe[i] = next() % (tableRows + tableRows / 10);
  }
  const tableKeys = new Uint32Array(tableRows);
  for (let i = 0; i < tableRows; i++) tableKeys[i] = (i * 7919) % tableRows;
  const edges = Float32Array.from({length: 1001}, (_, i) => (i * i) / 5000 - 100);
  return {n, fare, vendor, zone, probe, tableKeys, edges};
}

export const GROUP_WORKLOADS = [
  ['G1', 'groupBy 20 keys: sum and count of fare'],
  ['G3', 'valueCounts of 1k distinct uint32'],
  ['G4', 'histogram 24 equal bins over [-100, 100]'],
  ['G5', 'histogram 1,000 irregular edges'],
  ['G6', 'lookup of every row in 100k keys']
];

/**
 * Runs the workloads at `n` rows on `device`: per workload gputable's median ms and passes,
 * the JS loop's, luma.gl's where `luma` (bench/luma-groups.js) is given, and whether the
 * counts agree with the loop's.
 */
export async function groupRuns(gt, device, n, median, luma) {
  const d = groupData(n);
  const E = gt.GPUTableEvaluator;
  const cols = {
    fare: E.fromArray(d.fare), vendor: E.fromArray(d.vendor), zone: E.fromArray(d.zone),
    probe: E.fromArray(d.probe), tableKeys: E.fromArray(d.tableKeys)
  };
  for (const c of Object.values(cols)) await c.evaluate(device);
  const edges = Array.from(d.edges);
  const graphs = {
    G1: () => {
      const g = gt.groupBy(cols.vendor, {sum: ['sum', cols.fare], count: 'count'});
      return [g.sum, g.count];
    },
    G3: () => [gt.valueCounts(cols.zone).counts],
    G4: () => [gt.histogram(cols.fare, {bins: 24, range: [-100, 100]})],
    G5: () => [gt.histogram(cols.fare, {edges})],
    G6: () => [gt.lookup(cols.probe, cols.tableKeys)]
  };
  const read = async build => {
    const out = build();
    await gt.cleanEvaluate(device, out);
    const values = [];
    for (const r of out) values.push(await r.readValue());
    out.forEach(r => r.destroy());
    return values;
  };
  const loop = groupLoops(d);
  const lumaRuns = luma && {
    G1: () => luma.lumaGroupAggregation({keys: Uint32Array.from(d.vendor), values: d.fare, groups: 20, operations: ['count', 'sum']}),
    G4: () => luma.lumaHistogram({values: d.fare, bins: 24, domain: [-100, 100]}),
    G5: () => luma.lumaHistogramEdges({values: d.fare, edges: d.edges}),
    G6: () => luma.lumaLookup({probeKeys: d.probe, buildKeys: d.tableKeys, mode: 'query'})
  };
  const out = [];
  for (const [id, name] of GROUP_WORKLOADS) {
    const row = {id, name};
    try {
      const plan = graphs[id]().at(-1).explain(device);
      row.passes = plan.split('\n').find(line => line.endsWith(' in all')) ?? '?';
      const expected = loop[id]();
      const got = await read(graphs[id]);
      const counts = id === 'G1' ? expected.counts : expected;
      const ours = id === 'G1' ? got[1] : got[0];
      row.agrees = counts.length === ours.length && counts.every((c, i) => c === ours[i]);
      row.ms = await median(() => read(graphs[id]));
      row.jsMs = await median(async () => loop[id]());
      if (lumaRuns?.[id]) {
        const theirs = await lumaRuns[id]().catch(error => ({error: `${error.name}: ${error.message}`}));
        if (theirs.error) row.lumaError = theirs.error;
        else {
          row.lumaMs = theirs.ms;
          // luma's counts (G1), bins, or rows found (0xffffffff where none is).
          const lumaCounts = {G1: theirs.result?.count, G6: Int32Array.from(theirs.result?.values ?? [])}[id] ?? theirs.result;
          row.lumaAgrees = counts.length === lumaCounts?.length && counts.every((c, i) => c === lumaCounts[i]);
        }
      }
    } catch (error) {
      row.error = `${error.code ?? error.name}: ${error.message}`;
    }
    out.push(row);
  }
  Object.values(cols).forEach(c => c.destroy());
  return out;
}
