// The table verbs part of `npm run demo`: the generated trips as a GPUTable, asked what a
// data app asks (which rows pass, in what order, how many per group, joined to a table of
// names), each answer timed and checked against a plain JavaScript loop over the same arrays.

/** Zones of the city: a 6 x 4 grid of 5 km squares over pickups in x -15..15, y -10..10. */
const ZONE_COLUMNS = 6;
const ZONE_NAMES = Array.from({length: 24}, (_, z) => `${['North', 'Upper', 'Lower', 'South'][Math.floor(z / ZONE_COLUMNS)]} ${['Docks', 'Mills', 'Market', 'Park', 'Heights', 'Fields'][z % ZONE_COLUMNS]}`);
// In float32, as the device computes it.
const cell = (v, offset, last) => Math.min(last, Math.max(0, Math.floor(Math.fround(Math.fround(v + offset) / 5))));
const zoneOf = (x, y) => cell(y, 10, 3) * ZONE_COLUMNS + cell(x, 15, ZONE_COLUMNS - 1);
const sameNumbers = (a, b, tolerance = 0) => a.length === b.length && Array.from(a).every((v, i) => Math.abs(v - b[i]) <= tolerance * Math.abs(b[i]));

/** Runs the verbs with the package `gt` on `device` over `trips` (www/demo.js's), printing through `print`; returns the checks. */
export async function runVerbsDemo(gt, device, trips, print) {
  const E = gt.GPUTableEvaluator;
  const schema = new gt.GPUSchema([
    new gt.GPUField({name: 'pickup', type: 'float32', size: 2}),
    new gt.GPUField({name: 'fare', type: 'float32'}),
    new gt.GPUField({name: 'passengers', type: 'uint8'})
  ]);
  const vectors = await Promise.all([E.fromArray(trips.pickup, {size: 2}), E.fromArray(trips.fare), E.fromArray(trips.passengers)].map(e => e.evaluate(device)));
  const table = new gt.GPUTable({schema, batches: [new gt.GPURecordBatch(vectors, schema)], device});
  const zoneSchema = new gt.GPUSchema([new gt.GPUField({name: 'zone', type: 'uint8'}), new gt.GPUField({name: 'name', type: 'uint8', dictionary: ZONE_NAMES})]);
  const zoneIds = Uint8Array.from(ZONE_NAMES, (_, z) => z);
  const zoneVectors = await Promise.all([E.fromArray(zoneIds), E.fromArray(zoneIds)].map(e => e.evaluate(device)));
  const zones = new gt.GPUTable({schema: zoneSchema, batches: [new gt.GPURecordBatch(zoneVectors, zoneSchema)], device});
  const {rows, fare, passengers, pickup} = trips;
  const checks = [];
  const made = [];

  // Each step: the verb timed, then the loop timed, the two compared.
  async function step(label, verb, loop, same, describe) {
    const t0 = performance.now();
    const answer = await verb();
    const ms = performance.now() - t0;
    const t1 = performance.now();
    const expected = loop();
    const loopMs = performance.now() - t1;
    const ok = await same(answer, expected);
    checks.push({label, ok, ms, loopMs});
    print(`  ${ms.toFixed(1).padStart(7)} ms  ${label}: ${describe(answer, expected)} (JS loop ${loopMs.toFixed(1)} ms, ${ok ? 'the same' : 'DIFFERENT'})`);
    return answer;
  }
  const column = (t, name) => t.getVector(name).readValue();

  print(`\ntable verbs on ${rows.toLocaleString('en-US')} trips (${device.type} device):`);
  const pricey = await step('filter(fare > 20)',
    () => table.filter(t => gt.greater(t.fare, 20)),
    () => fare.filter(v => v > 20),
    async (t, expected) => sameNumbers(await column(t, 'fare'), expected),
    t => `${t.numRows.toLocaleString('en-US')} rows`);
  made.push(pricey);

  await step('histogram(fare, 24 bins of $2)',
    async () => {
      const counts = gt.histogram(E.fromVector(table.getVector('fare')), {bins: 24, range: [0, 48]});
      const value = await counts.readValue();
      counts.destroy();
      return value;
    },
    () => {
      const counts = new Uint32Array(24);
      for (const v of fare) if (v >= 0 && v <= 48) counts[Math.min(23, Math.floor(v / 2))]++;
      return counts;
    },
    (counts, expected) => sameNumbers(counts, expected),
    counts => `[${Array.from(counts.slice(0, 8)).join(', ')}, ...]`);

  const byPassengers = await step('groupBy(passengers).rollup(count, mean fare)',
    () => table.groupBy(['passengers']).rollup({trips: 'count', meanFare: ['mean', 'fare']}),
    () => {
      const counts = new Array(256).fill(0), sums = new Array(256).fill(0);
      for (let i = 0; i < rows; i++) {
        counts[passengers[i]]++;
        sums[passengers[i]] += fare[i];
      }
      return counts.flatMap((n, p) => (n ? [[p, n, sums[p] / n]] : []));
    },
    async (t, expected) => {
      const [keys, counts, means] = await Promise.all(['passengers', 'trips', 'meanFare'].map(name => column(t, name)));
      return sameNumbers(keys, expected.map(g => g[0])) && sameNumbers(counts, expected.map(g => g[1])) && sameNumbers(means, expected.map(g => g[2]), 1e-5);
    },
    t => `${t.numRows} groups`);
  made.push(byPassengers);

  const top = await step('topK(fare, 5)',
    () => table.topK('fare', 5),
    () => Float32Array.from(fare).sort().reverse().slice(0, 5),
    async (t, expected) => sameNumbers(await column(t, 'fare'), expected),
    (t, expected) => `$${Array.from(expected, v => v.toFixed(2)).join(', $')}`);
  made.push(top);

  const ordered = await step('orderBy([passengers, fare], descending fare)',
    () => table.orderBy(['passengers', 'fare'], {descending: [false, true]}),
    () => Uint32Array.from({length: rows}, (_, i) => i).sort((a, b) => passengers[a] - passengers[b] || fare[b] - fare[a] || a - b),
    async (t, order) => sameNumbers(await column(t, 'fare'), Array.from(order, i => fare[i])) && sameNumbers(await column(t, 'passengers'), Array.from(order, i => passengers[i])),
    t => `${t.numRows.toLocaleString('en-US')} rows`);
  made.push(ordered);

  await step('cumsum(fare), last row',
    async () => {
      const running = gt.cumsum(E.fromVector(table.getVector('fare')));
      const last = rows ? (await running.readValue(rows - 1, rows))[0] : 0;
      running.destroy();
      return last;
    },
    () => fare.reduce((sum, v) => sum + v, 0),
    (last, expected) => Math.abs(last - expected) <= 1e-5 * expected,
    last => `$${last.toFixed(0)}`);

  // Each trip's pickup zone derived on the device, joined to the zones' names (a dictionary
  // column), then counted per name: the busiest zones.
  const zoned = await step('derive(zone), join(zones), groupBy(name)',
    async () => {
      const withZone = await table.derive({zone: t => {
        const cell = gt.floor(gt.divide(gt.add(t.pickup, [15, 10]), 5));
        const clamped = gt.clamp(cell, 0, [ZONE_COLUMNS - 1, 3]);
        return gt.cast(gt.add(gt.multiply(gt.swizzle(clamped, [1]), ZONE_COLUMNS), gt.swizzle(clamped, [0])), 'uint8');
      }});
      const joined = await withZone.join(zones, {on: 'zone'});
      const counted = await joined.groupBy(['name']).rollup({trips: 'count'});
      for (const t of [withZone, joined]) t.destroy();
      return counted;
    },
    () => {
      const counts = new Array(ZONE_NAMES.length).fill(0);
      for (let i = 0; i < rows; i++) counts[zoneOf(pickup[2 * i], pickup[2 * i + 1])]++;
      return ZONE_NAMES.map((name, z) => [name, counts[z]]).filter(([, n]) => n > 0).sort((a, b) => (a[0] < b[0] ? -1 : 1));
    },
    async (t, expected) => {
      const names = t.schema.field('name').dictionary;
      const [codes, counts] = await Promise.all(['name', 'trips'].map(name => column(t, name)));
      const got = Array.from(codes, (code, i) => [names[code], counts[i]]);
      return JSON.stringify(got) === JSON.stringify(expected);
    },
    (t, expected) => {
      const busiest = [...expected].sort((a, b) => b[1] - a[1]).slice(0, 3);
      return `${t.numRows} zones, busiest ${busiest.map(([name, n]) => `${name} ${n.toLocaleString('en-US')}`).join(', ')}`;
    });
  made.push(zoned);

  for (const t of [...made, table, zones]) t.destroy();
  return checks;
}

