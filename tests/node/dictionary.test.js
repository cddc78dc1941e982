// api.md "Tables" on text and dictionary columns through the built package on the CPU
// device: Utf8 loads as codes into its distinct strings, verbs keep the dictionary and write
// it back, and equality, order, grouping and joins go by the values (strings in code-point
// order), each checked against a plain loop over random strings with nulls, empty strings
// and characters past U+FFFF.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from 'gputable';
import {rejectsCode, throwsCode} from './helpers.js';

// Code-point order, as UTF-8 bytes compare (JS `<` compares UTF-16 units).
const byCodePoint = (a, b) => {
  const x = [...a].map(c => c.codePointAt(0));
  const y = [...b].map(c => c.codePointAt(0));
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
};

// Strings from a small alphabet with '', nulls and a character past U+FFFF (its UTF-16
// surrogates sort before U+FFFD, its code point after).
function randomStrings(n, seed) {
  const alphabet = ['a', 'b', 'Z', 'é', '\uFFFD', '😀', ' '];
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  return Array.from({length: n}, () => {
    if (next() < 0.08) return null;
    const length = Math.floor(next() * 3);
    return Array.from({length}, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
  });
}

// A table of Utf8 `names` (and `amount`) in batches of `batch` rows.
function textTable(names, batch, type = new arrow.Utf8()) {
  const batches = [];
  for (let at = 0; at < names.length; at += batch) {
    const slice = names.slice(at, at + batch);
    const part = arrow.tableFromArrays({
      name: arrow.vectorFromArray(slice, type),
      amount: Float32Array.from(slice, (_, i) => at + i),
    });
    batches.push(...part.batches);
  }
  return new arrow.Table(batches);
}

const firstAppearance = names => [...new Set(names.filter(v => v !== null))];
const rowsOf = async (table, name) => {
  const vector = table.getVector(name);
  const codes = await vector.readValue();
  const flags = vector.validity ? await vector.validity.readValue() : null;
  const dictionary = table.schema.field(name).dictionary;
  return Array.from(codes, (code, i) => (flags && !flags[i] ? null : dictionary[code]));
};

test('Utf8 and LargeUtf8 load as uint32 codes into their strings in order of first appearance', async () => {
  const names = randomStrings(500, 7);
  for (const type of [new arrow.Utf8(), new arrow.LargeUtf8()]) {
    const table = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(textTable(names, 170, type)));
    const field = table.schema.field('name');
    assert.equal(field.type, 'uint32');
    assert.deepEqual(field.dictionary, firstAppearance(names), 'one dictionary across the batches');
    assert.deepEqual(await rowsOf(table, 'name'), names);
    assert.equal(table.getVector('name').dictionary, field.dictionary);
    // Written back as a dictionary of strings: the same strings per row.
    const back = arrow.tableFromIPC(await table.toArrowIPC());
    assert.ok(arrow.DataType.isDictionary(back.schema.fields[0].type));
    assert.deepEqual(back.getChild('name').toArray(), names);
    assert.equal(back.batches.length, 3);
    table.destroy();
  }
});

test('equal, notEqual and order comparisons of a text column with a string go by value', async () => {
  const names = randomStrings(400, 11);
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(textTable(names, 150)));
  const t = table.gpuVectors;
  const kept = async mask => (await table.filter(() => mask)).getVector('amount').readValue().then(v => [...v]);
  const rowsWhere = keep => names.flatMap((v, i) => (v !== null && keep(v) ? [i] : []));
  for (const probe of ['a', '', '😀', 'zz-not-there', '\uFFFD']) {
    assert.deepEqual(await kept(gt.equal(t.name, probe)), rowsWhere(v => v === probe), `equal '${probe}'`);
    assert.deepEqual(await kept(gt.notEqual(probe, t.name)), rowsWhere(v => v !== probe), `notEqual '${probe}'`);
    assert.deepEqual(await kept(gt.less(t.name, probe)), rowsWhere(v => byCodePoint(v, probe) < 0), `less '${probe}'`);
    assert.deepEqual(await kept(gt.greaterEqual(t.name, probe)), rowsWhere(v => byCodePoint(v, probe) >= 0), `greaterEqual '${probe}'`);
    assert.deepEqual(await kept(gt.lessEqual(probe, t.name)), rowsWhere(v => byCodePoint(probe, v) <= 0), `lessEqual '${probe}'`);
  }
  throwsCode(() => gt.equal(t.amount, 'a'), 'INVALID_ARGUMENT');
  throwsCode(() => gt.less(t.name, 3), 'TYPE_MISMATCH');
  table.destroy();
});

test('searchSorted in a sorted text column finds strings and other text columns by value', async () => {
  const names = randomStrings(300, 5);
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(textTable(names, 110)));
  const sorted = gt.sort(table.gpuVectors.name);
  const inOrder = names.filter(v => v !== null).sort(byCodePoint);
  const place = (probe, side) => inOrder.filter(v => (side === 'left' ? byCodePoint(v, probe) < 0 : byCodePoint(v, probe) <= 0)).length;
  const probes = ['a', '', '😀', 'zz-not-there', 'aa', '\uFFFD', 'b'];
  const others = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(textTable(probes, 4))).getVector('name');
  for (const side of ['left', 'right']) {
    const expected = probes.map(p => place(p, side));
    assert.deepEqual([...await gt.searchSorted(sorted, probes, {side}).readValue()], expected, `strings, ${side}`);
    assert.deepEqual([...await gt.searchSorted(sorted, probes[2], {side}).readValue()], [expected[2]], `a string, ${side}`);
    // Another dictionary, and the sorted column's own.
    assert.deepEqual([...await gt.searchSorted(sorted, others, {side}).readValue()], expected, `a text column, ${side}`);
    const own = gt.gather(gt.GPUTableEvaluator.fromArray([0, 5, 9], {type: 'uint32'}), table.gpuVectors.name);
    const ownNames = [0, 5, 9].map(i => names[i]);
    const ownFound = [...await gt.searchSorted(sorted, own, {side}).readValue()];
    ownNames.forEach((name, i) => name !== null && assert.equal(ownFound[i], place(name, side), `its own dictionary, ${side}`));
  }
  throwsCode(() => gt.searchSorted(sorted, 3), 'TYPE_MISMATCH');
  table.destroy();
});

test('orderBy, topK, unique, valueCounts and groupBy of a text column order by its strings', async () => {
  const names = randomStrings(3000, 5);
  const table = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(textTable(names, 1100)));
  const rows = names.map((name, i) => ({name, i}));
  const nullsLast = (a, b) => (a === null) - (b === null) || (a === null ? 0 : byCodePoint(a, b));
  const ordered = [...rows].sort((a, b) => nullsLast(a.name, b.name) || a.i - b.i);
  const sorted = await table.orderBy('name');
  assert.deepEqual(await rowsOf(sorted, 'name'), ordered.map(r => r.name));
  assert.deepEqual([...await sorted.getVector('amount').readValue()], ordered.map(r => r.i), 'stable');
  assert.deepEqual(sorted.schema.field('name').dictionary, table.schema.field('name').dictionary, 'the dictionary kept');
  const descending = await table.orderBy('name', {descending: true, nulls: 'first'});
  const reversed = [...rows].sort((a, b) => (b.name === null) - (a.name === null) || (a.name === null ? 0 : byCodePoint(b.name, a.name)) || a.i - b.i);
  assert.deepEqual(await rowsOf(descending, 'name'), reversed.map(r => r.name));

  const top = await table.topK('name', 5);
  const largest = [...rows].filter(r => r.name !== null).sort((a, b) => byCodePoint(b.name, a.name) || a.i - b.i).slice(0, 5);
  assert.deepEqual(await rowsOf(top, 'name'), largest.map(r => r.name));

  const distinct = firstAppearance(names).sort(byCodePoint);
  const unique = gt.unique(table.getVector('name'));
  assert.equal(unique.dictionary, table.schema.field('name').dictionary);
  const uniqueCodes = await unique.readValue();
  assert.deepEqual(Array.from(uniqueCodes, c => unique.dictionary[c]).slice(0, distinct.length), distinct);
  const {values, counts} = gt.valueCounts(table.getVector('name'));
  const valueCodes = await values.readValue();
  const countOf = value => names.filter(v => v === value).length;
  assert.deepEqual(Array.from(valueCodes, c => values.dictionary[c]).slice(0, distinct.length), distinct);
  assert.deepEqual([...await counts.readValue()].slice(0, distinct.length), distinct.map(countOf));

  const grouped = await table.groupBy('name').rollup({trips: 'count', total: ['sum', 'amount']});
  assert.deepEqual(grouped.schema.field('name').dictionary, table.schema.field('name').dictionary);
  assert.deepEqual(await rowsOf(grouped, 'name'), [...distinct, null], 'groups by value, null last');
  const trips = [...await grouped.getVector('trips').readValue()];
  assert.deepEqual(trips, [...distinct.map(countOf), names.filter(v => v === null).length]);
  const totals = [...await grouped.getVector('total').readValue()];
  const totalOf = value => names.reduce((sum, v, i) => sum + (v === value ? i : 0), 0);
  assert.deepEqual(totals, [...distinct.map(totalOf), totalOf(null)]);
  // The grouped table writes its names back as strings.
  const back = arrow.tableFromIPC(await grouped.toArrowIPC());
  assert.deepEqual(back.getChild('name').toArray(), [...distinct, null]);
  for (const t of [table, sorted, descending, top, grouped]) t.destroy();
});

test('joins and equality of text columns whose dictionaries differ go by value', async () => {
  const tripNames = randomStrings(900, 3);
  const trips = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(textTable(tripNames, 400)));
  // Zones as an Arrow dictionary column in another order, with a name no trip has and a
  // repeated name (many-to-many).
  const zoneNames = ['😀', 'b', 'a', '', 'never', 'b', 'é'];
  const zoneColumn = arrow.vectorFromArray(zoneNames, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()));
  const zones = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(arrow.tableFromArrays({
    name: zoneColumn,
    zone: Int32Array.from(zoneNames, (_, i) => 100 + i),
  })));
  assert.notDeepEqual(zones.schema.field('name').dictionary, trips.schema.field('name').dictionary);
  for (const how of ['inner', 'left']) {
    const joined = await trips.join(zones, {on: 'name', how});
    const expected = [];
    tripNames.forEach((name, i) => {
      const before = expected.length;
      zoneNames.forEach((zone, j) => { if (name !== null && name === zone) expected.push([name, i, 100 + j]); });
      if (how === 'left' && expected.length === before) expected.push([name, i, null]);
    });
    assert.deepEqual(await rowsOf(joined, 'name'), expected.map(e => e[0]), how);
    assert.deepEqual([...await joined.getVector('amount').readValue()], expected.map(e => e[1]), how);
    const zone = joined.getVector('zone');
    const zoneValues = await zone.readValue();
    const flags = zone.validity ? await zone.validity.readValue() : null;
    assert.deepEqual(Array.from(zoneValues, (v, i) => (flags && !flags[i] ? null : v)), expected.map(e => e[2]), how);
    joined.destroy();
  }
  const looked = await gt.lookup(trips.getVector('name'), zones.getVector('name')).readValue();
  assert.deepEqual([...looked], tripNames.map(name => (name === null ? -1 : zoneNames.indexOf(name))));
  // Equality of two dictionary columns compares values, not codes; a null row is null.
  const pick = (rows, table) => gt.gather(gt.GPUTableEvaluator.fromArray(rows, {type: 'uint32'}), table.getVector('name'));
  const same = await gt.equal(pick([0, 1, 2, 3], trips), pick([3, 2, 1, 0], zones)).evaluate();
  const flags = same.validity ? await same.validity.readValue() : null;
  const equalRows = Array.from(await same.readValue(), (v, i) => (flags && !flags[i] ? null : v));
  assert.deepEqual(equalRows, [0, 1, 2, 3].map(i => (tripNames[i] === null ? null : Number(tripNames[i] === zoneNames[3 - i]))));
  trips.destroy();
  zones.destroy();
});

test('dictionaries of numbers and dictionaries made from JS keep their values', async () => {
  const values = arrow.vectorFromArray([300, -7, 300, null, 12], new arrow.Dictionary(new arrow.Int16(), new arrow.Int8()));
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({v: values})));
  const field = table.schema.field('v');
  assert.equal(field.type, 'uint32', 'codes into the values kept');
  assert.deepEqual(field.dictionary, [300, -7, 12]);
  const big = await table.filter(t => gt.greater(t.v, 100));
  assert.equal(big.numRows, 2);
  const bigBack = arrow.tableFromIPC(big.toArrowIPC());
  assert.deepEqual(bigBack.getChild('v').toArray(), [300, 300]);
  assert.equal(String(bigBack.schema.fields[0].type.dictionary), 'Int16', 'a verb keeps the values\' type');
  const back = arrow.tableFromIPC(table.toArrowIPC());
  assert.ok(back.schema.fields[0].type.dictionary.typeId === new arrow.Int16().typeId, 'written back as Int16 values');
  assert.deepEqual([...back.getChild('v')], [300, -7, 300, null, 12]);

  // A schema's field may carry a dictionary for integer codes of the user's.
  const codes = gt.GPUVector.appendable({name: 'kind', type: 'uint8'}).append([2, 0, 1, 2]);
  const schema = new gt.GPUSchema([new gt.GPUField({name: 'kind', type: 'uint8', dictionary: ['car', 'bus', 'tram']})]);
  const made = new gt.GPUTable({schema, batches: [new gt.GPURecordBatch([codes], schema)]});
  assert.deepEqual(made.schema.field('kind').dictionary, ['car', 'bus', 'tram']);
  assert.deepEqual(arrow.tableFromIPC(made.toArrowIPC()).getChild('kind').toArray(), ['tram', 'car', 'bus', 'tram']);
  const sorted = await made.orderBy('kind');
  assert.deepEqual(arrow.tableFromIPC(sorted.toArrowIPC()).getChild('kind').toArray(), ['bus', 'car', 'tram', 'tram']);
  const repeated = [new gt.GPUField({name: 'kind', type: 'uint8', dictionary: ['a', 'a']})];
  throwsCode(() => new gt.GPUTable({schema: new gt.GPUSchema(repeated)}), 'INVALID_ARGUMENT');
  const floats = [new gt.GPUField({name: 'kind', type: 'float32', dictionary: ['a']})];
  throwsCode(() => new gt.GPUTable({schema: new gt.GPUSchema(floats)}), 'INVALID_ARGUMENT');
  for (const t of [table, big, made, sorted]) t.destroy();
});

test('dictionaries of 64-bit integers, booleans and temporal values keep their values through verbs and back', async () => {
  const dictionary = (values, type, keys) => arrow.makeVector(arrow.makeData({
    type: new arrow.Dictionary(type, new arrow.Int32()),
    length: keys.length,
    nullCount: keys.filter(k => k === null).length,
    nullBitmap: Uint8Array.from([keys.reduce((bits, k, i) => bits | (k === null ? 0 : 1 << i), 0)]),
    data: Int32Array.from(keys, k => k ?? 0),
    dictionary: values instanceof arrow.Vector ? values : arrow.vectorFromArray(values, type),
  }));
  const keys = [2, 0, null, 1, 2];
  const nanos = arrow.makeData({type: new arrow.TimestampNanosecond('UTC'), length: 3, data: BigInt64Array.from([1700000000123456789n, -1n, 5n])});
  const source = arrow.tableFromArrays({
    day: dictionary([new Date(86400000 * 3), new Date(0), new Date(86400000)], new arrow.DateDay(), keys),
    at: dictionary([1000, 2000, 5000], new arrow.TimestampMillisecond(), keys),
    big: dictionary([-7n, 12n, 1n << 40n], new arrow.Int64(), keys),
    huge: dictionary([2n ** 64n - 1n, 0n, 2n ** 63n], new arrow.Uint64(), keys),
    flag: dictionary([true, false, true], new arrow.Bool(), keys),
    clock: dictionary([1n, 86399999999999n, 0n], new arrow.TimeNanosecond(), keys),
    wait: dictionary([-5n, 7n, 9n], new arrow.DurationMicrosecond(), keys),
    // Nanoseconds apart: their milliseconds as numbers round to the same float64.
    near: dictionary(arrow.makeVector(arrow.makeData({
      type: new arrow.TimestampNanosecond(), length: 3, data: BigInt64Array.from([1700000000000000100n, 1700000000000000000n, 1700000000000000050n]),
    })), new arrow.TimestampNanosecond(), [0, 1, null, 2, 0]),
    stamp: arrow.makeVector(arrow.makeData({
      type: new arrow.Dictionary(nanos.type, new arrow.Int32()), length: 5, nullCount: 1,
      nullBitmap: Uint8Array.from([0b11011]), data: Int32Array.from(keys, k => k ?? 0), dictionary: arrow.makeVector(nanos),
    })),
  });
  const names = source.schema.fields.map(f => f.name);
  // No int64 option is needed: the codes are uint32, the values stay on the host.
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(source));
  for (const name of names) {
    assert.equal(table.schema.field(name).type, 'uint32', name);
    assert.deepEqual(await rowsOf(table, name), [...source.getChild(name)], `${name}: values as apache-arrow decodes them`);
  }
  assert.deepEqual(table.schema.field('big').dictionary, [-7n, 12n, 1n << 40n]);
  assert.deepEqual(table.schema.field('flag').dictionary, [true, false]);
  assert.deepEqual(table.schema.field('day').dictionary, [86400000 * 3, 0, 86400000]);

  // Verbs keep the dictionary; written back, each column has its value type and values.
  const kept = await table.filter(t => gt.isValid(t.big));
  const back = arrow.tableFromIPC(kept.toArrowIPC());
  for (const name of names) {
    assert.equal(String(back.getChild(name).type.dictionary), String(source.getChild(name).type.dictionary), name);
    assert.deepEqual([...back.getChild(name)], [...source.getChild(name)].filter((_, i) => keys[i] !== null), name);
  }
  assert.deepEqual(back.getChild('stamp').data[0].dictionary.data[0].values, BigInt64Array.from([1700000000123456789n, -1n, 5n]), 'nanoseconds exact');

  // Order and grouping go by value (bigints as integers, false before true).
  const sorted = await table.orderBy('big', {descending: true});
  assert.deepEqual(await rowsOf(sorted, 'big'), [1n << 40n, 1n << 40n, 12n, -7n, null]);
  const grouped = await table.groupBy('flag').rollup({n: 'count'});
  assert.deepEqual(await rowsOf(grouped, 'flag'), [false, true, null]);
  assert.deepEqual([...await grouped.getVector('n').readValue()], [1, 3, 1]);
  // Joined by value with a dictionary of other codes, and with a plain column by number.
  const other = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({
    big: dictionary([12n, 3n, 1n << 40n], new arrow.Int64(), [0, 2, 1]),
    n: Float32Array.from([10, 20, 30]),
  })));
  const joined = await table.join(other, {on: 'big'});
  assert.deepEqual(await rowsOf(joined, 'big'), [1n << 40n, 12n, 1n << 40n]);
  assert.deepEqual([...await joined.getVector('n').readValue()], [20, 10, 20]);
  const plain = gt.GPUTableEvaluator.fromArray([12, -7], {type: 'sint32'});
  const {left, right} = gt.join(table.getVector('big'), plain);
  assert.deepEqual([...await left.readValue()], [1, 3]);
  assert.deepEqual([...await right.readValue()], [1, 0]);
  // Bigints, booleans and numbers compare with the values (the null row left out).
  const rowsBut2 = async evaluator => [...await evaluator.readValue()].filter((_, i) => i !== 2);
  const big = table.getVector('big');
  assert.deepEqual(await rowsBut2(gt.equal(big, 12n)), [0, 0, 1, 0]);
  assert.deepEqual(await rowsBut2(gt.greater(big, 0n)), [1, 0, 1, 1]);
  assert.deepEqual(await rowsBut2(gt.less(big, 12)), [0, 1, 0, 0]);
  assert.deepEqual(await rowsBut2(gt.equal(table.getVector('flag'), true)), [1, 1, 0, 1]);
  throwsCode(() => gt.greater(big, 'x'), 'TYPE_MISMATCH');
  assert.deepEqual([...await gt.equal(plain, 12n).readValue()], [1, 0]);
  // Exactly, past float32 and float64: numbers with bigints, dates as milliseconds or Dates.
  assert.deepEqual(await rowsBut2(gt.equal(big, 2 ** 40 + 1)), [0, 0, 0, 0]);
  assert.deepEqual(await rowsBut2(gt.equal(big, 2 ** 40)), [1, 0, 0, 1]);
  assert.deepEqual(await rowsBut2(gt.greater(table.getVector('day'), new Date(86400000))), [0, 1, 0, 0]);
  assert.deepEqual(await rowsBut2(gt.equal(table.getVector('day'), 86400000)), [1, 0, 0, 1]);
  // searchSorted in a sorted dictionary column by value: numbers with bigints exactly,
  // Dates and numbers as milliseconds with dates.
  const bigSorted = gt.sort(big);
  assert.deepEqual([...await gt.searchSorted(bigSorted, 2 ** 40).readValue()], [2]);
  assert.deepEqual([...await gt.searchSorted(bigSorted, 2 ** 40 + 1).readValue()], [4]);
  assert.deepEqual([...await gt.searchSorted(bigSorted, [12n, 13n], {side: 'right'}).readValue()], [2, 2]);
  const daySorted = gt.sort(table.getVector('day'));
  assert.deepEqual([...await gt.searchSorted(daySorted, new Date(86400000)).readValue()], [1]);
  assert.deepEqual([...await gt.searchSorted(daySorted, 86400000, {side: 'right'}).readValue()], [3]);
  const near = await table.groupBy('near').rollup({n: 'count'});
  assert.deepEqual([...await near.getVector('n').readValue()], [1, 1, 2, 1], 'nanoseconds apart: three groups and the null one');
  const floats = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({
    big: dictionary([2 ** 40 + 1, 12], new arrow.Float64(), [0, 1]),
  })));
  const joinedFloats = gt.join(table.getVector('big'), floats.getVector('big'));
  assert.deepEqual([...await joinedFloats.left.readValue()], [3], 'only 12 meets 12n');
  assert.deepEqual([...await joinedFloats.right.readValue()], [1]);
  for (const t of [near, floats]) t.destroy();
  for (const t of [table, kept, sorted, grouped, other, joined]) t.destroy();
});

// A user's trial: NaN in a dictionary of numbers equals nothing, -0 and +0 are one value,
// a streamed table keeps the dictionary its later batches grew, and a table of no batches
// writes its columns' types.
test('ops that move rows keep a text column\'s values: slice, rechunk, concat and select', async () => {
  const ipc = arrow.tableToIPC(arrow.tableFromArrays({
    z: arrow.vectorFromArray(['a', 'b', null, 'c'], new arrow.Utf8()),
    w: arrow.vectorFromArray(['c', 'x', 'a', 'a'], new arrow.Utf8()),
    x: new Float32Array([1, 2, 3, 4])
  }));
  const table = gt.GPUTable.fromArrowIPCSync(ipc);
  const [z, w, x] = ['z', 'w', 'x'].map(name => table.getVector(name));
  const values = async r => {
    const codes = await r.readValue();
    const valid = await gt.isValid(r).readValue();
    return [...codes].map((c, i) => (valid[i] ? r.dictionary[c] : null));
  };
  const late = gt.greater(x, 2);
  assert.deepEqual(await values(gt.slice(z, 1, 3)), ['b', null]);
  assert.deepEqual(await values(gt.rechunk(z, [1, 3])), ['a', 'b', null, 'c']);
  // Columns of other dictionaries meet in one: the first's values, then the others'.
  const joined = gt.concat(z, w);
  assert.deepEqual(joined.dictionary, ['a', 'b', 'c', 'x']);
  assert.deepEqual(await values(joined), ['a', 'b', null, 'c', 'c', 'x', 'a', 'a']);
  assert.deepEqual(await values(gt.select(late, z, w)), ['c', 'x', null, 'c']);
  assert.deepEqual(await values(gt.select(late, 'new', z)), ['a', 'b', 'new', 'new']);
  assert.deepEqual(await values(gt.select(late, z, 'b')), ['b', 'b', null, 'c']);
  throwsCode(() => gt.select(late, z, 5), 'TYPE_MISMATCH');
  throwsCode(() => gt.concat(z, x), 'TYPE_MISMATCH');
  throwsCode(() => gt.cast(z, 'float32'), 'TYPE_MISMATCH');
  table.destroy();
  // A column of nulls (an empty dictionary) meets text; dictionaries of other values that
  // differ meet as their values (a review found bigints and numbers merged into one).
  const mixed = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({
    none: arrow.vectorFromArray([null, null], new arrow.Utf8()),
    text: arrow.vectorFromArray(['q', 'r'], new arrow.Utf8()),
    small: arrow.vectorFromArray([5, 6], new arrow.Dictionary(new arrow.Int32(), new arrow.Int8())),
    big: arrow.vectorFromArray([7n, 5n], new arrow.Dictionary(new arrow.Int64(), new arrow.Int8()))
  })));
  const [none, text, small, big] = ['none', 'text', 'small', 'big'].map(name => mixed.getVector(name));
  assert.deepEqual(await values(gt.concat(none, text)), [null, null, 'q', 'r']);
  const numbers = gt.concat(small, big);
  assert.equal(numbers.dictionary, null);
  assert.deepEqual([...await numbers.readValue()], [5, 6, 7, 5]);
  // Device edges of a dictionary of numbers are its values.
  assert.deepEqual([...await gt.histogram(gt.concat(small, big), {edges: small}).readValue()], [3]);
  mixed.destroy();
});

test('a dictionary column is written back with the index type it was loaded with, where its codes fit', async () => {
  for (const index of [new arrow.Int8(), new arrow.Uint8(), new arrow.Int16(), new arrow.Uint16(), new arrow.Int32(), new arrow.Uint32()]) {
    const names = ['b', null, 'a', 'b', 'c'];
    const ipc = arrow.tableToIPC(new arrow.Table({s: arrow.vectorFromArray(names, new arrow.Dictionary(new arrow.Utf8(), index))}));
    const table = gt.GPUTable.fromArrowIPCSync(ipc);
    const back = arrow.tableFromIPC(table.toArrowIPC());
    const written = back.schema.fields[0].type.indices;
    const expected = index.bitWidth < 32 ? index : new arrow.Int32();
    assert.equal(`${written}`, `${expected}`, `${index} indices`);
    assert.deepEqual([...back.getChild('s')], names);
    // A verb keeps it.
    const kept = await table.filter(t => gt.notEqual(t.s, 'a'));
    assert.equal(`${arrow.tableFromIPC(kept.toArrowIPC()).schema.fields[0].type.indices}`, `${expected}`);
    for (const t of [table, kept]) t.destroy();
  }
  // 128 values fill an Int8 index; one more string added widens it to Int32.
  const many = Array.from({length: 128}, (_, i) => `k${i}`);
  const ipc = arrow.tableToIPC(new arrow.Table({s: arrow.vectorFromArray(many, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int8()))}));
  const table = gt.GPUTable.fromArrowIPCSync(ipc);
  assert.equal(`${arrow.tableFromIPC(table.toArrowIPC()).schema.fields[0].type.indices}`, 'Int8');
  const grown = await table.derive({s: t => gt.select(gt.equal(t.s, 'k0'), 'new', t.s)});
  const shown = arrow.tableFromIPC(grown.toArrowIPC());
  assert.equal(`${shown.schema.fields[0].type.indices}`, 'Int32');
  assert.deepEqual([...shown.getChild('s')], ['new', ...many.slice(1)]);
  // A plain column under the name keeps its own width (it was written one byte a value).
  const plain = await table.derive({s: t => gt.argsort(t.s)});
  const plainBack = arrow.tableFromIPC(plain.toArrowIPC());
  assert.equal(`${plainBack.schema.fields[0].type}`, 'Uint32');
  assert.deepEqual([...plainBack.getChild('s')], many.map((_, i) => i).sort((a, b) => byCodePoint(many[a], many[b])));
  table.destroy();
  grown.destroy();
  plain.destroy();
});

test('NaN keys in a dictionary never match; -0 and +0 are one value', async () => {
  const load = async vector => (await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(new arrow.Table({k: vector})))).getVector('k');
  const floats = new arrow.Dictionary(new arrow.Float64(), new arrow.Int32());
  const v = await load(arrow.vectorFromArray([NaN, 1, NaN], floats));
  const joined = gt.join(v, v);
  assert.deepEqual([...await joined.left.readValue()], [1]);
  assert.deepEqual([...await joined.right.readValue()], [1]);
  assert.deepEqual([...await gt.lookup(v, v).readValue()], [-1, 1, -1]);
  assert.deepEqual([...await gt.equal(v, v).readValue()], [0, 1, 0]);
  assert.deepEqual([...await gt.notEqual(v, v).readValue()], [1, 0, 1]);
  // Another dictionary holding NaN too.
  const w = await load(arrow.vectorFromArray([2, NaN, 1], floats));
  assert.deepEqual([...await gt.lookup(v, w).readValue()], [-1, 2, -1]);
  assert.deepEqual([...await gt.equal(v, w).readValue()], [0, 0, 0]);

  const zeros = arrow.makeData({
    type: floats, length: 3, data: new Int32Array([0, 1, 0]),
    dictionary: arrow.vectorFromArray([0, -0], new arrow.Float64()),
  });
  const z = await load(arrow.makeVector(zeros));
  assert.deepEqual(z.dictionary.map(x => Object.is(x, -0) ? '-0' : x), [0]);
  assert.deepEqual([...await gt.equal(z, z).readValue()], [1, 1, 1]);
  assert.equal((await gt.unique(z).readValue()).length, 1);
  assert.equal([...await gt.join(z, z).left.readValue()].length, 9);
});

test('a streamed table keeps the dictionary its later batches grew', async () => {
  const batches = [['a'], ['b', 'a'], ['c']].map(values => new arrow.Table({s: arrow.vectorFromArray(values, new arrow.Utf8())}).batches[0]);
  const bytes = arrow.tableToIPC(new arrow.Table(batches), 'stream');
  const pieces = async function* () {
    for (let at = 0; at < bytes.length; at += 64) yield bytes.slice(at, at + 64);
  };
  const table = await gt.GPUTable.fromArrowIPC(pieces());
  assert.deepEqual(table.schema.field('s').dictionary, ['a', 'b', 'c']);
  assert.deepEqual(await rowsOf(table, 's'), ['a', 'b', 'a', 'c']);
  const back = arrow.tableFromIPC(table.toArrowIPC());
  assert.deepEqual(back.getChild('s').toArray(), ['a', 'b', 'a', 'c']);
  // A batch whose codes would read other values is refused.
  const other = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(new arrow.Table({s: arrow.vectorFromArray(['z'], new arrow.Utf8())})));
  throwsCode(() => table.addBatch(other.detachBatches()[0]), 'TYPE_MISMATCH');
  table.destroy();
  other.destroy();
});

test('a table of no batches writes its columns with their types', async () => {
  const schema = new arrow.Schema([
    new arrow.Field('k', new arrow.Int32(), true),
    new arrow.Field('x', new arrow.Float32(), false),
    new arrow.Field('s', new arrow.Utf8(), true),
  ]);
  const table = await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(new arrow.Table(schema)));
  assert.equal(table.batches.length, 0);
  const back = arrow.tableFromIPC(table.toArrowIPC());
  assert.deepEqual(back.schema.fields.map(f => String(f.type)), ['Int32', 'Float32', 'Dictionary<Int32, Utf8>']);
  assert.equal(back.numRows, 0);
  const again = await gt.GPUTable.fromArrowIPC(table.toArrowIPC());
  assert.deepEqual(again.schema.fields.map(f => f.type), table.schema.fields.map(f => f.type));
  table.destroy();
  again.destroy();
});

test('min and max of a text column go by its strings and keep its dictionary; sums add values', async () => {
  const names = randomStrings(500, 9);
  const groups = Int32Array.from(names, (_, i) => (i * 7) % 5);
  const ipc = arrow.tableToIPC(arrow.tableFromArrays({g: groups, s: arrow.vectorFromArray(names, new arrow.Utf8())}));
  const table = await gt.GPUTable.fromArrowIPC(ipc);
  const rolled = await table.groupBy('g').rollup({lo: ['min', 's'], hi: ['max', 's'], n: ['count', 's']});
  assert.deepEqual(rolled.schema.field('lo').dictionary, table.schema.field('s').dictionary);
  const reference = [0, 1, 2, 3, 4].map(g => names.filter((v, i) => groups[i] === g && v !== null).sort(byCodePoint));
  assert.deepEqual(await rowsOf(rolled, 'lo'), reference.map(v => v[0]));
  assert.deepEqual(await rowsOf(rolled, 'hi'), reference.map(v => v[v.length - 1]));
  const back = arrow.tableFromIPC(rolled.toArrowIPC());
  assert.deepEqual(back.getChild('hi').toArray(), reference.map(v => v[v.length - 1]));
  // Whole columns alike; strings have no sum.
  const present = names.filter(v => v !== null).sort(byCodePoint);
  const s = table.getVector('s');
  const decode = async x => x.dictionary[(await x.readValue())[0]];
  assert.equal(await decode(gt.min(s)), present[0]);
  assert.equal(await decode(gt.max(s)), present[present.length - 1]);
  assert.equal((await gt.argmin(s).readValue())[0], names.indexOf(present[0]));
  throwsCode(() => gt.sum(s), 'TYPE_MISMATCH');
  await rejectsCode(table.groupBy('g').rollup({total: ['sum', 's']}), 'TYPE_MISMATCH');
  // A dictionary of numbers adds its values, not its codes.
  const numbers = arrow.vectorFromArray([10, 2, 10, 7], new arrow.Dictionary(new arrow.Float64(), new arrow.Int32()));
  const n = (await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(new arrow.Table({n: numbers})))).getVector('n');
  assert.deepEqual([...await gt.sum(n).readValue()], [29]);
  assert.deepEqual([...await gt.mean(n).readValue()], [7.25]);
  assert.equal(await decode(gt.min(n)), 2);
  // Arithmetic, cumulative ops and histograms alike: a review found cumsum and histogram
  // of a text column adding and counting its codes.
  assert.deepEqual([...await gt.add(n, 1).readValue()], [11, 3, 11, 8]);
  assert.deepEqual([...await gt.floor(gt.divide(n, 4)).readValue()], [2, 0, 2, 1]);
  assert.deepEqual([...await gt.cumsum(n).readValue()], [10, 12, 22, 29]);
  assert.deepEqual([...await gt.histogram(n, {bins: 2, range: [0, 10]}).readValue()], [1, 3]);
  for (const op of [x => gt.add(x, 1), x => gt.cumsum(x), x => gt.cummax(x), x => gt.histogram(x, {bins: 2}), x => gt.floor(x), x => gt.sqrt(x), x => gt.mod(x, 2), x => gt.maximum(x, 1)]) {
    throwsCode(() => op(s), 'TYPE_MISMATCH');
  }
  for (const t of [table, rolled]) t.destroy();
});

test('order comparisons of dictionary columns go by value, across dictionaries and with NaN', async () => {
  const load = async (values, type) => (await gt.GPUTable.fromArrowIPC(arrow.tableToIPC(new arrow.Table({k: arrow.vectorFromArray(values, type)})))).getVector('k');
  const text = new arrow.Utf8();
  const a = await load(['b', 'a', 'c', 'd', 'b'], text);
  const b = await load(['a', 'b', 'zz', 'c', 'b'], text);
  const rows = async x => [...await x.readValue()];
  const pairs = [['b', 'a'], ['a', 'b'], ['c', 'zz'], ['d', 'c'], ['b', 'b']];
  const want = f => pairs.map(([x, y]) => Number(f(byCodePoint(x, y))));
  assert.deepEqual((await rows(gt.less(a, b))), want(c => c < 0));
  assert.deepEqual((await rows(gt.greaterEqual(a, b))), want(c => c >= 0));
  const floats = new arrow.Dictionary(new arrow.Float64(), new arrow.Int32());
  const x = await load([NaN, 1, 3, NaN], floats);
  const y = await load([2, NaN, 3, 5], floats);
  assert.deepEqual(await rows(gt.less(x, y)), [0, 0, 0, 0]);
  assert.deepEqual(await rows(gt.greater(x, y)), [0, 0, 0, 0]);
  assert.deepEqual(await rows(gt.lessEqual(x, y)), [0, 0, 1, 0]);
  assert.deepEqual(await rows(gt.greater(x, x)), [0, 0, 0, 0]);
  assert.deepEqual(await rows(gt.greaterEqual(x, x)), [0, 1, 1, 0]);
  assert.deepEqual(await rows(gt.greater(x, 2)), [0, 0, 1, 0]);
  throwsCode(() => gt.less(a, x), 'TYPE_MISMATCH');
});

test('fillNull of a text column takes a string: its code, or the string added to the dictionary', async () => {
  const s = ['a', null, 'b', null, 'a'];
  const table = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({
    s: arrow.vectorFromArray(s, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int8())),
  })));
  const column = table.getVector('s');
  const decode = async x => Array.from(await x.readValue(), code => x.dictionary[code]);
  const known = gt.fillNull(column, 'b');
  assert.deepEqual(await decode(known), s.map(v => v ?? 'b'));
  const added = gt.fillNull(column, '');
  assert.deepEqual(await decode(added), s.map(v => v ?? ''));
  assert.equal(added.dictionary.length, column.dictionary.length + 1);
  // A code as a number keeps the dictionary too.
  const byCode = gt.fillNull(column, 0);
  assert.deepEqual(await decode(byCode), s.map(v => v ?? column.dictionary[0]));
  const filled = await table.derive({s: t => gt.fillNull(t.s, 'zz')});
  const written = arrow.tableFromIPC(filled.toArrowIPC());
  assert.deepEqual([...written.getChild('s')], s.map(v => v ?? 'zz'));
  throwsCode(() => gt.fillNull(column, 5), 'INVALID_ARGUMENT');
  // A number fills a dictionary of numbers by value.
  const numbers = gt.GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.tableFromArrays({
    d: arrow.vectorFromArray([1.5, null, 2.5], new arrow.Dictionary(new arrow.Float64(), new arrow.Int32())),
  })));
  assert.deepEqual(await decode(gt.fillNull(numbers.getVector('d'), 2.5)), [1.5, 2.5, 2.5]);
  throwsCode(() => gt.fillNull(numbers.getVector('d'), 7), 'INVALID_ARGUMENT');
  numbers.destroy();
  // A string fills only a text column.
  throwsCode(() => gt.fillNull(gt.GPUTableEvaluator.fromArray([1, 2]), "b"), "INVALID_ARGUMENT");
  filled.destroy();
  table.destroy();
});

// max and argmax of a dictionary of numbers holding NaN gave NaN's code (its rank is the
// greatest): NaN is skipped as in a column of numbers, and all-NaN rows give NaN.
test('min, max, argmin and argmax of a dictionary of numbers skip its NaN', async () => {
  const column = (values, codes) => {
    const dictionary = arrow.vectorFromArray(values, new arrow.Float64());
    const type = new arrow.Dictionary(new arrow.Float64(), new arrow.Int32());
    const data = arrow.makeData({type, length: codes.length, nullCount: 0, data: new Int32Array(codes), dictionary});
    const ipc = arrow.tableToIPC(new arrow.Table({k: arrow.makeVector(data)}));
    return gt.GPUTable.fromArrowIPCSync(ipc).getVector('k');
  };
  const valueOf = async x => {
    const done = await x.evaluate();
    return [...done.readValueSync()].map(code => done.dictionary[code]);
  };
  const k = column([10, -5, 2.5, NaN], [3, 0, 1, 2, 3]);
  assert.deepEqual(await valueOf(gt.max(k)), [10]);
  assert.deepEqual(await valueOf(gt.min(k)), [-5]);
  assert.deepEqual([...await gt.argmax(k).readValue()], [1]);
  assert.deepEqual([...await gt.argmin(k).readValue()], [2]);
  const onlyNaN = column([10, NaN], [1, 1]);
  assert.ok(Number.isNaN((await valueOf(gt.max(onlyNaN)))[0]));
  const grouped = gt.groupBy(gt.GPUTableEvaluator.fromArray([0, 0, 0, 1, 1], {type: 'uint32'}), {high: ['max', k], at: ['argmax', k]});
  assert.deepEqual(await valueOf(grouped.high), [10, 2.5]);
  assert.deepEqual([...await grouped.at.readValue()], [1, 3]);
});
