// The demo page's computation: which trips pass the fare and distance filters, where to draw
// them, how many there are and a histogram of their fares, as one fused graph; and the same
// in a plain JavaScript loop, the page's check and its peer.

export const BINS = 24;
export const BIN_WIDTH = 2;
/** Where a filtered-out trip is drawn: outside the plot. */
const HIDDEN = 1e6;

/** `x > 0` as a number that is nonzero exactly there (there are no comparison ops: x + |x|). */
const positive = (gt, x) => gt.add(x, gt.abs(x));

/**
 * The graph for `minFare` and `maxKm` over resident columns `pickup` (size 2), `dropoff`
 * (size 2) and `fare`: `points` (float32 x 3: pickup x, y and fare per km; hidden trips moved
 * off the plot), `count` (trips shown) and `histogram` (trips shown per fare bin of
 * BIN_WIDTH, the last bin open-ended), reduced in one pass.
 */
export function filterGraph(gt, {pickup, dropoff, fare}, {minFare, maxKm}) {
  const km = gt.length(gt.subtract(dropoff, pickup));
  const shown = gt.multiply(positive(gt, gt.subtract(fare, minFare)), positive(gt, gt.subtract(maxKm, km)));
  const points = gt.select(shown, gt.interleave(pickup, gt.divide(fare, km)), [HIDDEN, HIDDEN, 0]);
  const one = gt.select(shown, 1, 0);
  const count = gt.sum(one);
  // The bin of each fare, clamped to the last. A lane per bin holds 1 where the trip is
  // shown and in that bin. Each sum adds four bins' lanes: a reduction fuses the work that
  // makes its input only for rows of at most 4 lanes (wider ones are stored first). The
  // sums' rows side by side are the histogram.
  const scaled = gt.divide(fare, BIN_WIDTH);
  const room = gt.subtract(BINS - 1, scaled);
  const bin = gt.cast(gt.select(positive(gt, room), scaled, BINS - 1), 'uint32');
  const lane = i => gt.multiply(one, gt.equalAll(bin, gt.GPUTableEvaluator.fromConstant(i, 'uint32')));
  const sums = Array.from({length: BINS / 4}, (_, k) => gt.sum(gt.interleave(...[0, 1, 2, 3].map(j => lane(4 * k + j)))));
  const histogram = gt.interleave(...sums);
  return {points, count, histogram};
}

/**
 * The same in a JavaScript loop over the host arrays, in float32 where the graph is.
 * `borderline` counts trips within a rounding step of the distance bound: a GPU may fuse the
 * length's multiply-adds and put those on the other side, so counts may differ by that many.
 */
export function filterLoop(trips, {minFare, maxKm}) {
  const f = Math.fround;
  const [fareBound, kmBound] = [f(minFare), f(maxKm)];
  const histogram = new Array(BINS).fill(0);
  let count = 0, borderline = 0;
  for (let i = 0; i < trips.rows; i++) {
    const dx = f(trips.dropoff[2 * i] - trips.pickup[2 * i]);
    const dy = f(trips.dropoff[2 * i + 1] - trips.pickup[2 * i + 1]);
    const km = f(Math.sqrt(f(f(dx * dx) + f(dy * dy))));
    if (Math.abs(km - kmBound) <= 4e-7 * kmBound) borderline++;
    const fare = trips.fare[i];
    if (!(f(fare - fareBound) > 0 && f(kmBound - km) > 0)) continue;
    count++;
    const scaled = f(fare / BIN_WIDTH);
    histogram[f(BINS - 1 - scaled) > 0 ? Math.trunc(scaled) : BINS - 1]++;
  }
  return {count, histogram, borderline};
}

/** Whether the graph's count and histogram are the loop's, up to its borderline trips. */
export function sameCounts(reference, count, histogram) {
  const off = reference.histogram.reduce((sum, v, i) => sum + Math.abs(v - histogram[i]), 0);
  return Math.abs(reference.count - count) <= reference.borderline && off <= 2 * reference.borderline;
}
