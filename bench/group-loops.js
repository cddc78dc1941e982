// What a JS user writes for the G-series workloads that index a typed array (bench/groups.js
// in Node, bench/gpu-groups.js in a browser): one loop each into a typed-array table.
// `d`: {n, fare, vendor (20 codes), zone (1,000), probe, tableKeys, edges (1,001)}.
export function groupLoops(d) {
  const {n, fare, vendor, zone, probe, tableKeys, edges} = d;
  const bins = (bin, count) => {
    const counts = new Uint32Array(count);
    for (let i = 0; i < n; i++) {
      const b = bin(fare[i]);
      if (b >= 0) counts[b]++;
    }
    return counts;
  };
  return {
    G1: () => {
      const sums = new Float64Array(20), counts = new Uint32Array(20);
      for (let i = 0; i < n; i++) {
        sums[vendor[i]] += fare[i];
        counts[vendor[i]]++;
      }
      return {sums: Float32Array.from(sums), counts, means: Float32Array.from(sums, (s, g) => s / counts[g])};
    },
    G3: () => {
      const counts = new Uint32Array(1000);
      for (let i = 0; i < n; i++) counts[zone[i]]++;
      return counts;
    },
    G4: () => bins(v => (v < -100 || v > 100 ? -1 : Math.min(23, Math.floor((v + 100) / (200 / 24)))), 24),
    G5: () => bins(v => {
      if (!(v >= edges[0] && v <= edges[1000])) return -1;
      let lo = 0, hi = 1001;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (edges[mid] <= v) lo = mid + 1;
        else hi = mid;
      }
      return Math.min(lo, 1000) - 1;
    }, 1000),
    G6: () => {
      const first = new Map();
      for (let i = 0; i < tableKeys.length; i++) if (!first.has(tableKeys[i])) first.set(tableKeys[i], i);
      const out = new Int32Array(n);
      for (let i = 0; i < n; i++) out[i] = first.get(probe[i]) ?? -1;
      return out;
    }
  };
}
