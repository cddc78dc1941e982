// Shared by the CPU (Node) and GPU (Chromium) benchmarks: a column 8 x larger than
// `allowedMem` streamed through a device, against the same work with no budget (and on the
// CPU, a sort of such a column: runs and a merge).
//
// Timed, on both devices: the column copied from a typed array into an evaluator of 64
// chunks, `sqrt(x * x + 1)` evaluated, and every row read back. Under the budget each chunk
// task brings its part to the device and its output chunk back to the host; unbounded, the
// column goes to the device whole and the output is read from there.

/** `{rows, allowedMem, peakBytes, boundedMs, unboundedMs, ratio}` on devices of `type`. */
export async function streamingRun(gt, type, rows, median) {
  return budgetRun(gt, type, rows, median, x => gt.sqrt(gt.add(gt.multiply(x, x), 1)));
}

/**
 * `streamingRun` of `sort(x, {descending: true})`: under the budget, runs that fit are sorted
 * on the device and merged (api.md "Memory").
 */
export async function sortStreamingRun(gt, type, rows, median) {
  return budgetRun(gt, type, rows, median, x => gt.sort(x, {descending: true}));
}

async function budgetRun(gt, type, rows, median, graph) {
  const values = new Float32Array(rows);
  for (let i = 0; i < rows; i++) values[i] = ((i * 7919) % 1000) / 10;
  const allowedMem = Math.floor((rows * 4) / 8);
  const bounded = await gt.createDevice({type, allowedMem});
  const unbounded = await gt.createDevice({type});
  const chunks = Math.ceil(rows / 64);
  const run = device => async () => {
    const x = gt.GPUTableEvaluator.fromArray(values, {chunks});
    const r = graph(x);
    await r.evaluate(device);
    const out = await r.readValue();
    r.destroy();
    x.destroy();
    return out;
  };
  const [a, b] = [await run(bounded)(), await run(unbounded)()];
  if (a.length !== rows || a.some((v, i) => v !== b[i])) throw new Error('the budgeted result differs');
  bounded.resetPeak();
  const boundedMs = await median(run(bounded));
  const peakBytes = bounded.memory.peakBytes;
  const unboundedMs = await median(run(unbounded));
  bounded.destroy();
  unbounded.destroy();
  return {rows, allowedMem, peakBytes, boundedMs, unboundedMs, ratio: boundedMs / unboundedMs};
}

/** The markdown lines of a `streamingRun` result. */
export function streamingReport(label, r) {
  const within = r.peakBytes <= r.allowedMem ? 'within' : 'OVER';
  return [
    `| device | rows | column bytes | allowedMem | peakBytes | streamed ms | unbounded ms | streamed / unbounded |`,
    `|---|---|---|---|---|---|---|---|`,
    `| ${label} | ${r.rows.toLocaleString('en-US')} | ${(r.rows * 4).toLocaleString('en-US')} | ${r.allowedMem.toLocaleString('en-US')} | ${r.peakBytes.toLocaleString('en-US')} (${within} the budget) | ${r.boundedMs.toFixed(1)} | ${r.unboundedMs.toFixed(1)} | ${r.ratio.toFixed(2)}x |`
  ].join('\n');
}
