import * as gt from 'gputable';
const n = 1e6; const key = new Uint32Array(n);
let s = 11; for (let i = 0; i < n; i++) { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; key[i] = (s >>> 0) % 1000; }
const K = gt.GPUTableEvaluator.fromArray(key);
const {values: v, counts: c} = gt.valueCounts(K);
console.log(c.explain());
for (let r = 0; r < 3; r++) {
  const t = performance.now();
  for (let k = 0; k < 10; k++) { const {values: v, counts: c} = gt.valueCounts(K); await gt.cleanEvaluate(null, [v, c]); }
  console.log('ms', (performance.now() - t) / 10);
}
