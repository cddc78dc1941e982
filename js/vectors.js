// Typed views of the Rust table model's vectors and storage (reference:
// gpu-table-structure.txt): a GPUVector is one logical column over GPUData chunks; a chunk
// owns or borrows a DynamicBuffer, the only owner of storage. Ownership, appends, reads and
// destroy are the model's; these classes name its objects for JavaScript.
import {wasm} from './bindings.js';
import {fail, guard, guardAsync} from './errors.js';
import {TYPED_ARRAYS, checkSize, checkType, formatOf, isNumberArray, liveView, options} from './types.js';
import {deviceOf} from './devices.js';

// Wraps a model handle for a view's constructor.
export const MODEL = Symbol('gputable model');

// One view per model object (by its id) while the view is reachable: `table.batches[0]`
// and a batch detached later are the same object. A collected view frees its handle.
const views = new Map();
const release = new FinalizationRegistry(({id, handle}) => {
  if (views.get(id)?.deref() === undefined) views.delete(id);
  handle.free();
});

// Records `view` as the view of its model (`view._m`).
export function remember(view) {
  views.set(view._m.id, new WeakRef(view));
  release.register(view, {id: view._m.id, handle: view._m});
  return view;
}

// The view (of class `View`) of model `handle`, made once per model object.
export function viewOf(View, handle) {
  const view = views.get(handle.id)?.deref();
  if (view) {
    handle.free();
    return view;
  }
  return new View({[MODEL]: handle});
}

// The model handle a view constructor was given, or a typed error for user calls.
function modelOf(arg, what) {
  return arg?.[MODEL] ?? fail('INVALID_ARGUMENT', `${what} objects are made by vectors and tables, not constructed`);
}

export class DynamicBuffer {
  // @internal
  constructor(model) {
    this._m = modelOf(model, 'DynamicBuffer');
    remember(this);
  }
  get device() {
    return deviceOf(this._m.deviceId);
  }
  get type() {
    return this._m.type;
  }
  get size() {
    return this._m.size;
  }
  get length() {
    return this._m.length;
  }
  get generation() {
    return this._m.generation;
  }
  get destroyed() {
    return this._m.destroyed;
  }
  get capacity() {
    return this._m.capacity;
  }
  get byteLength() {
    return this._m.byteLength;
  }
  get gpuBuffer() {
    const device = this.device;
    if (device?.type !== 'webgpu' || this.destroyed) return undefined;
    return this._m.gpuBufferOn(device.id);
  }
  destroy() {
    this._m.destroy();
  }
}

export class GPUData {
  // @internal
  constructor(model) {
    this._m = modelOf(model, 'GPUData');
    remember(this);
  }
  get buffer() {
    return viewOf(DynamicBuffer, this._m.buffer());
  }
  get type() {
    return this.buffer.type;
  }
  get valueLength() {
    return this.buffer.size;
  }
  get format() {
    return formatOf(this.type, this.valueLength);
  }
  get byteOffset() {
    return 0;
  }
  get byteStride() {
    return this.valueLength * TYPED_ARRAYS[this.type].BYTES_PER_ELEMENT;
  }
  get rowByteLength() {
    return this.byteStride;
  }
  get ownsBuffer() {
    return this._m.ownsBuffer;
  }
  get destroyed() {
    return this._m.destroyed;
  }
  get length() {
    return this._m.length;
  }
  destroy() {
    this._m.destroy();
  }
}

export class GPUVector {
  // @internal
  constructor(model) {
    this._m = modelOf(model, 'GPUVector');
    // The evaluator whose output this is (`fromVector` gives it back).
    this._evaluator = null;
    // The values of a dictionary column's codes, set by its table or evaluator.
    this._dictionary = null;
    remember(this);
  }
  get name() {
    return this._m.name;
  }
  get dictionary() {
    return this._dictionary;
  }
  get type() {
    return this._m.type;
  }
  get size() {
    return this._m.size;
  }
  get valueLength() {
    return this.size;
  }
  get stride() {
    return this.size;
  }
  get byteStride() {
    return this.size * TYPED_ARRAYS[this.type].BYTES_PER_ELEMENT;
  }
  get format() {
    return formatOf(this.type, this.size);
  }
  // Rows and storage: DESTROYED once destroyed (its type and size still describe it).
  get length() {
    this._check();
    return this._m.length;
  }
  get chunks() {
    this._check();
    return Array.from(this._m.chunks);
  }
  get data() {
    this._check();
    return Array.from(this._m.data(), d => viewOf(GPUData, d));
  }
  get validity() {
    this._check();
    const validity = this._m.validity();
    return validity ? viewOf(GPUVector, validity) : null;
  }
  get drawIndirect() {
    const device = this.device;
    if (device?.type !== 'webgpu' || this.destroyed) return null;
    return this._m.drawIndirectOn(device.id);
  }
  get destroyed() {
    return this._m.destroyed;
  }
  get device() {
    return deviceOf(this._m.deviceId);
  }

  static appendable(settings) {
    const {name = '', type = 'float32', size = 1, capacity = 1024} = options(settings, 'appendable', ['name', 'type', 'size', 'capacity']);
    checkType(type);
    checkSize(size);
    if (!Number.isInteger(capacity) || capacity < 0) fail('INVALID_ARGUMENT', `capacity must be a non-negative integer, got ${capacity}`);
    return viewOf(GPUVector, guard(() => wasm.VectorModel.appendable(String(name), type, size, capacity)));
  }

  append(values) {
    const Typed = TYPED_ARRAYS[this.type];
    if (Array.isArray(values) && !isNumberArray(values)) fail('INVALID_ARGUMENT', 'append needs numbers');
    const rows = Array.isArray(values) ? values : liveView(values, 'append');
    guard(() => this._m.append(rows instanceof Typed ? rows : Typed.from(rows)));
    return this;
  }

  resetLastBatch() {
    guard(() => this._m.resetLastBatch());
  }

  readValue(startRow, endRow) {
    return guardAsync(() => this._m.readValue(startRow, endRow));
  }

  readValueSync(startRow, endRow) {
    return guard(() => this._m.readValueSync(startRow, endRow));
  }

  destroy() {
    this._m.destroy();
  }

  _check() {
    guard(() => this._m.check());
  }
}
