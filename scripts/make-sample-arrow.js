// Writes www/data/trips.arrow, the demo's bundled Arrow IPC file: 20,000 deterministic taxi
// trips in 4 record batches, with the column kinds gputable reads (fixed-size lists,
// Float64, a dictionary, nulls). `node scripts/make-sample-arrow.js` regenerates it.
import {writeFileSync} from 'node:fs';
import * as arrow from 'apache-arrow';
import {makeTrips} from '../www/demo.js';

const rows = 20_000;
const trips = makeTrips(rows);
const pairs = values => Array.from({length: rows}, (_, i) => [values[2 * i], values[2 * i + 1]]);
const point = () => new arrow.FixedSizeList(2, new arrow.Field('xy', new arrow.Float32()));
const whole = new arrow.Table({
  pickup: arrow.vectorFromArray(pairs(trips.pickup), point()),
  dropoff: arrow.vectorFromArray(pairs(trips.dropoff), point()),
  // Every 50th fare is missing: a null, read as a validity vector.
  fare: arrow.vectorFromArray(Array.from(trips.fare, (v, i) => (i % 50 === 7 ? null : v)), new arrow.Float32()),
  passengers: arrow.vectorFromArray(trips.passengers, new arrow.Uint8()),
  startTime: arrow.vectorFromArray(trips.startTime, new arrow.Float64()),
  vendor: arrow.vectorFromArray(Array.from({length: rows}, (_, i) => ['CMT', 'VTS', 'DDS'][(i * 7) % 3]), new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()))
});
const batches = [0, 1, 2, 3].flatMap(k => whole.slice(k * 5000, (k + 1) * 5000).batches);
const bytes = arrow.tableToIPC(new arrow.Table(batches), 'file');
writeFileSync(new URL('../www/data/trips.arrow', import.meta.url), bytes);
console.log(`www/data/trips.arrow: ${rows} rows in ${batches.length} batches, ${bytes.length} bytes`);
