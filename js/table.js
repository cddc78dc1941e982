// Typed views of the Rust table model (reference: gpu-table-structure.txt): GPUTable owns
// GPURecordBatches, a batch owns its batch-local GPUVectors, a vector owns or borrows GPUData
// chunks, and only GPUData owns storage (a DynamicBuffer). Ownership, validity alignment,
// detach, select, packing and Arrow IPC in and out are the model's (src/table/). A table on
// a GPU device keeps its storage there only.
import {wasm} from './bindings.js';
import {fail, guard, guardAsync} from './errors.js';
import {formatOf, options} from './types.js';
import {resolveDevice, withHandlesAsync} from './devices.js';
import {GPUVector, MODEL, remember, viewOf} from './vectors.js';
import {finishIpc} from './ipc.js';
import {GPUTableEvaluator, evaluateTogether, handleOf, withMade} from './evaluator.js';
import {argsort, filter, gather, groupBy, slice, topK} from './ops.js';
import {dictionaryOf, joinKeys} from './dictionaries.js';
import {dictionarySource, shownDictionary} from './dictionary-source.js';

export class GPUField {
  constructor(field) {
    if (field === null || typeof field !== 'object') fail('INVALID_ARGUMENT', 'a field needs {name, type, size}');
    const {name, type, size = 1, nullable = false, metadata = {}, dictionary = null} = field;
    this.name = name;
    this.type = type;
    this.size = size;
    this.format = formatOf(type, size);
    this.nullable = nullable;
    this.metadata = metadata;
    // A dictionary column's values by code (api.md "Tables").
    this.dictionary = shownDictionary(dictionary);
  }
}

export class GPUSchema {
  constructor(fields, metadata = {}) {
    this.fields = fields;
    this.metadata = metadata;
  }
  get names() {
    return this.fields.map(f => f.name);
  }
  field(name) {
    return this.fields.find(f => f.name === name);
  }
}

const VERTEX_FORMATS = new Set([
  'uint8x2', 'uint8x4', 'sint8x2', 'sint8x4', 'uint16x2', 'uint16x4', 'sint16x2', 'sint16x4',
  'float32', 'float32x2', 'float32x3', 'float32x4', 'uint32', 'uint32x2', 'uint32x3', 'uint32x4',
  'sint32', 'sint32x2', 'sint32x3', 'sint32x4'
]);

const DEVICE_TYPES = {uint8: 'uint32', uint16: 'uint32', uint32: 'uint32', sint8: 'sint32', sint16: 'sint32', sint32: 'sint32', float32: 'float32'};

// Rendering descriptions of single-chunk vectors: a WebGPU-style buffer layout per column
// (one buffer per column, `format` null where no vertex format fits), attributes and
// bindings pointing at each column's buffer. On a WebGPU device the column's resident
// `gpuBuffer` (on `device.gpuDevice`) is included; there every value is 32 bits, so
// `gpuFormat` and `gpuByteStride` describe that layout.
function describeVectors(vectors) {
  const bufferLayout = [];
  const attributes = {};
  const bindings = {};
  vectors.forEach((vector, location) => {
    const chunk = vector.data[vector.data.length - 1];
    const vertexFormat = VERTEX_FORMATS.has(vector.format) ? vector.format : null;
    const gpuBuffer = chunk?.buffer.gpuBuffer;
    const gpu = gpuBuffer ? {gpuBuffer, gpuFormat: formatOf(DEVICE_TYPES[vector.type], vector.size), gpuByteStride: vector.size * 4} : {};
    bufferLayout.push({
      name: vector.name,
      byteStride: gpuBuffer ? gpu.gpuByteStride : vector.byteStride,
      stepMode: 'vertex',
      attributes: [{attribute: vector.name, format: gpuBuffer ? gpu.gpuFormat : vertexFormat, byteOffset: 0, shaderLocation: location}]
    });
    attributes[vector.name] = {buffer: chunk?.buffer ?? null, format: vertexFormat, byteOffset: 0, byteStride: vector.byteStride, ...gpu};
    bindings[vector.name] = {buffer: chunk?.buffer ?? null, offset: 0, size: chunk ? chunk.length * (gpuBuffer ? gpu.gpuByteStride : vector.byteStride) : 0, ...gpu};
  });
  return {bufferLayout, attributes, bindings};
}

// The model's fields (`[{name, type, size, nullable, metadata}]`) and the schema's metadata
// as a GPUSchema.
function schemaOf(fields, metadata) {
  return new GPUSchema(Array.from(fields, f => new GPUField(f)), metadata);
}

// The schema of a table or batch view, described again only when its model's changed.
function cachedSchema(view) {
  if (view._schemaVersion !== view._m.version) {
    view._schema = schemaOf(view._m.fields(), view._m.metadata());
    view._schemaVersion = view._m.version;
  }
  return view._schema;
}

// A GPUSchema's metadata (a list of fields has none); a Map, as apache-arrow's, as an object.
function metadataOf(schema) {
  const metadata = schema instanceof GPUSchema ? schema.metadata : null;
  return metadata instanceof Map ? Object.fromEntries(metadata) : metadata;
}

// A GPUSchema (or a list of fields) as the model's fields.
function fieldsOf(schema) {
  const fields = schema instanceof GPUSchema ? schema.fields : schema;
  if (!Array.isArray(fields)) fail('INVALID_ARGUMENT', 'a schema needs a GPUSchema or an array of fields');
  return fields.map(field => {
    if (field === null || typeof field !== 'object') fail('INVALID_ARGUMENT', 'a field needs {name, type, size}');
    const {name, type, size = 1, nullable = false, metadata = {}, dictionary = null} = field;
    return {name, type, size, nullable, metadata, dictionary: dictionarySource(dictionary)};
  });
}

export class GPURecordBatch {
  constructor(vectors, schema = null) {
    if (vectors?.[MODEL]) {
      this._m = vectors[MODEL];
    } else {
      if (!Array.isArray(vectors) || vectors.some(v => !(v instanceof GPUVector))) {
        fail('INVALID_ARGUMENT', 'a GPURecordBatch needs single-chunk GPUVectors');
      }
      const list = guard(() => new wasm.VectorList());
      try {
        for (const vector of vectors) list.push(vector._m);
        const fields = schema === null ? null : fieldsOf(schema);
        this._m = guard(() => new wasm.BatchModel(list, fields, metadataOf(schema)));
      } finally {
        list.free();
      }
    }
    remember(this);
  }
  get schema() {
    guard(() => this._m.check());
    return cachedSchema(this);
  }
  get destroyed() {
    return this._m.destroyed;
  }
  get gpuVectors() {
    return byName(this._vectors());
  }
  get numRows() {
    return guard(() => this._m.numRows());
  }
  get numCols() {
    return this.schema.fields.length;
  }
  getVector(name) {
    return coded(viewOf(GPUVector, guard(() => this._m.vector(String(name)))), this.schema);
  }
  get bufferLayout() {
    return describeVectors(this._vectors()).bufferLayout;
  }
  get attributes() {
    return describeVectors(this._vectors()).attributes;
  }
  get bindings() {
    return describeVectors(this._vectors()).bindings;
  }
  destroy() {
    this._m.destroy();
  }
  _vectors() {
    return Array.from(guard(() => this._m.vectors()), v => coded(viewOf(GPUVector, v), this.schema));
  }
}

// Puts every batch's storage on a GPU `device`, keeping no other copy.
async function putOnDevice(batches, device) {
  if (!onGpu(device)) return;
  for (const batch of batches) await guardAsync(() => device._handle.putBatchHere(batch._m));
}

// Whether a table's storage lives on a GPU device (reads and writes wait for it).
// A verb's result as a promise: its argument checks reject it instead of throwing before the
// caller can attach a handler (api.md: verbs resolve). Errors pass as thrown (`guardAsync`
// would make a predicate's own error INTERNAL).
const settled = async make => make();

function onGpu(device) {
  return device !== null && device.type !== 'cpu';
}

// Whether `source` hands out bytes a piece at a time (a ReadableStream, an async iterable).
function isByteStream(source) {
  return source !== null && typeof source === 'object' && !ArrayBuffer.isView(source) && !(source instanceof ArrayBuffer) &&
    (typeof source.getReader === 'function' || typeof source[Symbol.asyncIterator] === 'function');
}

// The pieces of a ReadableStream or an async iterable of bytes.
async function* byteChunks(source) {
  if (typeof source.getReader !== 'function') {
    yield* source;
    return;
  }
  const reader = source.getReader();
  try {
    for (;;) {
      const {done, value} = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

function bytesOf(bytes) {
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return fail('INVALID_ARGUMENT', 'fromArrowIPC needs bytes (Uint8Array or ArrayBuffer)');
}

// A table collected without destroy() frees its model handle (its storage stays owned by
// the model objects its batches share).
const releaseTable = new FinalizationRegistry(model => model.free());

export class GPUTable {
  constructor(settings = {}) {
    const {schema = null, batches = [], device = null} = settings ?? {};
    this.device = device;
    if (settings?.[MODEL]) {
      this._m = settings[MODEL];
      releaseTable.register(this, this._m);
      return;
    }
    if (!Array.isArray(batches)) fail('INVALID_ARGUMENT', 'batches must be an array of GPURecordBatch');
    this._m = guard(() => new wasm.TableModel(schema === null ? null : fieldsOf(schema), device?.id, metadataOf(schema)));
    releaseTable.register(this, this._m);
    try {
      for (const batch of batches) this.addBatch(batch);
    } catch (error) {
      // The batches added so far go back to the caller, not to a table nobody holds.
      this.detachBatches();
      throw error;
    }
  }

  static async fromArrowIPC(bytes, settings) {
    const {device = null, columns, float64, int64, onBatch} = options(settings, 'fromArrowIPC', ['device', 'columns', 'float64', 'int64', 'onBatch']);
    const target = device === null ? null : resolveDevice(device);
    if (onBatch !== undefined && typeof onBatch !== 'function') fail('INVALID_ARGUMENT', 'onBatch must be a function');
    if (isByteStream(bytes)) return GPUTable._readStream(bytes, {columns, float64, int64}, target, onBatch);
    const table = GPUTable._read(bytes, {columns, float64, int64}, target);
    try {
      await putOnDevice(table.batches, target);
    } catch (error) {
      table.destroy();
      throw error;
    }
    return table;
  }

  static fromArrowIPCSync(bytes, settings) {
    const {device = null, columns, float64, int64} = options(settings, 'fromArrowIPCSync', ['device', 'columns', 'float64', 'int64']);
    const target = device === null ? null : resolveDevice(device);
    if (onGpu(target)) fail('INVALID_ARGUMENT', `a table on a ${target.type} device loads with await GPUTable.fromArrowIPC()`);
    return GPUTable._read(bytes, {columns, float64, int64}, target);
  }

  static _read(bytes, read, device) {
    const model = guard(() => wasm.readIpc(bytesOf(bytes), read, device?.id));
    return new GPUTable({[MODEL]: model, device});
  }

  static async _readStream(source, read, device, onBatch) {
    const reader = guard(() => new wasm.IpcStreamReader(read, device?.id));
    const table = new GPUTable({device});
    const add = async read => {
      const {batches} = read;
      const pending = Array.from(batches, model => viewOf(GPURecordBatch, model));
      try {
        while (pending.length) {
          const batch = pending[0];
          await putOnDevice([batch], device);
          // Shifted only once the table holds it: a failing add leaves it to free below.
          table.addBatch(batch);
          pending.shift();
          if (onBatch) await onBatch(batch, table);
        }
      } finally {
        // A failure leaves the batches not yet in the table to free here.
        for (const batch of pending) batch.destroy();
      }
      return read;
    };
    try {
      for await (const chunk of byteChunks(source)) await add(guard(() => reader.push(bytesOf(chunk))));
      // A file with its schema only in its footer arrives whole, at the end.
      const {fields, metadata} = await add(guard(() => reader.finish()));
      guard(() => table._m.adoptFields(fields, metadata));
      return table;
    } catch (error) {
      table.destroy();
      throw error;
    } finally {
      reader.free();
    }
  }

  get schema() {
    guard(() => this._m.check());
    return cachedSchema(this);
  }
  get destroyed() {
    return this._m.destroyed;
  }
  get batches() {
    return Array.from(guard(() => this._m.batches()), b => viewOf(GPURecordBatch, b));
  }
  get numRows() {
    return guard(() => this._m.numRows());
  }
  get numCols() {
    return this.schema.fields.length;
  }

  get gpuVectors() {
    return byName(this.schema.fields.map(f => this.getVector(f.name)));
  }

  getVector(name) {
    return coded(viewOf(GPUVector, guard(() => this._m.column(String(name)))), this.schema);
  }

  get bufferLayout() {
    return this._lastBatch().bufferLayout;
  }
  get attributes() {
    return this._lastBatch().attributes;
  }
  get bindings() {
    return this._lastBatch().bindings;
  }

  toArrowIPC() {
    return finishIpc(guard(() => this._m.ipcWriter()));
  }

  packBatches(settings) {
    const {minBatchSize} = options(settings, 'packBatches', ['minBatchSize']);
    guard(() => this._m.check());
    const device = resolveDevice(this.device);
    if (onGpu(this.device)) return guardAsync(() => device._handle.packBatches(this._m, minBatchSize)).then(() => this);
    guard(() => device._handle.packBatchesSync(this._m, minBatchSize));
    return this;
  }

  detachVector(name) {
    return viewOf(GPUVector, guard(() => this._m.detachVector(String(name))));
  }

  detachBatches(first, last) {
    return Array.from(guard(() => this._m.detachBatches(first, last)), b => viewOf(GPURecordBatch, b));
  }

  addBatch(batch) {
    if (!(batch instanceof GPURecordBatch)) fail('INVALID_ARGUMENT', 'addBatch needs a GPURecordBatch');
    guard(() => this._m.addBatch(batch._m));
    return this;
  }

  select(...names) {
    if (names.some(n => typeof n !== 'string')) fail('INVALID_ARGUMENT', 'select takes column names');
    return new GPUTable({[MODEL]: guard(() => this._m.select(names)), device: this.device});
  }

  resetLastBatch() {
    guard(() => this._m.resetLastBatch());
  }

  destroy() {
    this._m.destroy();
  }

  _lastBatch() {
    return viewOf(GPURecordBatch, guard(() => this._m.lastBatch()));
  }

  // Table verbs (api.md "Tables"): each evaluates on this table's device and resolves to a
  // new table there; this one is left as it was.
  derive(columns) {
    return settled(() => {
      if (columns === null || typeof columns !== 'object' || Array.isArray(columns)) {
        fail('INVALID_ARGUMENT', 'derive takes an object of {name: t => evaluator}');
      }
      const t = this._columns();
      const out = {...t};
      const made = [];
      for (const [name, make] of Object.entries(columns)) {
        if (typeof make !== 'function') fail('INVALID_ARGUMENT', `derive's '${name}' must be a function of the columns`);
        let during;
        [out[name], during] = withMade(() => make(t));
        made.push(...during);
      }
      // Every column has this table's rows: a constant or one row is repeated for each. The
      // columns the functions made let go of their outputs once the table holds them (read
      // again, they are recomputed): the table's destroy frees them, not the collector.
      const release = () => {
        for (const evaluator of made) {
          if (!evaluator._borrowed && !evaluator._discarded) evaluator._handle.releaseOutput();
        }
      };
      return this._resolve(out, [], undefined, true).finally(release);
    });
  }

  filter(predicate) {
    return settled(() => {
      if (typeof predicate !== 'function') fail('INVALID_ARGUMENT', 'filter takes a function of the columns giving a mask');
      const t = this._columns();
      const mask = predicate(t);
      return this._resolveEach(t, column => filter(column, mask));
    });
  }

  orderBy(names, settings) {
    return settled(() => {
      const {descending, nulls} = options(settings, 'orderBy', ['descending', 'nulls']);
      const t = this._columns();
      const keys = (Array.isArray(names) ? names : [names]).map(name => this._column(t, name));
      const order = argsort(keys, {descending, nulls});
      return this._resolveEach(t, column => gather(order, column), [order]);
    });
  }

  topK(name, k, settings) {
    return settled(() => {
      const {descending} = options(settings, 'topK', ['descending']);
      const t = this._columns();
      const {values, indices} = topK(this._column(t, name), k, {descending});
      return this._resolveEach(t, column => gather(indices, column), [values, indices]);
    });
  }

  // `groupBy(names).rollup({name: [op, columnName] | 'count'})`: one row per group, the key
  // columns first.
  groupBy(names) {
    const keys = Array.isArray(names) ? names : [names];
    return {
      rollup: aggregates => settled(() => {
        if (keys.length === 0 || keys.some(n => typeof n !== 'string')) fail('INVALID_ARGUMENT', 'groupBy takes a column name or an array of them');
        if (aggregates === null || typeof aggregates !== 'object' || Array.isArray(aggregates)) {
          fail('INVALID_ARGUMENT', "rollup takes an object of {name: [op, columnName] | 'count'}");
        }
        const t = this._columns();
        const specs = {};
        for (const [name, spec] of Object.entries(aggregates)) {
          if (keys.includes(name)) fail('INVALID_ARGUMENT', `rollup's '${name}' is a key column's name`);
          if (spec === 'count') specs[name] = spec;
          else if (Array.isArray(spec) && spec.length === 2 && typeof spec[1] === 'string') specs[name] = [spec[0], this._column(t, spec[1])];
          else fail('INVALID_ARGUMENT', `rollup's '${name}' is 'count' or [op, columnName]`);
        }
        const grouped = groupBy(keys.map(name => this._column(t, name)), specs);
        const columns = Object.fromEntries(keys.map((name, k) => [name, grouped.keys[k]]));
        for (const name of Object.keys(specs)) columns[name] = grouped[name];
        // `min` and `max` keep their column's values, so its field (a Timestamp stays one);
        // other aggregates are fields of their own, whatever this table's columns are named.
        const keepsValues = spec => Array.isArray(spec) && (spec[0] === 'min' || spec[0] === 'max');
        const fields = Object.entries(aggregates).map(([name, spec]) => (keepsValues(spec)
          ? {...this.schema.field(spec[1]), name}
          : {name, type: columns[name].type, size: columns[name].size}));
        return this._resolve(columns, Object.values(columns), fieldsOf(fields.map(f => new GPUField(f))));
      }),
    };
  }

  // `join(other, {on, how = 'inner', suffix = '_right'})`: this table's columns, then
  // `other`'s (its key dropped where the names match; clashing names take `suffix`), one
  // row per pair of rows with equal keys (api.md "Tables").
  join(other, settings) {
    return settled(() => {
      if (!(other instanceof GPUTable)) fail('INVALID_ARGUMENT', 'join takes another GPUTable');
      const {on, how = 'inner', suffix = '_right'} = options(settings, 'join', ['on', 'how', 'suffix']);
      const [leftName, rightName] = Array.isArray(on) && on.length === 2 ? on : [on, on];
      if (typeof leftName !== 'string' || typeof rightName !== 'string') {
        fail('INVALID_ARGUMENT', 'join takes {on: name | [leftName, rightName]}');
      }
      if (typeof how !== 'string') fail('INVALID_ARGUMENT', "join's how is 'inner' or 'left'");
      if (typeof suffix !== 'string') fail('INVALID_ARGUMENT', "join's suffix is a string");
      const t = this._columns();
      const u = other._columns();
      const keys = joinKeys(this._column(t, leftName), other._column(u, rightName));
      // Keys joinKeys made (codes mapped by their dictionaries' values) are this join's own.
      const discardKeys = () => keys.forEach(key => key instanceof GPUTableEvaluator && key._discard());
      const names = {};
      let whole;
      try {
        for (const name of Object.keys(u)) {
          if (name === rightName && leftName === rightName) continue;
          names[name] = Object.hasOwn(t, name) ? name + suffix : name;
          if (Object.hasOwn(t, names[name])) fail('INVALID_ARGUMENT', `join's suffix makes '${names[name]}', a name already taken`);
        }
        // Built here, so the engine's checks of its arguments reject it before anything runs.
        whole = this._joinPart(other, t, u, names, keys, how, false);
      } catch (error) {
        discardKeys();
        throw error;
      }
      return whole().catch(error => {
        // Under allowedMem, a join whose pairs or columns do not fit at once is made a range
        // of this table's rows at a time (halved until each fits), its rows kept on the host
        // as any output too large for the budget.
        const rows = this.numRows;
        if (error?.code !== 'LIMIT_EXCEEDED' || resolveDevice(this.device).allowedMem === undefined || rows < 2) throw error;
        return this._joinedInRanges(other, t, u, names, keys, how, rows);
      }).finally(discardKeys);
    });
  }

  async _joinedInRanges(other, t, u, names, keys, how, rows) {
    const parts = [];
    const joinRows = async (start, end) => {
      const middle = start + Math.floor((end - start) / 2);
      for (const [s, e] of [[start, middle], [middle, end]]) {
        const sliced = Object.fromEntries(Object.entries(t).map(([name, column]) => [name, slice(column, s, e)]));
        const key = slice(keys[0], s, e);
        const made = [key, ...Object.values(sliced)];
        try {
          parts.push(await this._joinPart(other, sliced, u, names, [key, keys[1]], how, true, made)());
        } catch (error) {
          // A range of one row that does not fit is the join's error.
          if (error?.code !== 'LIMIT_EXCEEDED' || e - s < 2) throw error;
          await joinRows(s, e);
        }
      }
    };
    try {
      await joinRows(0, rows);
      // One table of the ranges' batches that have rows (one batch at least).
      const [joined, ...rest] = parts;
      const batches = parts.flatMap(part => part.detachBatches());
      for (const part of rest) part.destroy();
      const withRows = batches.filter(batch => batch.numRows > 0);
      const kept = new Set(withRows.length ? withRows : batches.slice(0, 1));
      for (const batch of batches) {
        if (kept.has(batch)) joined.addBatch(batch);
        else batch.destroy();
      }
      return joined;
    } catch (error) {
      for (const part of parts) part.destroy();
      throw error;
    }
  }

  // The join of the left columns `t` and `other`'s `u` by `keys`, built now and made by the
  // function returned; `made` (evaluators of this part) are destroyed after.
  _joinPart(other, t, u, names, keys, how, onHost, made = []) {
    const pairsOf = capacity => {
      const out = guard(() => wasm.join(handleOf(keys[0]), handleOf(keys[1]), how, capacity, true, true));
      const evaluators = out.slice(0, 3).map(handle => new GPUTableEvaluator(handle));
      made.push(...evaluators);
      return [...evaluators, out[3], out[4]];
    };
    let first;
    try {
      first = pairsOf(undefined);
    } catch (error) {
      for (const evaluator of made) evaluator._discard();
      throw error;
    }
    return () => this._joined(other, t, u, names, first, pairsOf, made, onHost);
  }

  async _joined(other, t, u, names, [left, right, pairs, fits, capacity], pairsOf, made, onHost) {
    try {
      if (!fits) {
        // The pairs could need more rows than the keys' rows together (every join where
        // one side's keys are distinct fits them): the pairs and their number in one
        // evaluation, made again with that number only where it is more. Under allowedMem
        // only their number: the pairs are made again with the columns, where the budget
        // counts them (held here from an evaluation before, it would not).
        const device = resolveDevice(this.device);
        const bounded = device.allowedMem !== undefined;
        await evaluateTogether(device, bounded ? [pairs] : [left, right, pairs]);
        const rows = (await pairs.readValue())[0];
        if (rows > capacity) [left, right] = pairsOf(rows);
      }
      const columns = {};
      for (const [name, column] of Object.entries(t)) columns[name] = gather(left, column);
      for (const [name, target] of Object.entries(names)) columns[target] = gather(right, u[name]);
      // The right columns keep their fields' metadata (a Bool column writes back as Bool).
      const rightFields = Object.entries(names).map(([name, target]) => ({...other.schema.field(name), name: target}));
      return await this._resolve(columns, Object.values(columns), fieldsOf(rightFields.map(f => new GPUField(f))), false, onHost);
    } finally {
      for (const evaluator of made) evaluator._discard();
    }
  }

  // The columns by name, as the verbs pass them.
  _columns() {
    guard(() => this._m.check());
    return Object.fromEntries(this.schema.names.map(name => [name, this.getVector(name)]));
  }

  _column(t, name) {
    if (typeof name !== 'string' || !Object.hasOwn(t, name)) fail('INVALID_ARGUMENT', `no column '${String(name)}' in this table`);
    return t[name];
  }

  // A table of `make(column)` for every column; the evaluators made here are destroyed after.
  _resolveEach(t, make, made = []) {
    const columns = Object.fromEntries(Object.entries(t).map(([name, column]) => [name, make(column)]));
    return this._resolve(columns, [...made, ...Object.values(columns)]);
  }

  // The table of `columns` ({name: evaluator or vector}) computed on this table's device;
  // a column named as one of `alsoLike`'s fields, else of this table's, keeps its metadata. With
  // `likeRows`, every column has this table's rows; with `onHost`, counted columns' rows stay
  // on the host.
  async _resolve(columns, made, alsoLike = undefined, likeRows = false, onHost = false) {
    try {
      const device = resolveDevice(this.device);
      const names = Object.keys(columns);
      const handles = names.map(name => handleOf(columns[name]));
      const dictionaries = names.map(name => dictionarySource(dictionaryOf(columns[name])));
      const model = await withHandlesAsync(handles, list => device._handle.tableOfColumns(names, list, this._m, dictionaries, alsoLike, likeRows ? 'likeRows' : onHost ? 'onHost' : ''));
      return new GPUTable({[MODEL]: model, device: this.device});
    } finally {
      for (const evaluator of made) if (evaluator instanceof GPUTableEvaluator) evaluator._discard();
    }
  }
}

// A table's or batch's vector with its field's dictionary, if it has one.
function coded(vector, schema) {
  vector._dictionary = schema.field(vector.name)?.dictionary ?? null;
  return vector;
}

// `vectors` with each also under its name (non-enumerable: the array stays an array).
function byName(vectors) {
  const out = [...vectors];
  for (const v of vectors) {
    if (v.name && !(v.name in out)) Object.defineProperty(out, v.name, {value: v, enumerable: false});
  }
  return out;
}
