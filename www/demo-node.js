// `npm run demo`: the main demo on the CPU device in Node.
import {readFileSync} from 'node:fs';
import * as gt from 'gputable';
import {makeTrips, runArrowDemo, runDemo} from './demo.js';
import {runVerbsDemo} from './demo-verbs.js';

const rows = Number(process.env.DEMO_ROWS ?? 1_000_000);
const t = performance.now();
const trips = makeTrips(rows);
console.log(`generated ${rows.toLocaleString('en-US')} deterministic trips in ${(performance.now() - t).toFixed(0)} ms`);
const device = await gt.createDevice({type: 'cpu'});
// A silent run on a small table first, so the timings below show the engine warmed up.
const small = makeTrips(100_000);
await runDemo(gt, device, small, () => {});
await runVerbsDemo(gt, device, small, () => {});
await runDemo(gt, device, trips, line => console.log(line));
const checks = await runVerbsDemo(gt, device, trips, line => console.log(line));
await runArrowDemo(gt, device, readFileSync(new URL('./data/trips.arrow', import.meta.url)), line => console.log(line));
const different = checks.filter(check => !check.ok);
if (different.length) {
  console.error(`\nanswers that differ from the JavaScript loops: ${different.map(check => check.label).join('; ')}`);
  process.exitCode = 1;
}
