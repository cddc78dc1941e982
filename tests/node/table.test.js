// The table model and Arrow IPC through the built package: interop with apache-arrow JS,
// batch-preserving evaluation, ownership rules and a leak check, on the CPU device.
import {test} from 'node:test';
import assert from 'node:assert/strict';
import * as arrow from 'apache-arrow';
import * as gt from '../../dist/node/index.js';
import {throwsCode} from './helpers.js';

const {GPUTable, GPUTableEvaluator: E} = gt;

/** Two record batches (5 and 7 rows) with every kind of column gputable reads. */
function sourceTable() {
  const build = (k, rows) => {
    const positions = arrow.vectorFromArray(
      Array.from({length: rows}, (_, i) => [i + k, -i, 0.5 * i]),
      new arrow.FixedSizeList(3, new arrow.Field('xyz', new arrow.Float32()))
    );
    return arrow.makeTable({
      x: Float32Array.from({length: rows}, (_, i) => i * 1.5 + k),
      id: Int32Array.from({length: rows}, (_, i) => i - k * 100),
      level: Uint8Array.from({length: rows}, (_, i) => (i * 7) % 256),
      when: Float64Array.from({length: rows}, (_, i) => 1.7e12 + i * 0.001 + k)
    }).assign(new arrow.Table({
      positions,
      flag: arrow.vectorFromArray(Array.from({length: rows}, (_, i) => i % 3 === 0), new arrow.Bool()),
      name: arrow.vectorFromArray(Array.from({length: rows}, (_, i) => ['a', 'b', 'c'][i % 3]), new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
      score: arrow.vectorFromArray(Array.from({length: rows}, (_, i) => (i % 4 === 1 ? null : i / 4)), new arrow.Float32())
    }));
  };
  const whole = build(1, 12);
  return new arrow.Table([...whole.slice(0, 5).batches, ...whole.slice(5).batches]);
}

test('Arrow IPC from apache-arrow: batches, types and nulls are kept', () => {
  const source = sourceTable();
  for (const format of ['stream', 'file']) {
    // Word pairs keep Float64 exact for the round trip below.
    const table = GPUTable.fromArrowIPCSync(arrow.tableToIPC(source, format), {float64: 'words'});
    assert.equal(table.batches.length, 2, 'one GPURecordBatch per source batch');
    assert.equal(table.numRows, 12);
    assert.equal(table.numCols, 8);
    assert.deepEqual(table.schema.names, ['x', 'id', 'level', 'when', 'positions', 'flag', 'name', 'score']);
    const positions = table.getVector('positions');
    assert.equal(table.gpuVectors.length, 8);
    assert.equal(table.gpuVectors.positions.name, 'positions', 'vectors by name too');
    assert.equal(table.batches[1].gpuVectors.x.length, 7);
    assert.equal(positions.format, 'float32x3');
    assert.equal(positions.data.length, 2);
    assert.deepEqual([...positions.readValueSync(0, 2)], [1, -0, 0, 2, -1, 0.5]);
    assert.equal(table.schema.field('when').format, 'uint32x2', "Float64 as word pairs with float64: 'words'");
    const plain = GPUTable.fromArrowIPCSync(arrow.tableToIPC(source, format));
    assert.equal(plain.schema.field('when').format, 'float32', 'Float64 as float32 by default');
    assert.equal(plain.getVector('when').readValueSync(0, 1)[0], Math.fround(source.getChild('when').get(0)));
    plain.destroy();
    assert.equal(table.schema.field('flag').type, 'uint8');
    assert.deepEqual([...table.getVector('name').readValueSync(0, 4)], [0, 1, 2, 0], 'dictionary indices');
    const score = table.getVector('score');
    assert.deepEqual([...score.validity.readValueSync(0, 6)], [1, 0, 1, 1, 1, 0]);
    assert.deepEqual([...score.readValueSync(0, 3)], [0, 0, 0.5], 'null slots read 0');
    // Written back, apache-arrow reads the same values, nulls and batches.
    const back = arrow.tableFromIPC(table.toArrowIPC());
    assert.equal(back.batches.length, 2);
    for (const name of ['x', 'id', 'level', 'when', 'flag', 'score']) {
      assert.deepEqual(back.getChild(name).toArray(), source.getChild(name).toArray(), name);
    }
    assert.deepEqual(back.getChild('score').toJSON(), source.getChild('score').toJSON());
    assert.deepEqual(back.getChild('positions').toJSON().map(v => [...v]), source.getChild('positions').toJSON().map(v => [...v]));
    table.destroy();
  }
});

test('ops on table vectors run per batch and keep the batches', async () => {
  const table = GPUTable.fromArrowIPCSync(arrow.tableToIPC(sourceTable()), {float64: 'words'});
  const x = table.getVector('x');
  const r = gt.add(gt.multiply(x, 2), 1);
  const out = await r.evaluate();
  assert.equal(out.data.length, 2, 'the result keeps the batches');
  assert.deepEqual([...await r.readValue()], [...x.readValueSync()].map(v => v * 2 + 1));
  const back = arrow.tableFromIPC(r.toArrowIPC('y'));
  assert.equal(back.batches.length, 2);
  assert.deepEqual([...back.getChild('y').toArray()], [...await r.readValue()]);
  // fromVector borrows: destroying the evaluator leaves the table's storage alone.
  const borrowed = E.fromVector(table.getVector('id'));
  assert.equal(borrowed.length, 12);
  borrowed.destroy();
  throwsCode(() => borrowed.readValueSync(), 'DESTROYED');
  throwsCode(() => gt.add(borrowed, 1), 'DESTROYED');
  assert.equal(table.getVector('id').readValueSync(0, 1)[0], -100);
  const range = gt.extent(table.getVector('positions'));
  assert.deepEqual([...await range.readValue()].map(v => v + 0), [1, 12, -11, 0, 0, 5.5]);
  // A batch at a time, and fround over the Float64 words.
  const split = gt.fround(table.batches[1].getVector('when'));
  assert.equal((await split.readValue()).length, 14);
  // A gather reads a source in several batches.
  const picked = gt.gather(E.fromArray([11, 0], {type: 'uint32'}), x);
  const all = x.readValueSync();
  assert.deepEqual([...await picked.readValue()], [all[11], all[0]]);
  table.destroy();
});

test('unsupported and malformed IPC are typed errors', () => {
  const big = arrow.tableToIPC(arrow.makeTable({n: BigInt64Array.from([1n, 2n])}));
  throwsCode(() => GPUTable.fromArrowIPCSync(big), 'TYPE_MISMATCH');
  const converted = GPUTable.fromArrowIPCSync(big, {int64: 'int32'});
  assert.deepEqual([...converted.getVector('n').readValueSync()], [1, 2]);
  converted.destroy();
  const bytes = arrow.tableToIPC(new arrow.Table({s: arrow.vectorFromArray([new Uint8Array([1]), new Uint8Array([2])], new arrow.Binary())}));
  assert.throws(() => GPUTable.fromArrowIPCSync(bytes), /column 's'/);
  throwsCode(() => GPUTable.fromArrowIPCSync(new Uint8Array([1, 2, 3])), 'INVALID_IPC');
  const ipc = arrow.tableToIPC(sourceTable());
  const file = arrow.tableToIPC(sourceTable(), 'file');
  throwsCode(() => GPUTable.fromArrowIPCSync(file.subarray(0, file.length - 100)), 'INVALID_IPC');
  throwsCode(() => GPUTable.fromArrowIPCSync('nope'), 'INVALID_ARGUMENT');
  const picked = GPUTable.fromArrowIPCSync(ipc, {columns: ['level', 'x'], float64: 'float32'});
  assert.deepEqual(picked.schema.names, ['level', 'x']);
  picked.destroy();
});

test('ownership: destroy, detach, select, pack, add and append', () => {
  const ipc = arrow.tableToIPC(sourceTable());
  const table = GPUTable.fromArrowIPCSync(ipc);
  const before = gt.liveAllocations();
  const detached = table.detachVector('x');
  assert.deepEqual(table.schema.names.includes('x'), false);
  assert.equal(detached.length, 12);
  const view = table.select('id', 'level');
  view.destroy();
  assert.equal(table.getVector('id').length, 12, 'a selection borrows: destroying it frees nothing');
  const [first] = table.detachBatches(0, 1);
  assert.equal(table.batches.length, 1);
  table.addBatch(first);
  assert.equal(table.numRows, 12);
  table.packBatches();
  assert.equal(table.batches.length, 1);
  assert.equal(table.numRows, 12);
  assert.deepEqual([...table.getVector('level').readValueSync(5, 7)], [70, 77], 'the re-added batch comes last');
  assert.deepEqual([...table.getVector('score').validity.readValueSync(0, 6)], [0, 1, 1, 1, 0, 1]);
  assert.ok(gt.liveAllocations() < before, 'packing freed the superseded storage');
  table.destroy();
  throwsCode(() => table.numRows, 'DESTROYED');
  throwsCode(() => table.getVector('id'), 'DESTROYED');
  throwsCode(() => first.getVector('id'), 'DESTROYED');
  assert.deepEqual([...detached.readValueSync(0, 2)], [1, 2.5], 'the detached vector outlives the table');
  detached.destroy();
  throwsCode(() => detached.readValueSync(), 'DESTROYED');
  throwsCode(() => gt.add(detached, 1), 'DESTROYED');

  const points = gt.GPUVector.appendable({name: 'p', type: 'float32', size: 2, capacity: 2});
  points.append([1, 2, 3, 4]).append(new Float32Array([5, 6]));
  assert.equal(points.length, 3);
  assert.equal(points.data[0].buffer.capacity, 4, 'capacity doubled');
  assert.equal(points.data[0].buffer.generation, 1);
  assert.deepEqual([...gt.add(points, 1).readValueSync()], [2, 3, 4, 5, 6, 7]);
  const appendable = new GPUTable().addBatch(new gt.GPURecordBatch([points]));
  appendable.resetLastBatch();
  assert.equal(points.length, 0);
  assert.equal(points.data[0].buffer.capacity, 4, 'reset keeps the capacity');
  assert.equal(appendable.bufferLayout[0].attributes[0].format, 'float32x2');
  assert.equal(appendable.bindings.p.size, 0);
  appendable.destroy();
  throwsCode(() => points.append([1, 2]), 'DESTROYED');
});

test('schema and field metadata survive IPC in and out, verbs and selections', async () => {
  const field = new arrow.Field('x', new arrow.Float32(), true, new Map([['unit', 'km']]));
  const schema = new arrow.Schema([field, new arrow.Field('id', new arrow.Int32())], new Map([['source', 'trips'], ['v', '2']]));
  const source = new arrow.Table(schema, {
    x: arrow.vectorFromArray([1.5, null, 3], new arrow.Float32()),
    id: arrow.vectorFromArray([1, 2, 3], new arrow.Int32())
  });
  const check = (table, what) => {
    assert.deepEqual(table.schema.metadata, {source: 'trips', v: '2'}, what);
    assert.equal(table.schema.field('x').metadata.unit, 'km', what);
  };
  for (const format of ['stream', 'file']) {
    const bytes = arrow.tableToIPC(source, format);
    const table = GPUTable.fromArrowIPCSync(bytes);
    check(table, format);
    assert.deepEqual(table.batches[0].schema.metadata, {source: 'trips', v: '2'}, 'batches keep it too');
    check(await GPUTable.fromArrowIPC(new Blob([bytes]).stream()), `${format} read in pieces`);
    const back = arrow.tableFromIPC(table.toArrowIPC());
    assert.deepEqual(Object.fromEntries(back.schema.metadata), {source: 'trips', v: '2'});
    assert.deepEqual(Object.fromEntries(back.schema.fields[0].metadata), {unit: 'km'}, 'our arrowType and kind are not written');
    assert.equal(back.schema.fields[1].metadata.size, 0);
    check(table.select('x'), 'a selection');
    check(await table.filter(t => gt.greater(t.id, 1)), 'a verb');
    table.destroy();
  }
  // A schema given to a batch or a table keeps its metadata, and writes it.
  const values = E.fromArray(new Float32Array([1, 2])).evaluateSync();
  const given = new gt.GPUSchema([new gt.GPUField({name: 'a', type: 'float32', metadata: {unit: 's'}})], {top: 'x'});
  const batch = new gt.GPURecordBatch([values], given);
  assert.deepEqual(batch.schema.metadata, {top: 'x'});
  const table = new GPUTable({batches: [batch]});
  assert.deepEqual(table.schema.metadata, {top: 'x'}, 'a table adopts its first batch\'s schema');
  const written = arrow.tableFromIPC(table.toArrowIPC());
  assert.deepEqual(Object.fromEntries(written.schema.metadata), {top: 'x'});
  assert.deepEqual(Object.fromEntries(written.schema.fields[0].metadata), {unit: 's'});
  assert.deepEqual(new GPUTable({schema: given}).schema.metadata, {top: 'x'});
  throwsCode(() => new GPUTable({schema: new gt.GPUSchema([], {n: 1})}), 'INVALID_ARGUMENT');
  table.destroy();
  for (const bad of [null, undefined, 7, 'x']) throwsCode(() => new gt.GPUField(bad), 'INVALID_ARGUMENT');
});

test('a destroyed table, batch or vector throws DESTROYED for its rows and schema', () => {
  const table = GPUTable.fromArrowIPCSync(arrow.tableToIPC(sourceTable()));
  const [batch] = table.batches;
  const vector = table.getVector('score');
  const [data] = vector.data;
  table.destroy();
  for (const read of [() => table.schema, () => table.numCols, () => batch.schema, () => batch.numCols,
    () => vector.length, () => vector.chunks, () => vector.data, () => vector.validity]) {
    throwsCode(read, 'DESTROYED');
  }
  assert.equal(vector.type, 'float32', 'its type still describes it');
  assert.deepEqual([table.destroyed, batch.destroyed, vector.destroyed, data.destroyed], [true, true, true, true]);
});

test('thousands of tables created, packed, detached and destroyed leak no storage', async () => {
  const ipc = arrow.tableToIPC(sourceTable());
  const device = await gt.createDevice();
  const start = gt.liveAllocations();
  assert.equal(device.liveAllocations, start);
  for (let i = 0; i < 2000; i++) {
    const table = GPUTable.fromArrowIPCSync(ipc, {device, columns: ['x', 'positions', 'score']});
    if (i === 0) assert.equal(device.liveAllocations, start + 8, '3 columns and a validity vector, 2 batches');
    if (i % 2) table.packBatches();
    const vector = table.detachVector('positions');
    const batches = table.detachBatches(0, 1);
    table.destroy();
    vector.destroy();
    for (const batch of batches) batch.destroy();
  }
  assert.equal(gt.liveAllocations(), start);
  assert.equal(device.liveAllocations, start);
});

test('one view per model object: batches, vectors and buffers keep their identity', () => {
  const table = GPUTable.fromArrowIPCSync(arrow.tableToIPC(sourceTable()), {columns: ['x', 'score']});
  const [first, second] = table.batches;
  assert.equal(table.batches[0], first, 'the same batch object each time');
  assert.equal(first.getVector('x'), first.gpuVectors.x, 'the same vector object each time');
  assert.equal(first.getVector('x').data[0].buffer, first.getVector('x').data[0].buffer);
  const [detached] = table.detachBatches(1, 2);
  assert.equal(detached, second, 'a detached batch is the batch the table held');
  assert.equal(table.batches.length, 1);
  table.addBatch(detached);
  throwsCode(() => table.addBatch(detached), 'INVALID_ARGUMENT');
  throwsCode(() => new gt.GPUData({}), 'INVALID_ARGUMENT');
  table.destroy();
  assert.equal(first.destroyed, true);
  throwsCode(() => first.numRows, 'DESTROYED');
  throwsCode(() => table.batches, 'DESTROYED');
});

test('addBatch gives every batch validity where one has nulls, and the table writes it', () => {
  const plain = new gt.GPURecordBatch([gt.GPUVector.appendable({name: 'v'}).append([1, 2])]);
  assert.equal(plain.schema.fields[0].nullable, false);
  const withNulls = GPUTable.fromArrowIPCSync(arrow.tableToIPC(arrow.makeTable({v: arrow.vectorFromArray([3, null, 5], new arrow.Float32())})));
  const [nullable] = withNulls.detachBatches();
  withNulls.destroy();
  const table = new GPUTable().addBatch(plain).addBatch(nullable);
  assert.equal(table.schema.fields[0].nullable, true);
  assert.equal(plain.schema.fields[0].nullable, true, 'the batch schema follows');
  const column = table.getVector('v');
  assert.deepEqual([...column.validity.readValueSync()], [1, 1, 1, 0, 1], 'all valid where a batch had none');
  assert.equal(gt.sum(column).readValueSync()[0], 11, 'the null slot is skipped');
  const back = arrow.tableFromIPC(table.toArrowIPC());
  assert.deepEqual(back.getChild('v').toJSON(), [1, 2, 3, null, 5]);
  table.destroy();
});

test('ownership edge cases: one table per batch, schemas that lie, splice indices, made flags follow appends', async () => {
  const ipc = arrow.tableToIPC(sourceTable());
  const first = GPUTable.fromArrowIPCSync(ipc, {columns: ['x', 'score']});
  throwsCode(() => new GPUTable({batches: first.batches}), 'INVALID_ARGUMENT');
  const [last] = first.detachBatches(-1);
  assert.equal(last.numRows, 7, 'a negative index counts from the end, as splice does');
  assert.equal(first.batches.length, 1);
  const second = new GPUTable({batches: [last]});
  assert.equal(second.numRows, 7);
  throwsCode(() => first.packBatches({minBatchSize: -1}), 'INVALID_ARGUMENT');
  // resetLastBatch leaves storage that is not appendable alone.
  first.resetLastBatch();
  assert.equal(first.numRows, 5);
  throwsCode(() => new gt.GPURecordBatch([gt.GPUVector.appendable({name: 'p', size: 4})], [{name: 'p', type: 'uint8', size: 1}]), 'TYPE_MISMATCH');
  // Flags a table made for an appendable vector follow its appends.
  const points = gt.GPUVector.appendable({name: 'score'}).append([1, 2]);
  const grown = new GPUTable().addBatch(new gt.GPURecordBatch([gt.GPUVector.appendable({name: 'x'}).append([0, 0]), points]));
  const [nulls] = first.detachBatches();
  grown.addBatch(nulls);
  points.append([3]);
  assert.equal(points.validity.length, 3);
  assert.deepEqual([...grown.getVector('score').validity.readValueSync(0, 5)], [1, 1, 1, 1, 0]);
  // A table over an output whose evaluator was destroyed says DESTROYED when written.
  const evaluator = E.fromArray(new Float32Array([1, 2]));
  const borrowed = new GPUTable().addBatch(new gt.GPURecordBatch([evaluator.evaluateSync()]));
  evaluator.destroy();
  throwsCode(() => borrowed.toArrowIPC(), 'DESTROYED');
  // The batch keeps its rows; its vector, whose storage went, is DESTROYED to read.
  assert.equal(borrowed.numRows, 2);
  throwsCode(() => borrowed.getVector('').length, 'DESTROYED');
  throwsCode(() => borrowed.getVector('').readValueSync(), 'DESTROYED');
  borrowed.destroy();
  first.destroy();
  second.destroy();
  grown.destroy();
});

test('Date32 and Time32 columns load as sint32; Timestamp and Date64 follow the int64 option; all write back as loaded', () => {
  const days = [Date.UTC(2026, 10, 29), null, Date.UTC(1969, 11, 31)];
  const table = arrow.makeTable({
    day: arrow.vectorFromArray(days.map(d => (d === null ? null : new Date(d))), new arrow.DateDay()),
    at: arrow.vectorFromArray([1000, 2000, -5], new arrow.TimestampMillisecond()),
    time: arrow.vectorFromArray([5, 86399, 60], new arrow.TimeSecond()),
  });
  const bytes = arrow.tableToIPC(table);
  throwsCode(() => GPUTable.fromArrowIPCSync(bytes), 'TYPE_MISMATCH');
  const t = GPUTable.fromArrowIPCSync(bytes, {int64: 'int32'});
  assert.deepEqual(t.schema.fields.map(f => f.type), ['sint32', 'sint32', 'sint32']);
  assert.deepEqual([...t.getVector('day').readValueSync()], [20786, 0, -1]);
  assert.deepEqual([...t.getVector('day').validity.readValueSync()], [1, 0, 1]);
  assert.deepEqual([...t.getVector('at').readValueSync()], [1000, 2000, -5]);
  assert.deepEqual([...t.getVector('time').readValueSync()], [5, 86399, 60]);
  const dates = GPUTable.fromArrowIPCSync(arrow.tableToIPC(table.select(['day', 'time'])));
  assert.equal(dates.numRows, 3);
  // Written back as the types they were loaded from.
  const back = arrow.tableFromIPC(dates.toArrowIPC());
  assert.deepEqual(back.schema.fields.map(f => String(f.type)), ['Date32<DAY>', 'Time32<SECOND>']);
  assert.deepEqual(back.getChild('day').toArray().map(d => (d === null ? null : Number(d))), days);
  assert.deepEqual([...back.getChild('time').toArray()], [5, 86399, 60]);
  // Timestamp too, from int32 or float32 values.
  for (const int64 of ['int32', 'float32']) {
    const at = arrow.tableFromIPC(GPUTable.fromArrowIPCSync(bytes, {int64}).toArrowIPC()).getChild('at');
    assert.equal(String(at.type), 'Timestamp<MILLISECOND>');
    assert.deepEqual([...at.toArray()].map(Number), [1000, 2000, -5]);
  }
});

// A lazy op built on an appendable vector was DESTROYED by the next append or reset (its
// rows' node was destroyed); it keeps the rows it was built on. Text appended was NaN.
test('ops built on an appendable vector keep its rows through append and reset', async () => {
  const points = gt.GPUVector.appendable({type: 'float32', capacity: 100});
  points.append([1, 2]);
  const before = gt.add(points, 0);
  const total = gt.sum(points);
  points.append([3]);
  const after = gt.add(points, 0);
  points.resetLastBatch();
  points.append([7]);
  assert.deepEqual([...await before.readValue()], [1, 2]);
  assert.deepEqual([...await total.readValue()], [3]);
  assert.deepEqual([...await after.readValue()], [1, 2, 3]);
  assert.deepEqual([...await points.readValue()], [7]);
  throwsCode(() => points.append(['a', 'b']), 'INVALID_ARGUMENT');
  for (const evaluator of [before, total, after]) evaluator.destroy();
  points.destroy();
});

// A type or format that is not a string was read out of the wasm memory's bounds.
test('names given to the wasm module are strings or INVALID_ARGUMENT', async () => {
  const x = E.fromArray([1.5, 0]);
  for (const type of [3, undefined, null, {}, ['uint8'], true]) throwsCode(() => gt.cast(x, type), 'INVALID_ARGUMENT');
  await assert.rejects(gt.SparseMatrix.fromDense(E.fromArray([1, 0], {size: 2}), {format: 3}),
    error => error.code === 'INVALID_ARGUMENT');
  assert.deepEqual([...await gt.cast(x, 'uint8').readValue()], [1, 0]);
});
