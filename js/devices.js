// Devices and backends. A device wraps the wasm device of its backend: evaluation, counters,
// memory and the caching allocator are the Rust engine's, whatever the device.
import {MODULE_SPLIT, needWebGl, peek, probe, wasm} from './bindings.js';
import {fail, guard, guardAsync, nameOf} from './errors.js';
import {options} from './types.js';

// Devices by the id the engine gives them, so an output can name its device.
const devicesById = new Map();

// The device with engine id `id`, if this module made it (or it is the shared CPU device
// that `readValue()` of an evaluator never evaluated uses).
export function deviceOf(id) {
  if (id === undefined || id === null) return null;
  const made = devicesById.get(id)?.deref();
  if (made) return made;
  const shared = defaultDevice();
  return shared.id === id ? shared : null;
}

export function liveAllocations() {
  return guard(() => peek('liveBuffers')(undefined, false));
}

export class Device {
  // Use `createDevice()`.
  constructor(handle) {
    this._handle = handle;
    this.type = handle.type;
    if (this.type !== 'cpu') this.adapterName = handle.adapterName;
    this.limits = Object.freeze(handle.limits);
    devicesById.set(handle.id, new WeakRef(this));
  }
  // The engine's id of this device.
  get id() {
    return this._handle.id;
  }
  get destroyed() {
    return this._handle.destroyed;
  }
  get stats() {
    return this._handle.stats;
  }
  get memory() {
    return this._handle.memory;
  }
  get liveAllocations() {
    return wasm.liveBuffers(this.id, this.type === 'cpu');
  }
  get allowedMem() {
    return this._handle.allowedMem;
  }
  get gpuDevice() {
    return this._handle.gpuDevice;
  }
  trim(name) {
    if (name !== undefined && typeof name !== 'string') fail('INVALID_ARGUMENT', 'trim() takes a cache name or nothing');
    this._handle.trim(name);
  }
  resetPeak() {
    this._handle.resetPeak();
  }
  async cached(name, fn) {
    if (typeof name !== 'string' || name === '') fail('INVALID_ARGUMENT', 'cached() needs a cache name');
    return this._scoped(name, fn);
  }
  async uncached(fn) {
    return this._scoped(undefined, fn);
  }
  async _scoped(name, fn) {
    if (typeof fn !== 'function') fail('INVALID_ARGUMENT', 'expected a function to run');
    this._check();
    this._handle.enterCache(name);
    try {
      return await fn();
    } finally {
      this._handle.leaveCache(name);
    }
  }
  destroy() {
    this._handle.destroy();
  }
  // @internal
  _check() {
    if (this.destroyed) fail('DESTROYED', `the ${this.type} device was destroyed`);
  }
  toString() {
    return `Device<${this.type}${this.adapterName ? ` ${this.adapterName}` : ''}>`;
  }
}

let shared = null;

// The CPU device used when none is given.
export function defaultDevice() {
  shared ??= new Device(guard(() => wasm.sharedCpuDevice()));
  return shared;
}

// `device` (or the default CPU device), checked to be a live device of this module.
export function resolveDevice(device) {
  if (device === undefined || device === null) return defaultDevice();
  if (!(device instanceof Device)) fail('INVALID_ARGUMENT', `expected a device from createDevice(), got ${device?.constructor?.name ?? typeof device}`);
  device._check();
  return device;
}

export const cpuBackend = Object.freeze({
  type: 'cpu',
  async createDevice() {
    return new Device(guard(() => wasm.createCpuDevice()));
  }
});

export const webgpuBackend = Object.freeze({
  type: 'webgpu',
  async createDevice() {
    if (typeof navigator === 'undefined' || !navigator.gpu) {
      fail('BACKEND_UNAVAILABLE', 'WebGPU is not available here (no navigator.gpu)');
    }
    return new Device(await guardAsync(() => askingForSubgroups(() => probe(bindings => bindings.createWebGpuDevice()))));
  }
});

// wgpu's WebGPU backend has no name for the `subgroups` feature and never requests it, so
// while a WebGPU device is opened an adapter that has it is asked for it: the radix sort
// ranks rows by subgroup ballots there (the engine asks the device whether it has them).
let opening = 0;
let requestDevice = null;
async function askingForSubgroups(open) {
  const adapters = globalThis.GPUAdapter?.prototype;
  if (typeof adapters?.requestDevice !== 'function') return open();
  if (opening++ === 0) {
    requestDevice = adapters.requestDevice;
    adapters.requestDevice = function (descriptor) {
      const requiredFeatures = new Set(descriptor?.requiredFeatures ?? []);
      if (this.features?.has('subgroups')) requiredFeatures.add('subgroups');
      return requestDevice.call(this, {...descriptor, requiredFeatures: [...requiredFeatures]});
    };
  }
  try {
    return await open();
  } finally {
    if (--opening === 0) adapters.requestDevice = requestDevice;
  }
}

export const webglBackend = Object.freeze({
  type: 'webgl',
  async createDevice() {
    if (typeof OffscreenCanvas === 'undefined') {
      fail('BACKEND_UNAVAILABLE', 'WebGL2 is not available here (no OffscreenCanvas)');
    }
    await guardAsync(needWebGl);
    return new Device(await guardAsync(() => probe(bindings => bindings.createWebGlDevice())));
  }
});

const backends = new Map([['cpu', cpuBackend]]);

export const backendRegistry = Object.freeze({
  add(backend) {
    if (!backend || typeof backend.type !== 'string' || typeof backend.createDevice !== 'function') {
      fail('INVALID_ARGUMENT', 'backendRegistry.add needs a backend with a type and createDevice()');
    }
    backends.set(backend.type, backend);
  },
  has: type => backends.has(type),
  get: type => backends.get(type),
  types: () => [...backends.keys()]
});

export async function createDevice(settings) {
  const {type = 'cpu', allowedMem} = options(settings, 'createDevice', ['type', 'allowedMem']);
  nameOf(type, 'device type');
  // Checked by the engine before a device is made for it (a check makes nothing: the
  // WebGL2 module may still replace the default one after it).
  guard(() => peek('checkAllowedMem')(allowedMem));
  const device = await createAny(type);
  if (allowedMem !== undefined) guard(() => { device._handle.allowedMem = allowedMem; });
  return device;
}

async function createAny(type) {
  if (type === 'best') {
    const reasons = [];
    for (const candidate of ['webgpu', 'webgl', 'cpu']) {
      if (!backends.has(candidate)) continue;
      try {
        return await backends.get(candidate).createDevice();
      } catch (error) {
        // WebGL2 refused only because of what was made first is a usage error, not a
        // browser without WebGL2: reported, never passed over for the CPU.
        if (error?.code !== 'BACKEND_UNAVAILABLE' || error[MODULE_SPLIT]) throw error;
        reasons.push(`${candidate}: ${error.message}`);
      }
    }
    if (reasons.length > 0) fail('BACKEND_UNAVAILABLE', `no backend worked for 'best' (${reasons.join('; ')})`);
  }
  const backend = backends.get(type);
  if (!backend) {
    fail('BACKEND_UNAVAILABLE', `no '${type}' backend is registered; call backendRegistry.add() first`);
  }
  return guardAsync(() => backend.createDevice());
}

// The wasm list of evaluator handles for one call; freed after it.
export function withHandles(handles, fn) {
  const list = new wasm.EvaluatorList();
  try {
    for (const handle of handles) list.push(handle);
    return fn(list);
  } finally {
    list.free();
  }
}

// `withHandles` for calls that return a promise.
export async function withHandlesAsync(handles, fn) {
  const list = new wasm.EvaluatorList();
  try {
    for (const handle of handles) list.push(handle);
    return await guardAsync(() => fn(list));
  } finally {
    list.free();
  }
}

