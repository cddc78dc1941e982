// Vectors and their storage (reference: gpu-table-structure.txt): a GPUVector is one logical
// column over GPUData chunks; a chunk owns or borrows a DynamicBuffer, the only owner of
// storage. Storage is a wasm value that lives where it was computed or loaded.
import * as wasm from './wasm/gputable.js';
import {fail, guard, guardAsync} from './errors.js';
import {TYPED_ARRAYS, checkSize, checkType, formatOf, liveView, options} from './types.js';
import {trackStorage} from './devices.js';

/**
 * A stable handle to one column chunk's storage. The backing is replaced when it grows
 * (`generation` counts replacements); `destroy()` frees it (on a GPU device, at once).
 */
export class DynamicBuffer {
  /**
   * @internal `handle`: a wasm value (with `chunk`/`rowOffset`: one chunk of a chunked
   * output); `host`: an appendable typed array (capacity rows).
   */
  constructor({handle = null, chunk = 0, rowOffset = 0, host = null, type, size, length, tracked = true, device = null}) {
    this._handle = handle;
    this._chunk = chunk;
    this._rowOffset = rowOffset;
    this.device = device;
    this._host = host;
    this.type = type;
    this.size = size;
    this.length = length;
    this.generation = 0;
    this.destroyed = false;
    this._tracked = tracked;
    if (tracked) trackStorage(this, true);
  }
  /** Rows the current backing holds without growing. */
  get capacity() {
    return this._host ? this._host.length / this.size : this.length;
  }
  get byteLength() {
    return this.capacity * this.size * TYPED_ARRAYS[this.type].BYTES_PER_ELEMENT;
  }
  /**
   * On a WebGPU device, the `GPUBuffer` holding these rows (usable as a vertex or storage
   * buffer on `device.gpuDevice`): 32-bit values, rows packed; it may be longer than them.
   */
  get gpuBuffer() {
    if (this.destroyed || this.device?.type !== 'webgpu') return undefined;
    return this._whole().gpuBufferOn(this.device.id, this._chunk);
  }
  /**
   * @internal The wasm handle of these rows (made on demand for appendable storage; a view
   * of its chunk for a chunk of a chunked output).
   */
  handle() {
    const whole = this._whole();
    if (whole.chunks.length === 1) return whole;
    this._view ??= guard(() => wasm.slice(whole, this._rowOffset, this._rowOffset + this.length));
    return this._view;
  }
  /** @internal Rows `from..to` of these rows, read from their device. */
  readRows(from, to) {
    return this._whole().readValue(this._rowOffset + from, this._rowOffset + to);
  }
  /** @internal `readRows` for rows in host memory. */
  readRowsSync(from, to) {
    return this._whole().readValueSync(this._rowOffset + from, this._rowOffset + to);
  }
  /** The wasm handle holding these rows (all chunks of a chunked output). */
  _whole() {
    if (this.destroyed) fail('DESTROYED', 'this buffer was destroyed');
    if (!this._handle && this._host) {
      const rows = this._host.subarray(0, this.length * this.size);
      this._handle = guard(() => wasm.Evaluator.fromTyped(rows, {type: this.type, size: this.size, constant: false}));
    }
    return this._handle;
  }
  /** @internal Appends packed rows, doubling the capacity when full. */
  append(values) {
    if (this.destroyed) fail('DESTROYED', 'this buffer was destroyed');
    if (!this._host) fail('INVALID_ARGUMENT', 'only appendable vectors grow');
    const Typed = TYPED_ARRAYS[this.type];
    const rows = Array.isArray(values) ? Typed.from(values) : liveView(values, 'append');
    if (rows.length % this.size !== 0) fail('INVALID_ARGUMENT', `${rows.length} values are not whole rows of size ${this.size}`);
    const needed = (this.length * this.size) + rows.length;
    if (needed > this._host.length) {
      let capacity = Math.max(this._host.length, this.size);
      while (capacity < needed) capacity *= 2;
      const grown = allocate(Typed, capacity);
      grown.set(this._host.subarray(0, this.length * this.size));
      this._host = grown;
      this.generation++;
    }
    this._host.set(rows, this.length * this.size);
    this.length += rows.length / this.size;
    this._dropHandle();
  }
  /** @internal Forgets the rows in use; keeps the capacity. */
  reset() {
    if (this.destroyed) fail('DESTROYED', 'this buffer was destroyed');
    this.length = 0;
    this._dropHandle();
  }
  _dropHandle() {
    if (this._handle && this._host) this._handle.destroy();
    if (this._host) this._handle = null;
  }
  destroy() {
    if (this.destroyed) return;
    this._view?.destroy();
    if (this._handle) this._handle.destroy();
    this._handle = null;
    this._host = null;
    this.destroyed = true;
    if (this._tracked) trackStorage(this, false);
  }
}

/** A typed array of `length` values, or OUT_OF_MEMORY where the engine cannot make one. */
function allocate(Typed, length) {
  try {
    return new Typed(length);
  } catch (error) {
    return fail('OUT_OF_MEMORY', `could not allocate ${length} values: ${error.message}`);
  }
}

/** One chunk of a vector: a buffer (owned or borrowed) plus its row layout. */
export class GPUData {
  constructor({buffer, type, valueLength, ownsBuffer}) {
    this.buffer = buffer;
    this.type = type;
    this.valueLength = valueLength;
    this.byteOffset = 0;
    this.byteStride = valueLength * TYPED_ARRAYS[type].BYTES_PER_ELEMENT;
    this.rowByteLength = this.byteStride;
    this.ownsBuffer = ownsBuffer;
    this.destroyed = false;
  }
  get format() {
    return formatOf(this.type, this.valueLength);
  }
  get length() {
    return this.buffer.length;
  }
  /** Frees the buffer if this chunk owns it; a borrowed buffer is left alone. */
  destroy() {
    if (this.ownsBuffer && !this.destroyed) this.buffer.destroy();
    this.destroyed = true;
  }
}

/** Packed rows `startRow..endRow` over chunks: each chunk's part, then one array of them. */
function concatParts(Typed, parts) {
  if (parts.length === 1) return parts[0];
  const out = allocate(Typed, parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * One logical column over one or more `GPUData` chunks (one per record batch). A vector
 * owns or borrows its chunks as they say; `destroy()` frees only what they own.
 */
export class GPUVector {
  constructor({name = '', type, size, data = [], validity = null, evaluator = null, device = null}) {
    this.name = name;
    this.type = type;
    this.size = size;
    this.valueLength = size;
    this.stride = size;
    this.byteStride = size * TYPED_ARRAYS[type].BYTES_PER_ELEMENT;
    this.data = data;
    /** Per-row validity (uint8: 1 valid, 0 null), chunked like `data`, or null. */
    this.validity = validity;
    this.destroyed = false;
    this._evaluator = evaluator;
    this._device = device;
  }
  get format() {
    return formatOf(this.type, this.size);
  }
  get length() {
    return this.data.reduce((rows, d) => rows + d.length, 0);
  }
  /** Row counts of the chunks, in order. */
  get chunks() {
    return this.data.map(d => d.length);
  }
  /** The device the vector's storage lives on (null: host memory of no device). */
  get device() {
    return this._device ?? this.data[0]?.buffer.device ?? null;
  }

  /** An empty vector that grows by `append` (capacity doubles as needed). */
  static appendable(settings) {
    const {name = '', type = 'float32', size = 1, capacity = 1024} = options(settings, 'appendable');
    checkType(type);
    checkSize(size);
    if (!Number.isInteger(capacity) || capacity < 0) fail('INVALID_ARGUMENT', `capacity must be a non-negative integer, got ${capacity}`);
    const host = allocate(TYPED_ARRAYS[type], Math.max(1, capacity) * size);
    const buffer = new DynamicBuffer({host, type, size, length: 0});
    return new GPUVector({name, type, size, data: [new GPUData({buffer, type, valueLength: size, ownsBuffer: true})]});
  }

  /** Appends packed rows to the last chunk (appendable vectors only). */
  append(values) {
    this._check();
    this.data[this.data.length - 1].buffer.append(values);
    return this;
  }

  /** Clears the last chunk's rows and keeps its capacity for reuse. */
  resetLastBatch() {
    this._check();
    this.data[this.data.length - 1].buffer.reset();
  }

  /** Rows `startRow..endRow` of all chunks as one typed array, read from their device. */
  async readValue(startRow = 0, endRow = this.length) {
    this._check();
    const parts = [];
    for (const [buffer, from, to] of this._ranges(startRow, endRow)) {
      parts.push(await guardAsync(() => buffer.readRows(from, to)));
    }
    return concatParts(TYPED_ARRAYS[this.type], parts.length ? parts : [new TYPED_ARRAYS[this.type](0)]);
  }

  /** `readValue` for storage in host memory (CPU devices), without waiting. */
  readValueSync(startRow = 0, endRow = this.length) {
    this._check();
    const parts = this._ranges(startRow, endRow).map(([buffer, from, to]) => guard(() => buffer.readRowsSync(from, to)));
    return concatParts(TYPED_ARRAYS[this.type], parts.length ? parts : [new TYPED_ARRAYS[this.type](0)]);
  }

  /** The chunks' buffers with their row ranges inside `startRow..endRow`. */
  _ranges(startRow, endRow) {
    for (const row of [startRow, endRow]) {
      if (typeof row !== 'number' || Number.isNaN(row)) fail('INVALID_ARGUMENT', `row bounds must be numbers, got ${row}`);
    }
    const ranges = [];
    let first = 0;
    for (const chunk of this.data) {
      const [from, to] = [Math.max(startRow - first, 0), Math.min(endRow - first, chunk.length)];
      if (from < to) ranges.push([chunk.buffer, from, to]);
      first += chunk.length;
    }
    return ranges;
  }

  /** Frees the chunks (and validity) this vector owns; later use is `DESTROYED`. */
  destroy() {
    if (this.destroyed) return;
    for (const chunk of this.data) chunk.destroy();
    this.validity?.destroy();
    this.destroyed = true;
  }

  _check() {
    if (this.destroyed) fail('DESTROYED', `vector '${this.name}' was destroyed or detached`);
  }
}
