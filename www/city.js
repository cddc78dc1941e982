// The demo page's generated trips: pickups and dropoffs around a city's hotspots and along
// its street grid, so the plot has something to show, and the cab company of each.
// Deterministic (xorshift).
import {xorshift} from './random.js';

const HOTSPOTS = [
  // x, y (km), spread, share of trips
  [0, 0, 2.2, 0.3], // downtown
  [4.5, 3, 1.4, 0.14], // midtown
  [-12, -7, 0.5, 0.08], // the airport
  [8, -5, 1, 0.1], // the university
  [-6, 6, 1.2, 0.1] // the harbour
];
const BACKGROUND_SHARE = 1 - HOTSPOTS.reduce((sum, h) => sum + h[3], 0);
const BLOCK_KM = 0.6;
/** The cab companies, by code: a dictionary column's values (not in name order). */
export const VENDORS = ['Yellow Star', 'Airport Express', 'Metro Taxi', 'Green Line', 'Checker Cabs'];
const VENDOR_SHARES = [0.34, 0.04, 0.27, 0.2, 0.15];
const AIRPORT_EXPRESS = 1;

export function cityTrips(rows) {
  const random = xorshift(0x2545f491);
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const place = out => {
    let pick = random() - BACKGROUND_SHARE;
    let x = random() * 30 - 15, y = random() * 20 - 10;
    for (const [hx, hy, spread, share] of HOTSPOTS) {
      if (pick < 0) break;
      pick -= share;
      if (pick < 0) {
        x = hx + gaussian() * spread;
        y = hy + gaussian() * spread * 0.8;
      }
    }
    // Most trips start and end on a street: one coordinate on the grid.
    if (random() < 0.7) {
      if (random() < 0.5) x = Math.round(x / BLOCK_KM) * BLOCK_KM;
      else y = Math.round(y / BLOCK_KM) * BLOCK_KM;
    }
    out[0] = x;
    out[1] = y;
  };
  const pickup = new Float32Array(rows * 2);
  const dropoff = new Float32Array(rows * 2);
  const fare = new Float32Array(rows);
  const vendor = new Uint8Array(rows);
  const at = [0, 0];
  for (let i = 0; i < rows; i++) {
    place(at);
    pickup[2 * i] = at[0]; pickup[2 * i + 1] = at[1];
    place(at);
    // Half the trips stay in the neighbourhood.
    if (random() < 0.5) {
      at[0] = pickup[2 * i] + (at[0] - pickup[2 * i]) * 0.15;
      at[1] = pickup[2 * i + 1] + (at[1] - pickup[2 * i + 1]) * 0.15;
    }
    dropoff[2 * i] = at[0]; dropoff[2 * i + 1] = at[1];
    const km = Math.hypot(at[0] - pickup[2 * i], at[1] - pickup[2 * i + 1]);
    const airport = Math.hypot(pickup[2 * i] + 12, pickup[2 * i + 1] + 7) < 1.5 ? 6 : 0;
    fare[i] = 3 + km * 1.6 + random() * 3 + airport;
    // Most airport pickups are the airport's own company, which charges a little more.
    if (airport && random() < 0.6) {
      vendor[i] = AIRPORT_EXPRESS;
    } else {
      let pick = random(), code = 0;
      while (code < VENDORS.length - 1 && (pick -= VENDOR_SHARES[code]) >= 0) code++;
      vendor[i] = code;
    }
    if (vendor[i] === AIRPORT_EXPRESS) fare[i] += 2;
  }
  return {rows, pickup, dropoff, fare, vendor};
}
