// The demo page's questions of the trips, asked again each time a slider moves: which trips
// pass the fare and distance filters (drawn), their fares' histogram, trips and mean fare by
// company, and the ten dearest, as one lazy graph of table verbs evaluated at once;
// and the same in a plain JavaScript loop, the page's check and its peer.

export const BINS = 24;
export const BIN_WIDTH = 2;
export const TOP = 10;

/**
 * The graph for `minFare` and `maxKm` over resident columns `pickup` and `dropoff` (float32
 * x 2), `fare` (float32) and `vendor` (uint8 codes with a dictionary): `points` (the shown
 * trips as float32 x 3 rows: pickup x, y and fare per km), `histogram` (shown trips per fare
 * bin of BIN_WIDTH, the last bin open-ended), `byVendor` (groupBy: `keys`, `trips`,
 * `meanFare`) and `dearest` (the TOP dearest shown trips: `fare`, `km`, `perKm`, `vendor`).
 */
export function tripsQuery(gt, {pickup, dropoff, fare, vendor}, {minFare, maxKm}) {
  const km = gt.length(gt.subtract(dropoff, pickup));
  const perKm = gt.divide(fare, km);
  const shown = gt.and(gt.greater(fare, minFare), gt.less(km, maxKm));
  const kept = {perKm: gt.filter(perKm, shown), fare: gt.filter(fare, shown), km: gt.filter(km, shown), vendor: gt.filter(vendor, shown)};
  const points = gt.filter(gt.interleave(pickup, perKm), shown);
  // Fares past the last bin are counted in it.
  const lastBin = gt.minimum(fare, (BINS - 0.5) * BIN_WIDTH);
  const histogram = gt.histogram(lastBin, {bins: BINS, range: [0, BINS * BIN_WIDTH]}, {where: shown});
  const byVendor = gt.groupBy(kept.vendor, {trips: 'count', meanFare: ['mean', kept.fare]});
  const top = gt.topK(kept.fare, TOP);
  const dearest = {fare: top.values, perKm: gt.gather(top.indices, kept.perKm), km: gt.gather(top.indices, kept.km), vendor: gt.gather(top.indices, kept.vendor)};
  return {points, histogram, byVendor, dearest};
}

/** Destroys every evaluator of a graph (nested in objects and arrays). */
export function destroyGraph(graph) {
  for (const value of Object.values(graph)) {
    if (typeof value.destroy === 'function') value.destroy();
    else destroyGraph(value);
  }
}

/** The graph's answers read back: `{count, histogram, vendors: [{vendor, trips, meanFare}], dearest: [{vendor, fare, km, perKm}]}`. */
export async function answersOf(device, graph) {
  const count = (await graph.points.evaluate(device)).length;
  const histogram = Array.from(await graph.histogram.readValue());
  const names = graph.byVendor.keys[0].dictionary;
  const [codes, trips, means] = await Promise.all([graph.byVendor.keys[0], graph.byVendor.trips, graph.byVendor.meanFare].map(e => e.readValue()));
  const vendors = Array.from(codes, (code, i) => ({vendor: names[code], trips: trips[i], meanFare: means[i]}));
  const top = graph.dearest;
  const [fare, km, perKm, vendor] = await Promise.all([top.fare, top.km, top.perKm, top.vendor].map(e => e.readValue()));
  const dearest = Array.from(fare, (value, i) => ({vendor: names[vendor[i]], fare: value, km: km[i], perKm: perKm[i]}));
  return {count, histogram, vendors, dearest};
}

/**
 * The same in a JavaScript loop over the host arrays, in float32 where the graph is.
 * `borderline` counts trips within a rounding step of the distance bound: a GPU may fuse the
 * length's multiply-adds and put those on the other side, so counts may differ by that many.
 */
export function tripsLoop(trips, names, {minFare, maxKm}) {
  const f = Math.fround;
  const [fareBound, kmBound] = [f(minFare), f(maxKm)];
  const histogram = new Array(BINS).fill(0);
  const tripCounts = new Array(names.length).fill(0), fares = new Array(names.length).fill(0);
  const best = [];
  let count = 0, borderline = 0;
  for (let i = 0; i < trips.rows; i++) {
    const dx = f(trips.dropoff[2 * i] - trips.pickup[2 * i]);
    const dy = f(trips.dropoff[2 * i + 1] - trips.pickup[2 * i + 1]);
    const km = f(Math.sqrt(f(f(dx * dx) + f(dy * dy))));
    if (Math.abs(km - kmBound) <= 4e-7 * kmBound) borderline++;
    const fare = trips.fare[i];
    if (!(fare > fareBound && km < kmBound)) continue;
    count++;
    histogram[Math.min(Math.floor(fare / BIN_WIDTH), BINS - 1)]++;
    tripCounts[trips.vendor[i]]++;
    fares[trips.vendor[i]] += fare;
    // The TOP dearest so far, dearest first; a tie keeps the earlier trip first (topK's order).
    if (best.length < TOP || fare > best[best.length - 1].fare) {
      let at = best.length;
      while (at > 0 && fare > best[at - 1].fare) at--;
      best.splice(at, 0, {vendor: names[trips.vendor[i]], fare, km, perKm: f(fare / km)});
      if (best.length > TOP) best.pop();
    }
  }
  const vendors = names.map((vendor, code) => ({vendor, trips: tripCounts[code], meanFare: fares[code] / tripCounts[code]}))
    .filter(group => group.trips > 0)
    .sort((a, b) => (a.vendor < b.vendor ? -1 : 1));
  return {count, histogram, vendors, dearest: best, borderline};
}

const close = (a, b, tolerance) => Math.abs(a - b) <= tolerance * Math.max(Math.abs(a), Math.abs(b), 1e-30);

/**
 * Whether the graph's answers are the loop's: counts up to its borderline trips, means and
 * prices up to float32 rounding (sums may add in another order). Borderline trips may also change the means and the top ten, so those are compared
 * only when there are none.
 */
export function sameAnswers(reference, answers) {
  const slack = reference.borderline;
  const off = reference.histogram.reduce((sum, v, i) => sum + Math.abs(v - answers.histogram[i]), 0);
  const vendorsMatch = reference.vendors.length === answers.vendors.length && reference.vendors.every((group, i) => {
    const other = answers.vendors[i];
    return group.vendor === other.vendor && Math.abs(group.trips - other.trips) <= slack && (slack > 0 || close(group.meanFare, other.meanFare, 1e-5));
  });
  const topMatches = slack > 0 || (reference.dearest.length === answers.dearest.length &&
    reference.dearest.every((row, i) => row.fare === answers.dearest[i].fare && row.vendor === answers.dearest[i].vendor));
  return Math.abs(reference.count - answers.count) <= slack && off <= 2 * slack && vendorsMatch && topMatches;
}
