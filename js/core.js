// The package's API, as both entry points (web.js, node.js) export it: re-exports only.
export {GpuTableError} from './errors.js';
export {TYPES, formatOf} from './types.js';
export {Device, backendRegistry, cpuBackend, createDevice, liveAllocations, webglBackend, webgpuBackend} from './devices.js';
export {DynamicBuffer, GPUData, GPUVector} from './vectors.js';
export {GPUTableEvaluator} from './evaluator.js';
export * from './ops.js';
export {GPUTable, GPURecordBatch, GPUSchema, GPUField} from './table.js';
export {SparseMatrix, SparseVector, kron} from './sparse.js';
