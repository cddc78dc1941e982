// Dictionary columns (api.md "Tables"): codes on the device, their values on the host in
// `dictionary`. The ops that keep values keep it (ops.js); order, grouping, joins and
// comparisons go by the values, through small tables of codes gathered on the device.
import {wasm} from './bindings.js';
import {fail} from './errors.js';
import {GPUVector} from './vectors.js';
import {GPUTableEvaluator, handleOf, withList, wrap} from './evaluator.js';
import {exactValues, holdsTimes} from './dictionary-source.js';

export const dictionaryOf = x => (x instanceof GPUVector || x instanceof GPUTableEvaluator ? x.dictionary ?? null : null);

export function coded(evaluator, dictionary) {
  if (dictionary) evaluator.dictionary = dictionary;
  return evaluator;
}

// Strings in code-point order (as UTF-8 bytes compare): a UTF-16 surrogate starts a code
// point past U+FFFF, after every other unit.
function compareText(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const highX = x >= 0xd800 && x <= 0xdfff;
    const highY = y >= 0xd800 && y <= 0xdfff;
    if (highX !== highY) return highX ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

// Values of one kind: strings, bigints, booleans (false first) or numbers (NaN last).
const compareValues = (a, b) => {
  if (typeof a === 'string') return compareText(a, b);
  if (typeof a === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) - Number.isNaN(b);
  return a - b;
};

// A dictionary's value order, made once: `ranks[code]`, `codes[rank]`, each value's code
// and NaN's (-1: none).
const orders = new WeakMap();
function orderOf(dictionary) {
  let order = orders.get(dictionary);
  if (!order) {
    const values = exactValues(dictionary);
    const n = values.length;
    const byValue = Array.from(values.keys()).sort((i, j) => compareValues(values[i], values[j]));
    // One row at least: a table to gather from is never empty (its column is then all null).
    const codes = new Uint32Array(Math.max(n, 1));
    const ranks = new Uint32Array(Math.max(n, 1));
    byValue.forEach((code, rank) => {
      codes[rank] = code;
      ranks[code] = rank;
    });
    const index = new Map(values.map((value, code) => [value, code]));
    const nan = values.findIndex(v => Number.isNaN(v));
    order = {codes, ranks, index, nan, sorted: byValue.map(code => values[code])};
    orders.set(dictionary, order);
  }
  return order;
}

const uint32Table = values => GPUTableEvaluator.fromArray(values, {type: 'uint32'});

// Each row's rank among its dictionary's values (a plain column as it is), in the narrowest
// unsigned type: a sort of 8-bit keys is one pass, and grouping by them a bin per value.
export function ranked(x) {
  const dictionary = dictionaryOf(x);
  if (!dictionary) return x;
  const type = dictionary.length <= 0x100 ? 'uint8' : dictionary.length <= 0x10000 ? 'uint16' : 'uint32';
  return gatherRows(x, GPUTableEvaluator.fromArray(orderOf(dictionary).ranks, {type}));
}

// A reduction's or aggregate's input by value: ranks for the ops that order (`min` and
// `max` made codes again by `reducedByValue`), a dictionary of numbers' values for those
// that add; rows (`count`, `first`, `last`) as they are.
export function reducedInput(op, x) {
  if (!dictionaryOf(x)) return x;
  // NaN ranks skipped as NaN values are (a NaN value's rank would be the greatest).
  if (['min', 'max', 'argmin', 'argmax'].includes(op)) return comparedRanks(x);
  return ['sum', 'mean', 'extent'].includes(op) ? numbersOf(x, op) : x;
}

// The input of an op of numbers (arithmetic, cumulative ops, histograms, sums): a
// dictionary of numbers as its values; a column of strings has none.
export const numbersOf = (x, op) => decoded(x, `${op} takes numbers, not a column of strings`);

// A reduction's or aggregate's result of `x`'s values: `min` and `max` as codes again.
export function reducedByValue(op, result, x) {
  const dictionary = dictionaryOf(x);
  if (!dictionary || (op !== 'min' && op !== 'max')) return result;
  const order = orderOf(dictionary);
  if (order.nan < 0) return unranked(result, dictionary, x.type);
  // Float ranks (`comparedRanks`): NaN where no row holds a number, NaN's rank.
  const nan = withList([result], list => wasm.predicate('isNaN', list));
  const nanRank = GPUTableEvaluator.fromConstant(order.ranks[order.nan]);
  const rank = wrap(() => wasm.select(handleOf(nan), handleOf(nanRank), handleOf(result)));
  return unranked(castTo(rank, 'uint32'), dictionary, x.type);
}

// Ranks of `dictionary`'s values back to its codes, of the codes' `type`.
export function unranked(ranks, dictionary, type) {
  const codes = gatherRows(ranks, uint32Table(orderOf(dictionary).codes));
  return coded(type === 'uint32' ? codes : castTo(codes, type), dictionary);
}

// Two columns made comparable by value: the second's codes as the first's where the values
// are the same (past the first's codes where not), or a dictionary of numbers as its values.
export function joinKeys(a, b) {
  const [left, right] = [dictionaryOf(a), dictionaryOf(b)];
  if (left === right) {
    const nan = left ? orderOf(left).nan : -1;
    if (nan < 0) return [a, b];
    // NaN equals nothing, itself included: its code stands past every code, apart per side.
    const apart = side => uint32Table(Uint32Array.from(left, (_, code) => (code === nan ? left.length + side : code)));
    return [gatherRows(a, apart(0)), gatherRows(b, apart(1))];
  }
  if (left && right) {
    // Dates and timestamps meet each other exactly; either meets other values as shown.
    const times = holdsTimes(left) && holdsTimes(right);
    const [l, r] = times ? [exactValues(left), exactValues(right)] : [left, right];
    if ([typeof l[0], typeof r[0]].includes('string') && typeof l[0] !== typeof r[0] && l.length && r.length) {
      fail('TYPE_MISMATCH', 'dictionaries of strings and of other values never hold equal values');
    }
    const index = times || !holdsTimes(left) ? orderOf(left).index : new Map(l.map((value, code) => [value, code]));
    const found = value => (Number.isNaN(value) ? undefined : index.get(like(value, l[0])));
    const translated = Uint32Array.from(r, (value, code) => found(value) ?? left.length + code);
    return [a, gatherRows(b, uint32Table(translated.length ? translated : [0]))];
  }
  return [decoded(a), decoded(b)];
}

// A dictionary of numbers as its values (bigints and booleans as numbers, as a column of
// them loads); a dictionary of strings cannot meet a plain column (`refusal` says why).
function decoded(x, refusal = 'a column of strings compares only with strings or another dictionary column') {
  const dictionary = dictionaryOf(x);
  if (!dictionary) return x;
  if (dictionary.some(v => typeof v === 'string')) fail('TYPE_MISMATCH', refusal);
  const numbers = dictionary.map(Number);
  const integers = numbers.every(v => Number.isInteger(v) && v >= -0x80000000 && v < 0x80000000);
  const values = GPUTableEvaluator.fromArray(numbers.length ? numbers : [0], {type: integers ? 'sint32' : 'float32'});
  return gatherRows(x, values);
}

// `value` as a value of `sample`'s kind where it equals one exactly (a number as a bigint, a
// bigint as a number, a boolean as 0 or 1), else as it is (equal to none of them).
function like(value, sample) {
  const kind = typeof sample;
  if (typeof value === kind || value === null) return value;
  if (kind === 'bigint' && (typeof value === 'boolean' || Number.isInteger(value))) return BigInt(value);
  if (kind === 'number' && typeof value === 'boolean') return Number(value);
  if (kind === 'number' && typeof value === 'bigint' && BigInt(Number(value)) === value) return Number(value);
  return value;
}

// `source`'s rows at `ids` (a code table's: no dictionary of its own).
const gatherRows = (ids, source) => wrap(() => wasm.gather(handleOf(ids), handleOf(source)));
const castTo = (x, type) => wrap(() => wasm.cast(handleOf(x), type));

// A value compared with a column by its dictionary: a string, bigint, boolean or Date.
export const isValue = v => typeof v === 'string' || typeof v === 'bigint' || typeof v === 'boolean' || v instanceof Date;

// The operands of a comparison with a dictionary column, as columns and numbers that
// compare as their values do: for equality codes (a value not in the dictionary is a code
// no row has), for order ranks (a value as the rank it would take among the values).
export function byValue(op, a, b) {
  const ordered = op !== 'equal' && op !== 'notEqual';
  // A number meets dates, timestamps and bigints exactly, as a value of theirs.
  const exactly = (x, other) => isValue(x) ||
    (typeof x === 'number' && !Number.isNaN(x) && dictionaryOf(other) !== null && typeof exactValues(dictionaryOf(other))[0] === 'bigint');
  if (exactly(a, b) || exactly(b, a)) {
    const flip = exactly(a, b);
    let [column, given] = flip ? [b, a] : [a, b];
    const dictionary = dictionaryOf(column);
    if (!dictionary) {
      if (typeof given === 'string') fail('INVALID_ARGUMENT', `${op} compares a string only with a dictionary column`);
      return flip ? [Number(a), b] : [a, Number(b)];
    }
    given = asValueOf(dictionary, given);
    const value = ordered ? rankAmong(dictionary, given, op) : orderOf(dictionary).index.get(given) ?? -1;
    const operand = ordered ? comparedRanks(column) : column;
    return flip ? [value, operand] : [operand, value];
  }
  if (!ordered) return joinKeys(a, b);
  if (dictionaryOf(a) === dictionaryOf(b)) return [comparedRanks(a), comparedRanks(b)];
  if (dictionaryOf(a) && dictionaryOf(b)) return ranksAmongBoth(op, a, b);
  return [decoded(a), decoded(b)];
}

// A dictionary column's rows as numbers that compare as its values: ranks (`ranked`), but
// NaN for a NaN value, with which no comparison holds (float32: exact below 2^24 values).
function comparedRanks(x) {
  const {ranks: order, nan} = orderOf(dictionaryOf(x));
  if (nan < 0) return ranked(x);
  const ranks = Float32Array.from(order, (rank, code) => (code === nan ? NaN : rank));
  return gatherRows(x, GPUTableEvaluator.fromArray(ranks, {type: 'float32'}));
}

// Two columns of different dictionaries as numbers that compare as their values: ranks
// among both dictionaries' values (equal values one rank; NaN as NaN). Dates and timestamps
// meet each other exactly, either other values as shown.
function ranksAmongBoth(op, a, b) {
  const [left, right] = [dictionaryOf(a), dictionaryOf(b)];
  const times = holdsTimes(left) && holdsTimes(right);
  const [l, r] = times ? [exactValues(left), exactValues(right)] : [left, right];
  if (l.length && r.length && (typeof l[0] === 'string') !== (typeof r[0] === 'string')) {
    fail('TYPE_MISMATCH', `${op} orders a dictionary of strings only with another of strings`);
  }
  // Numbers, bigints and booleans compare with each other by < and >.
  const compare = (x, y) => (typeof x === 'string' ? compareText(x, y) : x < y ? -1 : x > y ? 1 : 0);
  const sorted = [...l, ...r].filter(v => !Number.isNaN(v)).sort(compare);
  const distinct = sorted.filter((v, i) => i === 0 || compare(sorted[i - 1], v) !== 0);
  const rankOf = value => (Number.isNaN(value) ? NaN : lowerBound(distinct, value, compare));
  const nan = [l, r].some(values => values.some(v => Number.isNaN(v)));
  const table = values => GPUTableEvaluator.fromArray(values.length ? values.map(rankOf) : [0], {type: nan ? 'float32' : 'uint32'});
  return [gatherRows(a, table(l)), gatherRows(b, table(r))];
}

// `given` as a value of `dictionary`'s kind: dates and timestamps meet Dates and numbers as
// milliseconds (nanoseconds exactly), bigints numbers exactly (`like`).
function asValueOf(dictionary, given) {
  if (holdsTimes(dictionary) && (given instanceof Date || typeof given === 'number')) {
    const ms = Number(given);
    given = Number.isInteger(ms) ? BigInt(ms) * 1000000n : ms * 1e6;
  }
  return like(given, exactValues(dictionary)[0]);
}

// Inputs whose rows go into one column (concat, select): `[inputs, dictionary]`. Text
// columns' codes into one dictionary (the first's strings, then those the others add);
// other dictionaries, where they differ, as their values (numbers); plain inputs as they are.
export function sharedCodes(inputs, op) {
  const dictionaries = inputs.map(dictionaryOf);
  const first = dictionaries.find(d => d);
  if (!first || dictionaries.every(d => d === first)) return [inputs, first ?? null];
  const text = d => d?.some(v => typeof v === 'string');
  if (!dictionaries.some(text)) return [inputs.map(x => numbersOf(x, op)), null];
  // Text meets only text (an empty dictionary, a column of nulls, meets anything).
  if (dictionaries.some(d => !d || (d.length && !text(d)))) {
    fail('TYPE_MISMATCH', `${op} of a column of strings takes only columns of strings`);
  }
  const values = [...first];
  const index = new Map(first.map((value, code) => [value, code]));
  const translated = inputs.map((x, k) => {
    if (dictionaries[k] === first) return x.type === 'uint32' ? x : castTo(x, 'uint32');
    const codes = Uint32Array.from(dictionaries[k], value => {
      if (!index.has(value)) index.set(value, values.push(value) - 1);
      return index.get(value);
    });
    return gatherRows(x, uint32Table(codes.length ? codes : [0]));
  });
  return [translated, values];
}

// A dictionary column `x` given one of its values (a string, a date, a bigint; by
// `fillNull` and `select`): `[codes, code, dictionary]`, the value's code, or a string added
// to the dictionary's end (the codes widened where the new code is past their type).
export function filledByValue(x, value) {
  const dictionary = dictionaryOf(x);
  const known = orderOf(dictionary).index.get(asValueOf(dictionary, value));
  if (known !== undefined) return [x, known, dictionary];
  if (typeof value !== 'string' || !dictionary.every(v => typeof v === 'string')) {
    fail('INVALID_ARGUMENT', `${String(value)} is not a value of the column's dictionary`);
  }
  const code = dictionary.length;
  const most = {uint8: 0xff, sint8: 0x7f, uint16: 0xffff, sint16: 0x7fff, sint32: 0x7fffffff}[x.type] ?? 0xffffffff;
  return [code > most ? castTo(x, 'uint32') : x, code, [...dictionary, value]];
}

// The rank `given` (a value of `dictionary`'s kind) has among its values, or would take:
// between two ranks, the lower plus 0.5.
function rankAmong(dictionary, given, op) {
  const sample = exactValues(dictionary)[0];
  if (dictionary.length && typeof given !== typeof sample && !(typeof sample === 'bigint' && typeof given === 'number')) {
    fail('TYPE_MISMATCH', `${op} orders a dictionary of ${typeof sample} values only by values of that kind`);
  }
  const order = orderOf(dictionary);
  const lo = lowerBound(order.sorted, given);
  return order.index.has(given) ? lo : lo - 0.5;
}

// `searchSorted`'s operands compared by value where the sorted column has a dictionary: its
// ranks, and each value as the rank it has or would take among the dictionary's values
// (`rankAmong`): one value a constant, an array of them a column, another dictionary
// column its codes' ranks.
export function searchedByValue(sorted, values) {
  const dictionary = dictionaryOf(sorted);
  if (!dictionary) return [sorted, decoded(values)];
  const keys = ranked(sorted);
  const given = dictionaryOf(values);
  if (given === dictionary) return [keys, ranked(values)];
  const exact = holdsTimes(dictionary) || typeof exactValues(dictionary)[0] === 'bigint';
  const literal = v => isValue(v) || (exact && typeof v === 'number' && !Number.isNaN(v));
  const list = literal(values) ? [values] : Array.isArray(values) && values.length && values.every(literal) ? values : null;
  if (!list && !given) {
    if (dictionary.some(v => typeof v === 'string')) {
      fail('TYPE_MISMATCH', 'searchSorted finds in a column of strings only strings or another dictionary column');
    }
    return [decoded(sorted), values];
  }
  const place = v => rankAmong(dictionary, asValueOf(dictionary, v), 'searchSorted');
  if (list && !Array.isArray(values)) return [keys, GPUTableEvaluator.fromConstant(place(values), 'float32')];
  const ranks = (list ?? exactValues(given)).map(place);
  const table = GPUTableEvaluator.fromArray(ranks.length ? ranks : [0], {type: 'float32'});
  return [keys, list ? table : gatherRows(values, table)];
}

function lowerBound(sorted, value, compare = compareValues) {
  let [lo, hi] = [0, sorted.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(sorted[mid], value) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
