// The Node benchmarks' timer.
const MIN_TIME_MS = 1000;
const MAX_REPS = 9;

/**
 * Median ms of `run()`. Every engine first warms up (JIT and wasm tier-up, heap growth) for
 * at least 3 runs and 300 ms; slow runs get fewer repetitions.
 */
export async function time(run) {
  let first = 0;
  for (let warm = 0, spentWarm = 0; warm < 3 || spentWarm < 300; warm++) {
    const t = performance.now();
    await run();
    const ms = performance.now() - t;
    spentWarm += ms;
    first = Math.max(first, ms);
    if (ms > 2000) break;
  }
  const samples = [];
  const reps = first > 2000 ? 2 : MAX_REPS;
  let spent = 0;
  while (samples.length < reps && (samples.length < 3 || spent < MIN_TIME_MS)) {
    const t = performance.now();
    await run();
    const ms = performance.now() - t;
    samples.push(ms);
    spent += ms;
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}
