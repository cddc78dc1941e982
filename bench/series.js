// The Node benchmarks' shared runner: each workload timed for gputable and each peer at each
// row count, then one markdown table with the ratio to the best peer.
import {createRequire} from 'node:module';
import {dirname, join} from 'node:path';
import os from 'node:os';
import * as duckdb from '@duckdb/duckdb-wasm/blocking';
import {time} from './timing.js';

const fmt = ms => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));

/**
 * Times `workloads` ({id, name}) at each of `rows`: `ours(data)` and each of `peers` (names
 * of `runners`: {label, make(data)}) give `{[id]: run, dispose()}`; `ours` also
 * `passes(id)`, printed for the first row count. A peer without a workload runs
 * `fallback(id)`'s, if any. `rate(w, n, ms)` fills the column named `rateLabel`; `passesLabel`
 * heads the list of `passes`.
 */
export async function runSeries({rows, workloads, makeData, ours, peers, runners, fallback = () => null, rate, rateLabel, passesLabel = 'passes per workload (gputable explain()):'}) {
  const measured = [];
  for (const n of rows) {
    const data = makeData(n);
    const runner = ours(data);
    const results = {};
    for (const w of workloads) results[w.id] = {gputable: await time(runner[w.id])};
    if (n === rows[0]) {
      console.log(passesLabel);
      for (const w of workloads) console.log(`  ${w.id}: ${runner.passes(w.id)}`);
      console.log('');
    }
    runner.dispose();
    for (const peer of peers) {
      const theirs = await runners[peer].make(data);
      for (const w of workloads) {
        const work = theirs[w.id] ?? theirs[fallback(w.id)];
        results[w.id][peer] = work ? await time(work) : NaN;
      }
      theirs.dispose();
    }
    for (const w of workloads) {
      const r = results[w.id];
      const timed = peers.map(p => r[p]).filter(ms => !Number.isNaN(ms));
      measured.push({n, w, r, best: timed.length ? Math.min(...timed) : NaN});
    }
  }
  const header = ['rows', 'workload', 'gputable ms', rateLabel, ...peers.map(p => `${runners[p].label} ms`), 'vs best peer'];
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const {n, w, r, best} of measured) {
    const cells = [
      n >= 1e6 ? `${n / 1e6}M` : String(n),
      `${w.id} ${w.name}`,
      fmt(r.gputable),
      rate(w, n, r.gputable),
      ...peers.map(p => (Number.isNaN(r[p]) ? '-' : fmt(r[p]))),
      Number.isNaN(best) ? '-' : best >= r.gputable ? `${(best / r.gputable).toFixed(2)}x faster` : `${(r.gputable / best).toFixed(2)}x slower`
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
}

/** DuckDB-wasm's blocking Node build (one thread), instantiated, and a connection to it. */
export async function openDuckdb() {
  const require = createRequire(import.meta.url);
  const dist = dirname(require.resolve('@duckdb/duckdb-wasm/dist/duckdb-mvp.wasm'));
  const bundles = {
    mvp: {mainModule: join(dist, 'duckdb-mvp.wasm'), mainWorker: ''},
    eh: {mainModule: join(dist, 'duckdb-eh.wasm'), mainWorker: ''}
  };
  const db = await duckdb.createDuckDB(bundles, new duckdb.VoidLogger(), duckdb.NODE_RUNTIME);
  await db.instantiate();
  return {db, conn: db.connect()};
}

/** The series' heading: its title, the host, and what is timed. */
export function printHeading(title) {
  console.log(`# ${title}`);
  console.log(`node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown cpu'}, ${os.cpus().length} cores, one thread per engine`);
  console.log('median ms of graph build + evaluate (output materialized, no readback); M rows/s = rows / time\n');
}

/** A deterministic uint32 stream (xorshift32), so every engine sees the same data. */
export function xorshift(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return s >>> 0;
  };
}
