// A dictionary as Rust holds it (src/wasm/dictionary.rs) and as users see it: Rust's source
// is an array of strings, or `{type, unit, timezone, values}` with numbers in a Float64Array
// or, for 64-bit integers, booleans and temporal types, the integers Arrow stores in a
// BigInt64Array. `field.dictionary` shows them as apache-arrow 21 decodes them, its source
// kept out of sight so that a verb's result writes back the same type and exact values.
import {fail} from './errors.js';

const SOURCE = Symbol('gputable dictionary source');
// Type codes 0-8 are integer types (below), 9 on numbers; 16 is Float64.
const [INT64, UINT64, BOOL, TIMESTAMP, NUMBERS, FLOAT64] = [0, 1, 2, 7, 9, 16];
const same = v => v;
// Whole milliseconds and the rest, as apache-arrow divides bigints.
const millis = per => v => Number(v / per) + Number(v % per) / Number(per);
const SHOW = [same, v => BigInt.asUintN(64, v), v => v !== 0n, v => 86400000 * Number(v), Number, Number, same, null, same];
const SHOW_TIMESTAMP = [v => 1000 * Number(v), Number, millis(1000n), millis(1000000n)];

// How a source's value is shown.
const showOf = ({type, unit}) => (type >= NUMBERS ? same : type === TIMESTAMP ? SHOW_TIMESTAMP[unit] : SHOW[type]);
const shown = source => Array.from(source.values, showOf(source));

// Rust's source of a dictionary (or null) as the array a field shows.
export function shownDictionary(source) {
  if (source === null || source === undefined || Array.isArray(source)) return source ?? null;
  const dictionary = shown(source);
  Object.defineProperty(dictionary, SOURCE, {value: source});
  return dictionary;
}

const BAD = 'a dictionary is an array of distinct strings, numbers, bigints or booleans';

// A field's dictionary (or null) as Rust's source: the one it was shown from while it shows
// the same values; else numbers as Float64, bigints as Int64 (UInt64 past it), booleans.
export function dictionarySource(dictionary) {
  if (dictionary === null || dictionary === undefined) return null;
  if (!Array.isArray(dictionary)) fail('INVALID_ARGUMENT', BAD);
  const source = dictionary[SOURCE];
  // Checked value by value, nothing built: a verb hands every dictionary column back.
  const show = source && showOf(source);
  if (source && source.values.length === dictionary.length && source.values.every((v, i) => Object.is(show(v), dictionary[i]))) {
    return source;
  }
  const kind = typeof dictionary[0];
  if (dictionary.some(v => typeof v !== kind)) fail('INVALID_ARGUMENT', BAD);
  if (kind === 'number') return {type: FLOAT64, values: Float64Array.from(dictionary)};
  if (kind === 'boolean') return {type: BOOL, values: BigInt64Array.from(dictionary, BigInt)};
  if (kind !== 'bigint') return dictionary;
  const signed = dictionary.every(v => BigInt.asIntN(64, v) === v);
  if (!signed && !dictionary.every(v => BigInt.asUintN(64, v) === v)) fail('INVALID_ARGUMENT', `${BAD}: bigints of 64 bits`);
  return {type: signed ? INT64 : UINT64, values: BigInt64Array.from(dictionary, v => BigInt.asIntN(64, v))};
}

// Dates and timestamps compared exactly: as bigint nanoseconds (their shown milliseconds
// round nanoseconds apart). Other dictionaries compare as shown.
const NANOS = [3, 4, TIMESTAMP];
const PER_NANO = {3: 86400000000000n, 4: 1000000n};
const TIMESTAMP_NANOS = [1000000000n, 1000000n, 1000n, 1n];
const exact = new WeakMap();
export function exactValues(dictionary) {
  const source = dictionary[SOURCE];
  if (!source || !NANOS.includes(source.type)) return dictionary;
  let values = exact.get(dictionary);
  if (!values) {
    const per = source.type === TIMESTAMP ? TIMESTAMP_NANOS[source.unit] : PER_NANO[source.type];
    values = Array.from(source.values, v => v * per);
    exact.set(dictionary, values);
  }
  return values;
}

// Whether a dictionary holds dates or timestamps (compared as nanoseconds).
export const holdsTimes = dictionary => exactValues(dictionary) !== dictionary;
