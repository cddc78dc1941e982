// `npm run demo`'s computations (www/demo.js, www/demo-verbs.js) and the demo page's
// questions (www/queries.js) on the CPU device at a small size: each runs without error and
// gives its JavaScript loop's answers.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import * as gt from 'gputable';
import {makeTrips, runArrowDemo, runDemo} from '../../www/demo.js';
import {runVerbsDemo} from '../../www/demo-verbs.js';
import {VENDORS, cityTrips} from '../../www/city.js';
import {answersOf, destroyGraph, sameAnswers, tripsLoop, tripsQuery} from '../../www/queries.js';

test('the text demo runs and its table verbs give the loops\' answers', async () => {
  const device = await gt.createDevice({type: 'cpu'});
  const lines = [];
  const trips = makeTrips(30_000);
  await runDemo(gt, device, trips, line => lines.push(line));
  const checks = await runVerbsDemo(gt, device, trips, line => lines.push(line));
  await runArrowDemo(gt, device, readFileSync(new URL('../../www/data/trips.arrow', import.meta.url)), line => lines.push(line));
  assert.equal(checks.length, 7);
  for (const check of checks) assert.ok(check.ok, `${check.label}\n${lines.join('\n')}`);
  assert.ok(lines.some(line => line.startsWith('missing fares: 400;')), lines.join('\n'));
  device.destroy();
});

test('the demo page\'s questions give the loop\'s answers, with empty and full selections', async () => {
  const device = await gt.createDevice({type: 'cpu'});
  const trips = cityTrips(50_000);
  const E = gt.GPUTableEvaluator;
  const schema = new gt.GPUSchema([new gt.GPUField({name: 'vendor', type: 'uint8', dictionary: VENDORS})]);
  const vendor = await E.fromArray(trips.vendor).evaluate(device);
  const table = new gt.GPUTable({schema, batches: [new gt.GPURecordBatch([vendor], schema)], device});
  // Uneven chunks: the questions keep them.
  const columns = {
    pickup: E.fromArray(trips.pickup, {size: 2, chunks: [20_000, 0, 30_000]}),
    dropoff: E.fromArray(trips.dropoff, {size: 2, chunks: [20_000, 0, 30_000]}),
    fare: E.fromArray(trips.fare, {chunks: [20_000, 0, 30_000]}),
    vendor: E.fromVector(table.getVector('vendor'))
  };
  for (const filter of [{minFare: 8, maxKm: 8}, {minFare: 0, maxKm: 100}, {minFare: 1000, maxKm: 8}, {minFare: 20, maxKm: 0.5}]) {
    const graph = tripsQuery(gt, columns, filter);
    await gt.cleanEvaluate(device, graph);
    const answers = await answersOf(device, graph);
    const reference = tripsLoop(trips, VENDORS, filter);
    assert.ok(sameAnswers(reference, answers), JSON.stringify({filter, answers, reference}));
    assert.equal(answers.dearest.length, Math.min(10, reference.count));
    destroyGraph(graph);
  }
  table.destroy();
  device.destroy();
});
