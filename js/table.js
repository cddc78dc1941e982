// The GPU table model (reference: gpu-table-structure.txt): GPUTable owns GPURecordBatches,
// a batch owns its batch-local GPUVectors, a vector owns or borrows GPUData chunks, and only
// GPUData owns storage (a DynamicBuffer). Arrow IPC in and out goes through the wasm module.
// A table on a GPU device keeps its storage there only.
import * as wasm from './wasm/gputable.js';
import {fail, guard, guardAsync} from './errors.js';
import {formatOf, options} from './types.js';
import {resolveDevice, withHandles} from './devices.js';
import {DynamicBuffer, GPUData, GPUVector} from './vectors.js';
import {writeIpc} from './ipc.js';

/** A column of a schema: name, element type and values per row (`format` like `float32x3`). */
export class GPUField {
  constructor({name, type, size = 1, nullable = false, metadata = {}}) {
    this.name = name;
    this.type = type;
    this.size = size;
    this.format = formatOf(type, size);
    this.nullable = nullable;
    this.metadata = metadata;
  }
}

/** The selected columns of a table or batch, as plain metadata. */
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

/**
 * Rendering descriptions of single-chunk vectors: a WebGPU-style buffer layout per column
 * (one buffer per column, `format` null where no vertex format fits), attributes and
 * bindings pointing at each column's buffer. On a WebGPU device the column's resident
 * `gpuBuffer` (on `device.gpuDevice`) is included; there every value is 32 bits, so
 * `gpuFormat` and `gpuByteStride` describe that layout.
 */
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

/** One preserved batch: a row range of every selected column, one chunk per vector. */
export class GPURecordBatch {
  /** `vectors`: single-chunk vectors of equal length; the batch takes ownership. */
  constructor(vectors, schema = null) {
    if (!Array.isArray(vectors) || vectors.some(v => !(v instanceof GPUVector) || v.data.length !== 1)) {
      fail('INVALID_ARGUMENT', 'a GPURecordBatch needs single-chunk GPUVectors');
    }
    const lengths = new Set(vectors.map(v => v.length));
    if (lengths.size > 1) fail('INVALID_ARGUMENT', `the vectors of a batch need equal lengths, got ${[...lengths].join(', ')}`);
    this._vectors = vectors;
    this.schema = schema ?? new GPUSchema(vectors.map(v => new GPUField({name: v.name, type: v.type, size: v.size, nullable: v.validity !== null})));
    this.destroyed = false;
  }
  /** The batch's vectors in column order, also reachable by name (`gpuVectors.x`). */
  get gpuVectors() {
    this._check();
    return byName(this._vectors);
  }
  get numRows() {
    this._check();
    return this._vectors[0]?.length ?? 0;
  }
  get numCols() {
    return this._vectors.length;
  }
  getVector(name) {
    this._check();
    return this._vectors.find(v => v.name === name) ?? fail('INVALID_ARGUMENT', `no column '${name}'`);
  }
  get bufferLayout() {
    this._check();
    return describeVectors(this._vectors).bufferLayout;
  }
  get attributes() {
    this._check();
    return describeVectors(this._vectors).attributes;
  }
  get bindings() {
    this._check();
    return describeVectors(this._vectors).bindings;
  }
  /** Destroys the batch-local vectors (and the storage they own). */
  destroy() {
    if (this.destroyed) return;
    for (const vector of this._vectors) vector.destroy();
    this.destroyed = true;
  }
  _check() {
    if (this.destroyed) fail('DESTROYED', 'this record batch was destroyed or detached');
  }
}

function sameSchema(a, b) {
  return a.fields.length === b.fields.length &&
    a.fields.every((f, i) => f.name === b.fields[i].name && f.type === b.fields[i].type && f.size === b.fields[i].size);
}

/** A vector of one owned chunk over the wasm value `handle`, on `device`. */
function ownedVector(name, type, size, handle, length, validity = null, device = null) {
  const buffer = new DynamicBuffer({handle, type, size, length, device});
  return new GPUVector({name, type, size, data: [new GPUData({buffer, type, valueLength: size, ownsBuffer: true})], validity});
}

/** Every chunk's wasm handle of a batch (data and validity). */
function handlesOf(batch) {
  return batch._vectors.flatMap(v => [...v.data, ...(v.validity?.data ?? [])]).map(d => d.buffer.handle());
}

/** Puts every chunk of `batches` on a GPU `device`, keeping no other copy. */
async function putOnDevice(batches, device) {
  if (!device || device.type === 'cpu') return;
  for (const batch of batches) {
    for (const handle of handlesOf(batch)) await guardAsync(() => device._handle.putHere(handle, true));
  }
}

/** Whether a table's storage lives on a GPU device (reads and writes wait for it). */
function onGpu(device) {
  return device !== null && device.type !== 'cpu';
}

/** The GPUSchema of a wasm read's fields. */
function schemaOf(fields) {
  return new GPUSchema(fields.map(f => new GPUField({
    name: f.name, type: f.type, size: f.size, nullable: f.nullable,
    metadata: {arrowType: f.arrowType, kind: f.kind}
  })));
}

/** A GPURecordBatch owning one wasm read batch's columns (`{data, validity?}` each). */
function batchOf(columns, schema, device) {
  return new GPURecordBatch(columns.map(({data, validity}, i) => {
    const f = schema.fields[i];
    const valid = validity ? ownedVector(`${f.name}.validity`, 'uint8', validity.size, validity, validity.length, null, device) : null;
    return ownedVector(f.name, f.type, f.size, data, data.length, valid, device);
  }), schema);
}

/** Whether `source` hands out bytes a piece at a time (a ReadableStream, an async iterable). */
function isByteStream(source) {
  return source !== null && typeof source === 'object' && !ArrayBuffer.isView(source) && !(source instanceof ArrayBuffer) &&
    (typeof source.getReader === 'function' || typeof source[Symbol.asyncIterator] === 'function');
}

/** The pieces of a ReadableStream or an async iterable of bytes. */
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

/**
 * A table on a device: a schema and preserved record batches. The table owns its batches
 * until they are detached; `destroy()` frees what it owns.
 */
export class GPUTable {
  constructor({schema = null, batches = [], device = null, owns = true} = {}) {
    this.schema = schema ?? new GPUSchema([]);
    this.batches = batches;
    this.device = device;
    this.destroyed = false;
    this._owns = owns;
  }

  /**
   * Reads an Arrow IPC stream or file: one GPURecordBatch per source batch, each column one
   * GPUData, on `device` (a GPU device keeps the columns there only). `bytes` may also be a
   * ReadableStream or async iterable of byte pieces (`(await fetch(url)).body`): batches are
   * decoded as they arrive and handed to `onBatch(batch, table)`. Options: `columns` (names
   * to keep, in order), `float64: 'words' | 'float32'`, `int64: 'float32' | 'int32'` (Int64
   * columns are TYPE_MISMATCH without it), `onBatch`.
   */
  static async fromArrowIPC(bytes, settings) {
    const {device = null, columns, float64, int64, onBatch} = options(settings, 'fromArrowIPC');
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

  /** `fromArrowIPC` for the CPU (tables on a GPU device load with `await fromArrowIPC`). */
  static fromArrowIPCSync(bytes, settings) {
    const {device = null, columns, float64, int64} = options(settings, 'fromArrowIPCSync');
    const target = device === null ? null : resolveDevice(device);
    if (onGpu(target)) fail('INVALID_ARGUMENT', `a table on a ${target.type} device loads with await GPUTable.fromArrowIPC()`);
    return GPUTable._read(bytes, {columns, float64, int64}, target);
  }

  static _read(bytes, read, device) {
    const view = bytesOf(bytes);
    const result = guard(() => wasm.readIpc(view, read));
    const schema = schemaOf(result.fields);
    const table = new GPUTable({schema, batches: [], device});
    for (const columns of result.batches) table.addBatch(batchOf(columns, schema, device));
    return table;
  }

  /**
   * Reads IPC bytes as they arrive: each record batch is decoded (and moved to `device`) as
   * soon as its message is whole, and handed to `onBatch(batch, table)` if given.
   */
  static async _readStream(source, read, device, onBatch) {
    const reader = guard(() => new wasm.IpcStreamReader(read));
    const table = new GPUTable({device});
    const add = async ({fields, batches}) => {
      const schema = schemaOf(fields);
      for (const columns of batches) {
        const batch = batchOf(columns, schema, device);
        try {
          await putOnDevice([batch], device);
        } catch (error) {
          batch.destroy();
          throw error;
        }
        table.addBatch(batch);
        if (onBatch) await onBatch(batch, table);
      }
      return schema;
    };
    try {
      for await (const chunk of byteChunks(source)) await add(guard(() => reader.push(bytesOf(chunk))));
      // A file with its schema only in its footer arrives whole, at the end.
      const schema = await add(guard(() => reader.finish()));
      if (table.batches.length === 0) table.schema = schema;
      return table;
    } catch (error) {
      table.destroy();
      throw error;
    } finally {
      reader.free();
    }
  }

  get numRows() {
    this._check();
    return this.batches.reduce((rows, b) => rows + b.numRows, 0);
  }
  get numCols() {
    this._check();
    return this.schema.fields.length;
  }

  /** Table-level vectors: per column, the batches' chunks (borrowed) as one logical vector. */
  get gpuVectors() {
    this._check();
    return byName(this.schema.fields.map(f => this.getVector(f.name)));
  }

  getVector(name) {
    this._check();
    const field = this.schema.field(name) ?? fail('INVALID_ARGUMENT', `no column '${name}' in this table`);
    const parts = this.batches.map(b => b.getVector(name));
    const borrow = chunk => new GPUData({buffer: chunk.buffer, type: chunk.type, valueLength: chunk.valueLength, ownsBuffer: false});
    const validity = parts.length > 0 && parts.every(p => p.validity)
      ? new GPUVector({name: `${name}.validity`, type: 'uint8', size: parts[0].validity.size, data: parts.map(p => borrow(p.validity.data[0]))})
      : null;
    return new GPUVector({name, type: field.type, size: field.size, data: parts.map(p => borrow(p.data[0])), validity, device: this.device});
  }

  /** The last batch's descriptions: bind one batch at a time for rendering. */
  get bufferLayout() {
    return this._lastBatch().bufferLayout;
  }
  get attributes() {
    return this._lastBatch().attributes;
  }
  get bindings() {
    return this._lastBatch().bindings;
  }

  /**
   * An Arrow IPC stream of the table, one record batch per batch, nulls restored: the bytes,
   * or a promise of them for a table on a GPU device.
   */
  toArrowIPC() {
    this._check();
    return writeIpc(this.schema.fields.map(field => {
      const vectors = this.batches.map(b => b.getVector(field.name));
      // Validity is in every batch of a column or in none (see addBatch).
      const validity = vectors.filter(v => v.validity).map(v => v.validity.data[0].buffer.handle());
      return [field.name, field.metadata.kind ?? 'plain', vectors.map(v => v.data[0].buffer.handle()), validity];
    }));
  }

  /**
   * Repacks consecutive batches into batches of at least `minBatchSize` rows (all into one by
   * default), joined on the table's device (nothing is read back), and destroys the
   * superseded storage the table owned. Returns the table, or a promise of it for a table on
   * a GPU device.
   */
  packBatches(settings) {
    this._check();
    const {minBatchSize = Infinity} = options(settings, 'packBatches');
    if (typeof minBatchSize !== 'number' || !(minBatchSize >= 0)) fail('INVALID_ARGUMENT', 'minBatchSize must be a number of rows');
    const groups = [];
    let group = [];
    let rows = 0;
    for (const batch of this.batches) {
      group.push(batch);
      rows += batch.numRows;
      if (rows >= minBatchSize) {
        groups.push(group);
        group = [];
        rows = 0;
      }
    }
    if (group.length) groups.push(group);
    // No batches: nothing to join (a column of no parts has no concat).
    if (groups.length === 0) return onGpu(this.device) ? Promise.resolve(this) : this;
    const sizes = groups.map(g => g.length);
    const device = resolveDevice(this.device);
    // Per column, the packed data (and validity) of every group, as wasm evaluators.
    const pack = handles => withHandles(handles, list => onGpu(this.device)
      ? guardAsync(() => device._handle.packColumn(list, sizes))
      : guard(() => device._handle.packColumnSync(list, sizes)));
    const columns = this.schema.fields.map((field, i) => {
      const vectors = this.batches.map(b => b._vectors[i]);
      const validity = vectors.every(v => v.validity) ? pack(vectors.map(v => v.validity.data[0].buffer.handle())) : null;
      return {data: pack(vectors.map(v => v.data[0].buffer.handle())), validity};
    });
    const finish = packed => {
      this._repack(groups.map((g, k) => (g.length === 1 ? g[0] : this._batchOf(packed, k))));
      for (const {data, validity} of packed) {
        groups.forEach((g, k) => {
          if (g.length === 1) {
            data[k].free();
            validity?.[k].free();
          }
        });
      }
      return this;
    };
    if (!onGpu(this.device)) return finish(columns);
    return (async () => finish(await Promise.all(columns.map(async ({data, validity}) => ({data: await data, validity: await validity})))))();
  }

  /** Keeps `packed` and destroys the superseded batches the table owned. */
  _repack(packed) {
    for (const batch of this.batches) {
      if (!packed.includes(batch) && this._owns) batch.destroy();
    }
    this.batches = packed;
  }

  /** The batch of group `k` of packed columns (`{data, validity}` evaluators per column). */
  _batchOf(packed, k) {
    const vectors = this.schema.fields.map((f, i) => {
      const {data, validity} = packed[i];
      const rows = data[k].length;
      const valid = validity ? ownedVector(`${f.name}.validity`, 'uint8', validity[k].size, validity[k], rows, null, this.device) : null;
      return ownedVector(f.name, f.type, f.size, data[k], rows, valid, this.device);
    });
    return new GPURecordBatch(vectors, this.schema);
  }

  /** Removes column `name` from the table and hands its storage (every batch) to the caller. */
  detachVector(name) {
    this._check();
    const index = this.schema.fields.findIndex(f => f.name === name);
    if (index < 0) fail('INVALID_ARGUMENT', `no column '${name}' in this table`);
    const field = this.schema.fields[index];
    const parts = this.batches.map(b => b._vectors.splice(index, 1)[0]);
    this.schema = new GPUSchema(this.schema.fields.filter((_, i) => i !== index), this.schema.metadata);
    for (const batch of this.batches) batch.schema = this.schema;
    const validity = parts.every(p => p.validity)
      ? new GPUVector({name: `${name}.validity`, type: 'uint8', size: parts[0].validity.size, data: parts.map(p => p.validity.data[0])})
      : null;
    for (const part of parts) part.destroyed = true; // the returned vector owns their chunks now
    return new GPUVector({name, type: field.type, size: field.size, data: parts.map(p => p.data[0]), validity});
  }

  /** Removes batches `first..last` and hands them (and their storage) to the caller. */
  detachBatches(first = 0, last = this.batches.length) {
    this._check();
    return this.batches.splice(first, last - first);
  }

  /**
   * Appends a batch with this table's schema; the table takes ownership. A column with nulls
   * in some batches gets validity in every batch (all valid where a batch had none).
   */
  addBatch(batch) {
    this._check();
    if (!(batch instanceof GPURecordBatch)) fail('INVALID_ARGUMENT', 'addBatch needs a GPURecordBatch');
    batch._check();
    if (this.schema.fields.length === 0 && this.batches.length === 0) this.schema = batch.schema;
    if (!sameSchema(this.schema, batch.schema)) fail('TYPE_MISMATCH', 'the batch schema differs from the table schema');
    this.batches.push(batch);
    this._alignValidity();
    return this;
  }

  /** Gives every batch validity for the columns where any batch has it. */
  _alignValidity() {
    this.schema.fields.forEach((field, i) => {
      const vectors = this.batches.map(b => b._vectors[i]);
      const withValidity = vectors.find(v => v.validity);
      if (!withValidity) return;
      const size = withValidity.validity.size;
      for (const vector of vectors) {
        if (vector.validity) continue;
        const flags = new Uint8Array(vector.length * size).fill(1);
        const handle = guard(() => wasm.Evaluator.fromTyped(flags, {type: 'uint8', size, constant: false}));
        vector.validity = ownedVector(`${field.name}.validity`, 'uint8', size, handle, vector.length, null, vector.data[0].buffer.device);
      }
      this.schema.fields[i] = field.nullable ? field : new GPUField({...field, nullable: true});
    });
  }

  /** A table of some columns, borrowing this table's storage (destroying it frees nothing). */
  select(...names) {
    this._check();
    const fields = names.map(n => this.schema.field(n) ?? fail('INVALID_ARGUMENT', `no column '${n}' in this table`));
    const schema = new GPUSchema(fields, this.schema.metadata);
    const borrowVector = v => new GPUVector({
      name: v.name, type: v.type, size: v.size,
      data: v.data.map(d => new GPUData({buffer: d.buffer, type: d.type, valueLength: d.valueLength, ownsBuffer: false})),
      validity: v.validity ? borrowVector(v.validity) : null
    });
    const batches = this.batches.map(b => new GPURecordBatch(names.map(n => borrowVector(b.getVector(n))), schema));
    return new GPUTable({schema, batches, device: this.device, owns: false});
  }

  /** Clears the last batch's appendable vectors, keeping their capacity. */
  resetLastBatch() {
    for (const vector of this._lastBatch()._vectors) vector.resetLastBatch();
  }

  /** Destroys the batches the table owns (borrowed storage stays); later use is `DESTROYED`. */
  destroy() {
    if (this.destroyed) return;
    for (const batch of this.batches) batch.destroy();
    this.batches = [];
    this.destroyed = true;
  }

  _lastBatch() {
    this._check();
    return this.batches[this.batches.length - 1] ?? fail('EMPTY_INPUT', 'this table has no batches');
  }
  _check() {
    if (this.destroyed) fail('DESTROYED', 'this table was destroyed');
  }
}

/** `vectors` with each also under its name (non-enumerable: the array stays an array). */
function byName(vectors) {
  const out = [...vectors];
  for (const v of vectors) {
    if (v.name && !(v.name in out)) Object.defineProperty(out, v.name, {value: v, enumerable: false});
  }
  return out;
}
