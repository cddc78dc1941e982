// Type declarations for the gputable package (both the browser and the Node build).

// Host types the API names, declared empty so the package compiles without the DOM lib (a
// Node project, a worker): where the DOM lib, @types/node or @webgpu/types is in the
// compilation these merge with the real ones, so `device.gpuDevice` is a full `GPUDevice`
// with `"types": ["@webgpu/types"]`.
declare global {
  interface URL {}
  interface Request {}
  interface Response {}
  interface ReadableStream<R = any> {}
  namespace WebAssembly {
    interface Module {}
  }
  interface GPUDevice {}
  interface GPUBuffer {}
}

/** Element types of a table column. */
export type DataType = 'uint8' | 'sint8' | 'uint16' | 'sint16' | 'uint32' | 'sint32' | 'float32';

/** The typed array that holds values of each data type. */
export type TypedArrayFor<T extends DataType> = {
  uint8: Uint8Array;
  sint8: Int8Array;
  uint16: Uint16Array;
  sint16: Int16Array;
  uint32: Uint32Array;
  sint32: Int32Array;
  float32: Float32Array;
}[T];

/** The data type `fromArray` gives an array: a `Float64Array` is uint32 word pairs, `number[]` float32. */
export type TypeOfArray<A> = A extends Float32Array
  ? 'float32'
  : A extends Float64Array
    ? 'uint32'
    : A extends Uint8Array | Uint8ClampedArray
      ? 'uint8'
      : A extends Int8Array
        ? 'sint8'
        : A extends Uint16Array
          ? 'uint16'
          : A extends Int16Array
            ? 'sint16'
            : A extends Uint32Array
              ? 'uint32'
              : A extends Int32Array
                ? 'sint32'
                : A extends readonly number[]
                  ? 'float32'
                  : DataType;

/** The data type of an operation's argument: numbers and number rows are float32 constants. */
export type TypeOf<A> = A extends GPUTableEvaluator<infer T> | GPUVector<infer T> | SparseMatrix<infer T> | SparseVector<infer T>
  ? T
  : A extends number | readonly number[]
    ? 'float32'
    : DataType;

/** The data type of a sparse component: an evaluator's or vector's, a typed array's (a `Float64Array`'s float32), float32 for numbers. */
export type ComponentType<C> = C extends GPUTableEvaluator<infer T> | GPUVector<infer T> ? T : C extends Float64Array ? 'float32' : TypeOfArray<C>;

/** A sparse operand of `S`'s kind (and format's components) with values of type `T`. */
export type SparseOf<S, T extends DataType> = S extends SparseVector
  ? SparseVector<T>
  : SparseMatrix<T> & (S extends CSRComponents ? CSRComponents : unknown) & (S extends CSCComponents ? CSCComponents : unknown) & (S extends COOComponents ? COOComponents : unknown);

// The deduction rules (api.md) for two inputs: any float gives float32; unsigned alone the
// widest; signed with unsigned narrower than 32 bits sint{max(signed, 2 x unsigned bits)};
// signed with uint32 float32. The rule is commutative and associative, so folding it over
// many inputs gives the rule over all of them.
interface PromotionTable {
  uint8: {uint8: 'uint8'; sint8: 'sint16'; uint16: 'uint16'; sint16: 'sint16'; uint32: 'uint32'; sint32: 'sint32'; float32: 'float32'};
  sint8: {uint8: 'sint16'; sint8: 'sint8'; uint16: 'sint32'; sint16: 'sint16'; uint32: 'float32'; sint32: 'sint32'; float32: 'float32'};
  uint16: {uint8: 'uint16'; sint8: 'sint32'; uint16: 'uint16'; sint16: 'sint32'; uint32: 'uint32'; sint32: 'sint32'; float32: 'float32'};
  sint16: {uint8: 'sint16'; sint8: 'sint16'; uint16: 'sint32'; sint16: 'sint16'; uint32: 'float32'; sint32: 'sint32'; float32: 'float32'};
  uint32: {uint8: 'uint32'; sint8: 'float32'; uint16: 'uint32'; sint16: 'float32'; uint32: 'uint32'; sint32: 'float32'; float32: 'float32'};
  sint32: {uint8: 'sint32'; sint8: 'sint32'; uint16: 'sint32'; sint16: 'sint32'; uint32: 'float32'; sint32: 'sint32'; float32: 'float32'};
  float32: {uint8: 'float32'; sint8: 'float32'; uint16: 'float32'; sint16: 'float32'; uint32: 'float32'; sint32: 'float32'; float32: 'float32'};
}

/** The output type of elementwise arithmetic over `Args` (a union where an input's type is not known). */
export type ArithmeticType<Args extends readonly unknown[]> = Args extends readonly [infer First, ...infer Rest]
  ? Rest extends readonly []
    ? TypeOf<First>
    : PromotionTable[TypeOf<First>][ArithmeticType<Rest>]
  : DataType;

/** `sum`'s output type: float32 for float input, sint32 for signed, uint32 for unsigned. */
export type SumType<T extends DataType> = T extends 'float32' ? 'float32' : T extends 'sint8' | 'sint16' | 'sint32' ? 'sint32' : 'uint32';

/** `T`, not inferred from where it is used (the first input alone decides). */
export type SameAs<T> = [T][T extends unknown ? 0 : never];

/** Whether `T` is one type, or any (`DataType`), not a union of some. */
export type OneType<T, All = T> = [DataType] extends [T] ? true : T extends unknown ? ([All] extends [T] ? true : false) : never;

export type NumericTypedArray =
  | Uint8Array
  | Uint8ClampedArray
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array;

/** The element types, in order. */
export const TYPES: readonly DataType[];

/** Stable error codes of every `GpuTableError`. */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'TYPE_MISMATCH'
  | 'EMPTY_INPUT'
  | 'BACKEND_UNAVAILABLE'
  | 'DESTROYED'
  | 'OUT_OF_MEMORY'
  | 'LIMIT_EXCEEDED'
  | 'INVALID_IPC'
  | 'DEVICE_LOST'
  | 'INTERNAL';

/** Every failure of the library. */
export class GpuTableError extends Error {
  readonly name: 'GpuTableError';
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string);
}

export type DeviceType = 'cpu' | 'webgpu' | 'webgl';

export interface DeviceLimits {
  /** Most rows one column can hold. */
  readonly maxRows: number;
  /** CPU and WebGPU: largest single buffer in bytes. */
  readonly maxBufferSize?: number;
  /** WebGPU: largest storage binding in bytes (a larger column gives LIMIT_EXCEEDED). */
  readonly maxStorageBufferBindingSize?: number;
  /** WebGPU: workgroups per dispatch dimension. */
  readonly maxComputeWorkgroupsPerDimension?: number;
  /** WebGPU: storage buffers one kernel binds (regions split to stay within it). */
  readonly maxStorageBuffersPerShaderStage?: number;
  /** WebGL2: largest texture side; columns are split into tiles of textures this wide. */
  readonly maxTextureDimension2D?: number;
  /** WebGL2: render targets one draw writes (4 lanes each). */
  readonly maxColorAttachments?: number;
  /** WebGL2: textures one draw reads (regions split to stay within it; a row wider than 64 lanes cannot). */
  readonly maxSampledTexturesPerShaderStage?: number;
  /** WebGL2: rows one texture tile holds. */
  readonly tileRows?: number;
}

/** `device.stats`: cumulative counters. On the CPU device the transfers are 0. */
export interface DeviceStats {
  /** Bytes copied from host memory to the device. */
  readonly uploadBytes: number;
  /** Bytes copied from the device to host memory. */
  readonly readbackBytes: number;
  /** Dispatches (WebGPU), draws (WebGL2) or passes (CPU) run. */
  readonly kernels: number;
  /** Shader pipelines compiled (0 on the CPU). */
  readonly pipelines: number;
  /** Buffers, textures or host arrays created, not served from the pool or a cache. */
  readonly allocations: number;
}

/** `device.memory`: bytes of device storage. */
export interface DeviceMemory {
  /**
   * Held by live values (outputs, table storage copied to a GPU device, copies of inputs,
   * work in flight). Data read in place from host memory is the caller's, not counted: on
   * the CPU device, a table loaded from Arrow IPC and `fromArray` sources.
   */
  readonly liveBytes: number;
  /** Held by the reuse pool and the named caches. */
  readonly pooledBytes: number;
  /** The most `liveBytes` held at once since `resetPeak()`. */
  readonly peakBytes: number;
}

/**
 * A device: the CPU, a WebGPU adapter or a WebGL2 context. Outputs evaluated on it stay on it
 * until read; evaluations on one device take turns (`Promise.all` is safe).
 */
export class Device {
  private constructor();
  readonly type: DeviceType;
  /** WebGPU and WebGL2: the adapter's name, where the browser tells it. */
  readonly adapterName?: string;
  readonly limits: DeviceLimits;
  /**
   * The device bytes one evaluation may hold at once (`createDevice({allowedMem})`), or
   * undefined: a chunk task projected over it is `LIMIT_EXCEEDED`; within it, chunks stream.
   */
  readonly allowedMem: number | undefined;
  readonly destroyed: boolean;
  readonly stats: DeviceStats;
  readonly memory: DeviceMemory;
  /** Table storage alive on this device (CPU: also tables loaded without a device). */
  readonly liveAllocations: number;
  /** WebGPU: the browser's `GPUDevice` the outputs' buffers live on (add `@webgpu/types` to your `types` for its members). */
  readonly gpuDevice: GPUDevice | undefined;
  /** Frees the reuse pool and every cache, or only the cache `name`. */
  trim(name?: string): void;
  /** `memory.peakBytes` starts again from what is live now. */
  resetPeak(): void;
  /**
   * Runs `fn` with every new allocation served from and returned to the cache `name`, which
   * outlives the call: a loop that evaluates the same shapes allocates nothing after its first pass.
   */
  cached<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /** Runs `fn` with every new allocation made fresh and freed on release. */
  uncached<T>(fn: () => T | Promise<T>): Promise<T>;
  /** Frees the device's memory and pipelines; later use is `DESTROYED`. */
  destroy(): void;
}

export interface Backend {
  readonly type: string;
  createDevice(): Promise<Device>;
}

export const cpuBackend: Backend;
export const webgpuBackend: Backend;
/**
 * WebGL2. Its backend is in a second wasm module: register it before `init()` and that module
 * is the one loaded; registered later, it replaces the default module at the first WebGL2
 * device (`'webgl'` or `'best'` falling back to it) if nothing was made with the default one
 * yet, and otherwise that device (and `'best'`) rejects with `BACKEND_UNAVAILABLE`.
 */
export const webglBackend: Backend;

export const backendRegistry: {
  /** Registers a backend; `cpu` is registered by default. */
  add(backend: Backend): void;
  has(type: string): boolean;
  get(type: string): Backend | undefined;
  types(): string[];
};

/**
 * A device of `type` (`'cpu'` by default); `'best'` picks webgpu, then webgl, then cpu and
 * says which in `device.type`. Rejects with `BACKEND_UNAVAILABLE`, never falls back silently.
 * @example const device = await createDevice({type: 'cpu'});
 */
export function createDevice(options?: {type?: DeviceType | 'best'; allowedMem?: number} | null): Promise<Device>;

/** Where `init()` finds a wasm module. */
export type WasmInput = string | URL | Request | Response | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

/**
 * Loads the wasm module: its URL, a Response, its bytes or a compiled module (by default the
 * file beside the package's code; in Node also a path, and no Request). Required once in
 * browsers; in Node a no-op unless a bundle moved the code away from the module. A failed
 * load rejects with `BACKEND_UNAVAILABLE` (and may be retried); so does any call before it.
 * In browsers `input` is the default module (`'gputable/wasm'`: CPU, WebGPU, Arrow IPC) and
 * `webglModule` the one with WebGL2 too (`'gputable/wasm-webgl'`), loaded instead when
 * `webglBackend` is registered (and `webglModule` given, or no input at all), or later on
 * demand; Node has no WebGL2.
 */
export function init(input?: WasmInput, webglModule?: WasmInput): Promise<void>;

/** Storage of this module instance that a table, batch or vector still owns (leak checks). */
export function liveAllocations(): number;

/** `float32x3`-style format of rows of `size` values of `type` (`float32` for size 1). */
export function formatOf(type: DataType, size: number): string;

/**
 * A stable handle to one chunk's storage: the backing is replaced when an appendable vector
 * grows (`generation` counts replacements). Storage lives on the device that computed or
 * loaded it (a table on a GPU device keeps no host copy); `destroy()` frees it at once.
 */
export class DynamicBuffer {
  /** @internal Made by vectors and tables, never constructed. */
  private constructor();
  /** The device holding the storage (null: host memory of no device). */
  readonly device: Device | null;
  /**
   * WebGPU: the `GPUBuffer` holding the rows (32-bit values, rows packed; it may be longer),
   * usable as a vertex or storage buffer on `device.gpuDevice`.
   */
  readonly gpuBuffer: GPUBuffer | undefined;
  readonly type: DataType;
  readonly size: number;
  /** Rows in use. */
  readonly length: number;
  readonly generation: number;
  readonly destroyed: boolean;
  /** Rows the backing holds without growing. */
  readonly capacity: number;
  readonly byteLength: number;
  destroy(): void;
}

/** One chunk of a vector: a buffer it owns or borrows, and the row layout. */
export class GPUData {
  /** @internal Made by vectors and tables, never constructed. */
  private constructor();
  readonly destroyed: boolean;
  readonly buffer: DynamicBuffer;
  readonly type: DataType;
  readonly format: string;
  readonly length: number;
  readonly valueLength: number;
  readonly byteOffset: number;
  readonly byteStride: number;
  readonly rowByteLength: number;
  readonly ownsBuffer: boolean;
  /** Frees the buffer only if this chunk owns it. */
  destroy(): void;
}

/**
 * One logical column over one or more chunks (one per record batch). Operations accept a
 * vector directly (borrowed, no copy); a multi-chunk vector is read chunk by chunk where it is stored.
 */
/** Chunk boundaries: rows per chunk (the last shorter), or each chunk's row count. */
export type Chunking = number | readonly number[];

export class GPUVector<T extends DataType = DataType> {
  /** @internal Made by `evaluate`, `appendable` and tables, never constructed. */
  private constructor();
  readonly name: string;
  readonly type: T;
  readonly format: string;
  readonly length: number;
  readonly size: number;
  readonly valueLength: number;
  readonly stride: number;
  readonly byteStride: number;
  readonly data: GPUData[];
  /** Row counts of the chunks (one per `data` entry), in order. */
  readonly chunks: number[];
  /** Validity (uint8: 1 valid, 0 null; size 1, or one flag per list item) for columns with nulls, else null. */
  readonly validity: GPUVector<'uint8'> | null;
  /**
   * On WebGPU, for a result whose length the device decided (`filter`, `unique`): a
   * `GPUBuffer` holding `[rows, 1, 0, 0]` (uint32) for `pass.drawIndirect(buffer, 0)`, so a
   * filtered result is drawn without reading its count; else null.
   */
  readonly drawIndirect: GPUBuffer | null;
  /** A dictionary column's values by code (its field's `dictionary`), else null. */
  readonly dictionary: DictionaryValues | null;
  readonly destroyed: boolean;
  /** The device holding the vector's storage (null: host memory of no device). */
  readonly device: Device | null;
  /** An empty vector that grows by `append`, doubling its capacity as needed. */
  static appendable<T extends DataType = 'float32'>(options?: {name?: string; type?: T; size?: number; capacity?: number} | null): GPUVector<T>;
  append(values: ArrayLike<number>): this;
  /** Clears the last chunk's rows, keeping its capacity. */
  resetLastBatch(): void;
  /** Rows `startRow..endRow` of every chunk, copied back from the device (only those rows). */
  readValue(startRow?: number, endRow?: number): Promise<TypedArrayFor<T>>;
  /** `readValue` for storage in host memory (the CPU devices). */
  readValueSync(startRow?: number, endRow?: number): TypedArrayFor<T>;
  /** Frees the chunks this vector owns; later use is `DESTROYED`. */
  destroy(): void;
}

/** A field as a schema or table is given one. */
export interface FieldInit {
  name: string;
  type: DataType;
  size?: number;
  nullable?: boolean;
  metadata?: Record<string, string>;
  dictionary?: DictionaryValues | null;
}

/** A column of a schema. */
export class GPUField {
  constructor(field: FieldInit);
  readonly name: string;
  readonly type: DataType;
  readonly size: number;
  readonly format: string;
  readonly nullable: boolean;
  /** `arrowType` and `kind` ('plain' | 'float64' | 'bool' | 'dictionary') for IPC columns. */
  readonly metadata: Record<string, string>;
  /**
   * A dictionary column's values by code (Utf8 and LargeUtf8 columns load as one, uint32
   * codes into their distinct strings in order of first appearance); else null.
   */
  readonly dictionary: DictionaryValues | null;
}

/**
 * A dictionary's values by code, as apache-arrow decodes them: distinct strings, numbers
 * (dates and timestamps as milliseconds), bigints (Int64, Uint64, Time64, Duration) or
 * booleans.
 */
export type DictionaryValues = readonly string[] | readonly number[] | readonly bigint[] | readonly boolean[];

export class GPUSchema {
  constructor(fields: GPUField[], metadata?: Record<string, string>);
  readonly fields: GPUField[];
  readonly metadata: Record<string, string>;
  readonly names: string[];
  field(name: string): GPUField | undefined;
}

/** Plain descriptions for binding one batch in a renderer. */
export interface BufferLayout {
  name: string;
  byteStride: number;
  stepMode: 'vertex';
  attributes: {attribute: string; format: string | null; byteOffset: number; shaderLocation: number}[];
}

/** One preserved batch: a row range of every column, one chunk per vector. */
export class GPURecordBatch {
  /** Takes ownership of single-chunk vectors of equal length. */
  constructor(vectors: GPUVector[], schema?: GPUSchema);
  readonly schema: GPUSchema;
  readonly numRows: number;
  readonly numCols: number;
  readonly destroyed: boolean;
  readonly gpuVectors: GPUVector[] & Record<string, GPUVector>;
  readonly bufferLayout: BufferLayout[];
  /** On a WebGPU device also the resident `gpuBuffer` (32-bit values: `gpuFormat`, `gpuByteStride`). */
  readonly attributes: Record<string, {buffer: DynamicBuffer | null; format: string | null; byteOffset: number; byteStride: number; gpuBuffer?: GPUBuffer; gpuFormat?: string; gpuByteStride?: number}>;
  readonly bindings: Record<string, {buffer: DynamicBuffer | null; offset: number; size: number; gpuBuffer?: GPUBuffer; gpuFormat?: string; gpuByteStride?: number}>;
  getVector(name: string): GPUVector;
  destroy(): void;
}

export interface ArrowIPCOptions {
  device?: Device | null;
  /** Columns to read, in this order (all by default). */
  columns?: readonly string[];
  /** Float64 columns converted to float32 (default), or as uint32 word pairs for `fround`. */
  float64?: 'words' | 'float32';
  /** Int64/Uint64 columns, and Timestamp, Date64, Time64 and Duration (their int64 values), need a conversion; without one they are TYPE_MISMATCH. Date32 and Time32 load as sint32. */
  int64?: 'float32' | 'int32';
  /** For a streamed read: called with each record batch as it arrives (awaited). */
  onBatch?: (batch: GPURecordBatch, table: GPUTable) => void | Promise<void>;
}

/** Bytes that arrive a piece at a time: `(await fetch(url)).body`, or any async iterable of pieces. */
export type ByteStream = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | ArrayBuffer>;

/**
 * A table: a schema and preserved record batches it owns until they are detached. Arrow IPC
 * in (`fromArrowIPC`) and out (`toArrowIPC`), batches kept.
 */
export class GPUTable {
  constructor(options?: {schema?: GPUSchema | null; batches?: GPURecordBatch[]; device?: Device | null});
  /** The device its verbs evaluate on (null: the default CPU device). */
  readonly device: Device | null;
  /** Reads a table onto `options.device`; a GPU device keeps the columns there only. */
  /** Bytes, or a stream of them decoded record batch by record batch as they arrive. */
  static fromArrowIPC(bytes: Uint8Array | ArrayBuffer | ByteStream, options?: ArrowIPCOptions | null): Promise<GPUTable>;
  /** `fromArrowIPC` for the CPU (a GPU device needs `await fromArrowIPC`). */
  static fromArrowIPCSync(bytes: Uint8Array | ArrayBuffer, options?: ArrowIPCOptions | null): GPUTable;
  readonly schema: GPUSchema;
  readonly batches: GPURecordBatch[];
  readonly numRows: number;
  readonly numCols: number;
  readonly destroyed: boolean;
  /** Per column, one logical vector over every batch (borrowing the chunks). */
  readonly gpuVectors: GPUVector[] & Record<string, GPUVector>;
  readonly bufferLayout: BufferLayout[];
  readonly attributes: GPURecordBatch['attributes'];
  readonly bindings: GPURecordBatch['bindings'];
  getVector(name: string): GPUVector;
  /** The bytes, or a promise of them for a table on a GPU device (`await` works for both). */
  toArrowIPC(): Uint8Array | Promise<Uint8Array>;
  /** The table, or a promise of it for a table on a GPU device (`await` works for both). */
  packBatches(options?: {minBatchSize?: number}): this | Promise<this>;
  detachVector(name: string): GPUVector;
  detachBatches(first?: number, last?: number): GPURecordBatch[];
  addBatch(batch: GPURecordBatch): this;
  /** A table of some columns that borrows this table's storage. */
  select(...names: string[]): GPUTable;
  /**
   * Columns computed from this table's (`t`: its vectors by name), each a column of the
   * table's rows: new names appended, an existing name replaced in place. Resolves to a new
   * table on this table's device, batches kept; unchanged columns share their storage.
   * @example await table.derive({tip_rate: t => divide(t.tip, t.fare)})
   */
  derive(columns: Record<string, (t: Record<string, GPUVector>) => ColumnInput | readonly number[]>): Promise<GPUTable>;
  /**
   * The rows whose mask (`predicate(t)`, size 1) is nonzero and not null, every column, on
   * this table's device: batches kept, each with its kept rows.
   * @example await table.filter(t => greater(t.fare, 10))
   */
  filter(predicate: (t: Record<string, GPUVector>) => NumericArgument): Promise<GPUTable>;
  /** The rows in `argsort(keys, options)`'s order (one batch), on this table's device. */
  orderBy(names: string | readonly string[], options?: OrderOptions): Promise<GPUTable>;
  /** The first `k` rows by column `name` (`topK`'s order, descending by default), one batch. */
  topK(name: string, k: number, options?: {descending?: boolean}): Promise<GPUTable>;
  /**
   * Groups by the columns `names`: `rollup` resolves to a table of one row per group (as
   * `groupBy` gives them), the key columns first, then each aggregate, `'count'` or
   * `[op, columnName]`.
   * @example await table.groupBy('vendor').rollup({trips: 'count', fare: ['mean', 'fare']})
   */
  groupBy(names: string | readonly string[]): {rollup(aggregates: Record<string, 'count' | readonly [GroupOp, string]>): Promise<GPUTable>};
  /**
   * This table's columns, then `other`'s, one row per pair of rows whose `on` columns are
   * equal (`join`'s pairs and order). `on` is a column name in both or `[leftName,
   * rightName]`; the right key is dropped when the names match, other clashing right names
   * take `suffix`; with `how: 'left'`, the right columns of an unmatched row are null.
   * @example await trips.join(zones, {on: ['zone', 'id'], how: 'left'})
   */
  join(other: GPUTable, options: {on: string | readonly [string, string]; how?: 'inner' | 'left'; suffix?: string}): Promise<GPUTable>;
  resetLastBatch(): void;
  destroy(): void;
}

/** Anything an operation accepts as a table input. */
export type EvaluatorInput = GPUTableEvaluator | GPUVector;
/**
 * A verb's column, or a number: one float32 constant row (repeated on the rows of a column
 * the verb pairs it with, such as a group-by's other keys or a mask).
 */
export type ColumnInput = EvaluatorInput | number;
/** Arithmetic also accepts number literals and literal rows (float32 constants). */
/** An argument of the ops: a sparse operand where no sparse rule applies is its dense matrix. */
export type ArithmeticArgument = EvaluatorInput | number | readonly number[] | SparseOperand;
/** A sparse matrix or vector. */
export type SparseOperand = SparseMatrix | SparseVector;

/**
 * A lazy computation over table columns. Operations return new evaluators; nothing runs
 * until `evaluate()`.
 * @example
 * const xyz = GPUTableEvaluator.fromArray(new Float32Array([1, 2, 3, 4, 5, 6]), {size: 3});
 * const r = add(xyz, [10, 20, 30], 1);
 * await r.evaluate(device);
 * await r.readValue(); // Float32Array [12, 23, 34, 15, 26, 37]
 */
export class GPUTableEvaluator<T extends DataType = DataType> {
  private constructor();
  /**
   * Packed rows of `size` values. `number[]` is float32 unless `type` is given; a
   * `Float64Array` becomes uint32 word pairs (size doubled) for `fround()`. `chunks` makes a
   * chunked column: rows per chunk (the last shorter), or each chunk's row count.
   */
  static fromArray<T extends DataType>(array: NumericTypedArray | readonly number[], options: {type: T; size?: number; chunks?: Chunking}): GPUTableEvaluator<T>;
  static fromArray<A extends NumericTypedArray | readonly number[]>(array: A, options?: {type?: undefined; size?: number; chunks?: Chunking} | null): GPUTableEvaluator<TypeOfArray<A>>;
  /** A type known only at run time. */
  static fromArray(array: NumericTypedArray | readonly number[], options?: {type?: DataType; size?: number; chunks?: Chunking} | null): GPUTableEvaluator;
  /** One constant row that broadcasts across the rows of other inputs. */
  static fromConstant<T extends DataType = 'float32'>(value: number | readonly number[], type?: T): GPUTableEvaluator<T>;
  /**
   * Borrows the storage of a `GPUVector` (the output of another evaluation, a table column):
   * no copy. A vector of several chunks is read through a view of them. `destroy()` of the
   * evaluator ends only the view; the storage stays the vector's.
   */
  static fromVector<T extends DataType>(vector: GPUVector<T>): GPUTableEvaluator<T>;

  /**
   * The values of a dictionary column's codes: set by the ops that keep values (`gather`,
   * `filter`, `sort`, `topK`, `unique`, `valueCounts` and `groupBy` keys) from their input.
   */
  dictionary: DictionaryValues | null;
  readonly type: T;
  /** Values per row. */
  readonly size: number;
  /**
   * Rows (1 for constants). `null` for a result whose length depends on the data (`filter`,
   * `unique`, `valueCounts`, `groupBy`, `join`, and ops over them) until it is evaluated:
   * its count is decided on the device.
   */
  readonly length: number | null;
  /** Row counts of the chunks, in order (`[length]` for one chunk); `null` while `length` is. */
  readonly chunks: number[] | null;
  readonly isConstant: boolean;
  /**
   * Whether a device holds the evaluator's materialized output: false for a source made by
   * `fromArray` until it is evaluated or uploaded for a graph, and for an intermediate
   * `cleanEvaluate` released.
   */
  readonly evaluated: boolean;
  /** The device holding the materialized output (where it was last evaluated), else null. */
  readonly device: Device | null;

  /**
   * Runs the computation on `device` (the CPU when omitted) and leaves the output there
   * (nothing is read back); an output computed on another device is copied there once.
   * A second call does no work.
   */
  evaluate(device?: Device | null): Promise<GPUVector<T>>;
  /**
   * Synchronous `evaluate()` for the CPU device: `INVALID_ARGUMENT` on a GPU device, or where
   * an input must first come back from one.
   */
  evaluateSync(device?: Device | null): GPUVector<T>;
  /**
   * Rows `startRow..endRow` (clamped), packed, as a typed array of this type, copied back
   * from the device (only those rows). Never evaluated: evaluates on the CPU first; being
   * evaluated: read once that is done.
   */
  readValue(startRow?: number, endRow?: number): Promise<TypedArrayFor<T>>;
  /** Synchronous `readValue()` for outputs in host memory (the CPU devices). */
  readValueSync(startRow?: number, endRow?: number): TypedArrayFor<T>;
  /** The passes this graph runs: kernels, what was fused, passes per backend. */
  explain(device?: Device | null): string;
  /**
   * The output as an Arrow IPC stream with one column `name` (one record batch per chunk):
   * the bytes, or a promise of them for an output on a GPU device. Never evaluated:
   * evaluates on the CPU first.
   */
  toArrowIPC(name?: string): Uint8Array | Promise<Uint8Array>;
  /**
   * Releases the output (on every device, at once); any later use gives `DESTROYED`. An
   * evaluator over a vector's storage (`fromVector`) ends only itself.
   */
  destroy(): void;
}

/** Sparse operands of one shape: the union of their entries (canonical, in the first one's format). */
export function add<S extends SparseOperand>(a: S, b: S, ...more: S[]): Promise<S>;
export function add<S extends SparseOperand, B extends SparseOperand, More extends SparseOperand[]>(a: S, b: B, ...more: More): Promise<SparseOf<S, ArithmeticType<[S, B, ...More]>>>;
/** Three or more arguments starting with a sparse operand: each step as above, so a Promise once a sparse-sparse step ran. */
export function add(a: SparseOperand, b: ArithmeticArgument, c: ArithmeticArgument, ...more: ArithmeticArgument[]): SparseOperand | GPUTableEvaluator | Promise<SparseOperand | GPUTableEvaluator>;
/** Elementwise sum of one or more arguments, folded left to right. @example add(xyz, [10, 20, 30], 1) */
export function add<Args extends ArithmeticArgument[]>(...args: Args): GPUTableEvaluator<ArithmeticType<Args>>;
/** Sparse operands of one shape: the union of their entries. */
export function subtract<S extends SparseOperand>(a: S, b: S, ...more: S[]): Promise<S>;
export function subtract<S extends SparseOperand, B extends SparseOperand, More extends SparseOperand[]>(a: S, b: B, ...more: More): Promise<SparseOf<S, ArithmeticType<[S, B, ...More]>>>;
/** Three or more arguments starting with a sparse operand: each step as above, so a Promise once a sparse-sparse step ran. */
export function subtract(a: SparseOperand, b: ArithmeticArgument, c: ArithmeticArgument, ...more: ArithmeticArgument[]): SparseOperand | GPUTableEvaluator | Promise<SparseOperand | GPUTableEvaluator>;
/** Elementwise difference, folded left to right. @example subtract(x, 1) */
export function subtract<Args extends ArithmeticArgument[]>(...args: Args): GPUTableEvaluator<ArithmeticType<Args>>;
/** A sparse operand times a number: the same structure (float32 values), at once. */
export function multiply<S extends SparseMatrix<'float32'> | SparseVector<'float32'>>(a: S, b: number, ...more: number[]): S;
export function multiply<S extends SparseMatrix<'float32'> | SparseVector<'float32'>>(a: number, b: S): S;
export function multiply<S extends SparseOperand>(a: S, b: number, ...more: number[]): SparseOf<S, 'float32'>;
export function multiply<S extends SparseOperand>(a: number, b: S): SparseOf<S, 'float32'>;
/** Sparse operands of one shape: the intersection of their entries. */
export function multiply<S extends SparseOperand>(a: S, b: S, ...more: S[]): Promise<S>;
export function multiply<S extends SparseOperand, B extends SparseOperand, More extends SparseOperand[]>(a: S, b: B, ...more: More): Promise<SparseOf<S, ArithmeticType<[S, B, ...More]>>>;
/** Three or more arguments starting with a sparse operand: each step as above, so a Promise once a sparse-sparse step ran. */
export function multiply(a: SparseOperand, b: ArithmeticArgument, c: ArithmeticArgument, ...more: ArithmeticArgument[]): SparseOperand | GPUTableEvaluator | Promise<SparseOperand | GPUTableEvaluator>;
/** Elementwise product, folded left to right. @example multiply(x, x) */
export function multiply<Args extends ArithmeticArgument[]>(...args: Args): GPUTableEvaluator<ArithmeticType<Args>>;
/** A sparse operand by a number: the same structure (float32 values), at once. */
export function divide<S extends SparseMatrix<'float32'> | SparseVector<'float32'>>(a: S, b: number): S;
export function divide<S extends SparseOperand>(a: S, b: number): SparseOf<S, 'float32'>;
/** Three or more arguments starting with a sparse operand: each step as above, so a Promise once a sparse-sparse step ran. */
export function divide(a: SparseOperand, b: ArithmeticArgument, c: ArithmeticArgument, ...more: ArithmeticArgument[]): SparseOperand | GPUTableEvaluator | Promise<SparseOperand | GPUTableEvaluator>;
/** Elementwise quotient, folded left to right; integer division truncates toward zero and integer division by zero is 0 (float division by zero is IEEE). */
export function divide<Args extends ArithmeticArgument[]>(...args: Args): GPUTableEvaluator<ArithmeticType<Args>>;
/** `base ** exponent`, float32. */
export function pow(base: ArithmeticArgument, exponent: ArithmeticArgument): GPUTableEvaluator<'float32'>;
/** Of a sparse operand (f(0) = 0): its canonical entries mapped, sparse. */
export function sqrt<S extends SparseMatrix<'float32'> | SparseVector<'float32'>>(x: S): Promise<S>;
export function sqrt<S extends SparseOperand>(x: S): Promise<SparseOf<S, 'float32'>>;
/** Square root, float32. */
export function sqrt(x: ArithmeticArgument): GPUTableEvaluator<'float32'>;
export function abs<S extends SparseOperand>(x: S): Promise<S>;
/** Absolute value; keeps the input type (integers wrap: abs(-128 as sint8) is -128). */
export function abs<X extends ArithmeticArgument>(x: X): GPUTableEvaluator<TypeOf<X>>;
export function sin<S extends SparseMatrix<'float32'> | SparseVector<'float32'>>(x: S): Promise<S>;
export function sin<S extends SparseOperand>(x: S): Promise<SparseOf<S, 'float32'>>;
export function sin(x: ArithmeticArgument): GPUTableEvaluator<'float32'>;
export function cos(x: ArithmeticArgument): GPUTableEvaluator<'float32'>;
export function tan<S extends SparseMatrix<'float32'> | SparseVector<'float32'>>(x: S): Promise<S>;
export function tan<S extends SparseOperand>(x: S): Promise<SparseOf<S, 'float32'>>;
export function tan(x: ArithmeticArgument): GPUTableEvaluator<'float32'>;
export function exp(x: ArithmeticArgument): GPUTableEvaluator<'float32'>;
/** Natural logarithm, float32. */
export function log(x: ArithmeticArgument): GPUTableEvaluator<'float32'>;

/** Concatenates each row of the inputs; size = sum of sizes. @example interleave(xyz, id) */
export function interleave<Args extends ArithmeticArgument[]>(...inputs: Args): GPUTableEvaluator<ArithmeticType<Args>>;
/** Rows of `source` at `ids` (one integer per row); out-of-range or negative ids give zero rows; constant when `ids` is. */
export function gather<S extends ArithmeticArgument>(ids: ColumnInput, source: S): GPUTableEvaluator<TypeOf<S>>;
/** Options of the reductions. */
export interface ReductionOptions {
  /** The most chunk partials one combine takes (at least 2). Default 4. */
  splitEvery?: number;
  /**
   * Reduce only the rows where this mask (size 1; x's length, or a constant) is nonzero and
   * not null, in the reduction's own pass. Keeping no row: `sum` is 0, the others
   * `EMPTY_INPUT` at evaluation. @example sum(fare, {where: greater(fare, 10)})
   */
  where?: ColumnInput;
}
/**
 * Per row of `values`, the first row `i` of the ascending `sorted` (size 1; NaN last, as
 * argsort orders) with `sorted[i] >= v` (`side: 'left'`) or `> v` (`'right'`), comparing
 * exactly across types, NaN after every number (NumPy's rule); uint32.
 * @example searchSorted(edges, fare, {side: 'right'})
 */
export function searchSorted(sorted: ColumnInput, values: PredicateArgument, options?: {side?: 'left' | 'right'}): GPUTableEvaluator<'uint32'>;
/** The rows whose mask (size 1) is nonzero and not null: one uint32 row. @example count(greater(fare, 10)) */
export function count(mask: ColumnInput): GPUTableEvaluator<'uint32'>;
/**
 * The rows of `x` whose `mask` (size 1; x's length, or a constant) is nonzero and not null,
 * in order, nulls kept; chunk k holds the kept rows of x's chunk k. The count is decided on
 * the device: ops build on the result before anything runs, one evaluation reads back only
 * its roots' counts, and `length` is `null` until then. Over a filtered and a full column,
 * an op has the larger of their row counts (rows past the filtered one's count are null).
 * @example filter(fare, greater(distance, 10))
 */
export function filter<X extends ColumnInput>(x: X, mask: NumericArgument): GPUTableEvaluator<TypeOf<X>>;
/**
 * The distinct values of a size-1 `x`, ascending (NaN once, after every number; -0 and +0
 * one value, +0; null rows one null row, last), counted on the device as `filter` is.
 * @example unique(vendor)
 */
export function unique<X extends ColumnInput>(x: X): GPUTableEvaluator<TypeOf<X>>;
/**
 * `unique(x)` and the rows of `x` holding each value (uint32; the null row's: the null
 * rows), counted alike on the device: `groupBy(x, {counts: 'count'})`.
 * @example const {values, counts} = valueCounts(vendor)
 */
export function valueCounts<X extends ColumnInput>(x: X): {values: GPUTableEvaluator<TypeOf<X>>; counts: GPUTableEvaluator<'uint32'>};
/** An aggregate of `groupBy`. */
export type GroupOp = 'count' | 'sum' | 'min' | 'max' | 'mean' | 'argmin' | 'argmax' | 'first' | 'last';
/** `'count'` (a group's rows) or `[op, x]` (`x` a column of the keys' rows). */
export type GroupAggregate = 'count' | readonly [GroupOp, ColumnInput];
/** The type of an aggregate's result, as the whole-column reduction's. */
export type GroupAggregateType<A> = A extends 'count' | readonly ['count', any] ? 'uint32'
  : A extends readonly ['sum', infer X] ? SumType<TypeOf<X>>
  : A extends readonly ['min' | 'max', infer X] ? TypeOf<X>
  : A extends readonly ['mean', any] ? 'float32'
  : A extends readonly ['argmin' | 'argmax' | 'first' | 'last', any] ? 'sint32' : DataType;
/** `groupBy`'s key columns, one per key, each of its key's type. */
export type GroupKeys<K> = K extends readonly unknown[]
  ? {-readonly [I in keyof K]: GPUTableEvaluator<TypeOf<K[I]>>}
  : [GPUTableEvaluator<TypeOf<K>>];
/**
 * One row per group of rows with equal `keys` (an evaluator or an array of them, size 1, any
 * type; -0 and +0 one key, NaN one, null rows one), groups in ascending key order
 * (lexicographic; NaN, then null, last), counted on the device as `filter` is. Each
 * aggregate is `'count'` (the group's rows) or `[op, x]`: `count` (x's non-null rows,
 * uint32), `sum` (sum's type), `min`/`max` (x's type), `mean` (float32), and `argmin argmax
 * first last` (sint32 rows of the input; ties to the lowest row). Null rows of `x` are
 * skipped and NaN by `min max argmin argmax`; a group with nothing to reduce is null (`sum`:
 * 0; `argmin`/`argmax` of only NaN: -1).
 * @example const {keys: [vendors], trips, fare} = groupBy(vendor, {trips: 'count', fare: ['mean', fare]})
 */
export function groupBy<K extends ColumnInput | readonly ColumnInput[], A extends Record<string, GroupAggregate> & {keys?: never}>(
  keys: K,
  aggregates: A,
): {keys: GroupKeys<K>} & {[N in keyof A]: GPUTableEvaluator<GroupAggregateType<A[N]>>};
/** The bins of a histogram: `bins` equal bins over `range` (`[lo, hi]`, or `'auto'`: x's extent, found on the device; an infinite end is `INVALID_ARGUMENT` when evaluated), or ascending `edges` (numbers, or an evaluator of them, out of order `INVALID_ARGUMENT` when evaluated). */
export type HistogramBins =
  | {bins: number; range?: 'auto' | readonly [number, number]; edges?: never; where?: NumericArgument}
  | {edges: readonly number[] | NumericTypedArray | EvaluatorInput; bins?: never; range?: never; where?: NumericArgument};
/**
 * uint32 counts of the rows of a size-1 `x` in each bin, one row per bin. Bin `i` is
 * `[e_i, e_i+1)`, the last also holding its upper edge; values compare with the edges
 * exactly. NaN, nulls, values outside the edges and rows `where` drops are not counted.
 * @example histogram(fare, {bins: 24, range: [0, 120]})
 */
export function histogram(x: ColumnInput, bins: HistogramBins, options?: {where?: NumericArgument}): GPUTableEvaluator<'uint32'>;
/**
 * Per row of `keys` (size 1), the lowest row of `tableKeys` (size 1) holding an equal key,
 * or -1: sint32. Keys compare as `equal` does, exactly across types; NaN and null keys never
 * match. @example gather(lookup(trips.zone, zones.id), zones.area)
 */
export function lookup(keys: ColumnInput, tableKeys: ColumnInput): GPUTableEvaluator<'sint32'>;
/**
 * sint32 row pairs, one per pair of rows of `leftKeys` and `rightKeys` (size 1 each) with
 * equal keys, by left row, then right row; `how: 'left'` adds each left row with no match
 * once, with `right` -1. Keys compare as `equal` does; NaN and null keys never match. The
 * pairs are counted on the device into `capacity` rows (by default every pair the keys
 * could make, at most the keys' rows together or 4,194,304); an evaluation needing more
 * fails with `LIMIT_EXCEEDED`, naming the rows it needs (`table.join` counts them first).
 * @example const {left, right} = join(trips.zone, zones.id); gather(right, zones.name)
 */
export function join(
  leftKeys: ColumnInput,
  rightKeys: ColumnInput,
  options?: {how?: 'inner' | 'left'; capacity?: number},
): {left: GPUTableEvaluator<'sint32'>; right: GPUTableEvaluator<'sint32'>};
/**
 * 1 where a row of `x` is null (uint8, never null). Nulls come from a vector's `validity`
 * and follow every elementwise op: a row reading a null row is null.
 * @example count(isNull(table.getChild('fare')))
 */
export function isNull(x: ColumnInput): GPUTableEvaluator<'uint8'>;
/** 1 where a row of `x` is not null (uint8, never null). */
export function isValid(x: ColumnInput): GPUTableEvaluator<'uint8'>;
/** Order options: `descending` (one flag, or one per key) and where null rows go. */
export interface OrderOptions {
  descending?: boolean | readonly boolean[];
  nulls?: 'first' | 'last';
}
/**
 * uint32 row numbers (one chunk) that order the rows by `keys` (one evaluator of size 1, or
 * several compared lexicographically), stably: ascending is -Inf, ..., -0 = +0, ..., +Inf,
 * then NaN; descending +Inf, ..., -Inf, then NaN; nulls last (or first).
 * @example argsort([vendor, fare], {descending: [false, true]})
 */
export function argsort(keys: ColumnInput | readonly ColumnInput[], options?: OrderOptions): GPUTableEvaluator<'uint32'>;
/** The values of a size-1 `x` in `argsort(x, options)`'s order (its nulls with them). */
export function sort<X extends ColumnInput>(x: X, options?: {descending?: boolean | readonly [boolean]; nulls?: 'first' | 'last'}): GPUTableEvaluator<TypeOf<X>>;
/**
 * The first `k` rows of `sort(x, {descending})` (descending by default) and their uint32
 * rows in `x`; every row when `k` exceeds them. @example topK(fare, 10).values
 */
export function topK<X extends ColumnInput>(x: X, k: number, options?: {descending?: boolean}): {values: GPUTableEvaluator<TypeOf<X>>; indices: GPUTableEvaluator<'uint32'>};
/** `exclusive`: each row folds only the rows before it; `reverse`: the rows after it. */
export interface CumulativeOptions {
  exclusive?: boolean;
  reverse?: boolean;
}
/**
 * Per lane, the running sum along the rows across chunks (the output keeps x's chunks): sum's
 * types (float32, sint32 or uint32; integers wrap). Null rows are skipped and null in the
 * output. Floats add in tree order, as `sum` does. @example cumsum(fare, {exclusive: true})
 */
export function cumsum<X extends ColumnInput>(x: X, options?: CumulativeOptions): GPUTableEvaluator<SumType<TypeOf<X>>>;
/** The running product, as `cumsum` (sum's types; integers wrap). */
export function cumprod<X extends ColumnInput>(x: X, options?: CumulativeOptions): GPUTableEvaluator<SumType<TypeOf<X>>>;
/** The running minimum in x's type, NaN skipped (a float row with no number before it is NaN; an integer one the type's largest value). */
export function cummin<X extends ColumnInput>(x: X, options?: CumulativeOptions): GPUTableEvaluator<TypeOf<X>>;
/** The running maximum in x's type, NaN skipped (a float row with no number before it is NaN; an integer one the type's smallest value). */
export function cummax<X extends ColumnInput>(x: X, options?: CumulativeOptions): GPUTableEvaluator<TypeOf<X>>;
/** `x` with `value` (converted to x's type) on its null rows: x's type, no nulls. A dictionary column keeps its dictionary and takes one of its values (a string not in it is added). @example fillNull(tip, 0) */
export function fillNull<X extends ColumnInput>(x: X, value: PredicateArgument | bigint | Date): GPUTableEvaluator<TypeOf<X>>;
/** Per channel `[min, max]` over all rows, NaN and null rows ignored; length = x.size, size 2. Empty input: `EMPTY_INPUT`. */
export function extent<X extends ArithmeticArgument>(x: X, options?: ReductionOptions): GPUTableEvaluator<TypeOf<X>>;
/**
 * Of a sparse operand: every entry (no `axis`: one value), one row per column (`axis: 0`) or
 * one row per row (`axis: 1`).
 */
export function sum<S extends SparseOperand>(x: S, options?: {splitEvery?: number; axis?: 0 | 1 | null}): GPUTableEvaluator<SumType<TypeOf<S>>>;
/** Per lane sum over all rows (null slots skipped): float32 for float input, sint32 for signed, uint32 for unsigned (integers wrap); one constant row of x.size. No rows: 0. */
export function sum<X extends NumericArgument>(x: X, options?: ReductionOptions): GPUTableEvaluator<SumType<TypeOf<X>>>;
/** Of a sparse operand: implicit zeros count, as in the dense matrix; one value. */
export function min<S extends SparseOperand>(x: S, options?: {splitEvery?: number}): GPUTableEvaluator<TypeOf<S>>;
/** Per lane least value, NaN and null slots ignored (a lane with only NaN gives NaN), in x's type; one constant row. Empty input: `EMPTY_INPUT`. */
export function min<X extends NumericArgument>(x: X, options?: ReductionOptions): GPUTableEvaluator<TypeOf<X>>;
export function max<S extends SparseOperand>(x: S, options?: {splitEvery?: number}): GPUTableEvaluator<TypeOf<S>>;
/** Per lane greatest value, NaN and null slots ignored (a lane with only NaN gives NaN), in x's type; one constant row. Empty input: `EMPTY_INPUT`. */
export function max<X extends NumericArgument>(x: X, options?: ReductionOptions): GPUTableEvaluator<TypeOf<X>>;
/** Per lane mean (null slots skipped), float32; one constant row. Empty input: `EMPTY_INPUT`. */
export function mean(x: ArithmeticArgument, options?: ReductionOptions): GPUTableEvaluator<'float32'>;
/** Per lane row index of the first least value, NaN and null slots ignored (-1 if none), sint32; one constant row. Empty input: `EMPTY_INPUT`. */
export function argmin(x: ArithmeticArgument, options?: ReductionOptions): GPUTableEvaluator<'sint32'>;
/** Per lane row index of the first greatest value, NaN and null slots ignored (-1 if none), sint32; one constant row. Empty input: `EMPTY_INPUT`. */
export function argmax(x: ArithmeticArgument, options?: ReductionOptions): GPUTableEvaluator<'sint32'>;
/** Every lane converted to `type`: float to integer truncates toward zero (NaN and out of range give 0), integers wrap. A dictionary of numbers converts its values (of strings: `TYPE_MISMATCH`). */
export function cast<T extends DataType>(x: ArithmeticArgument, type: T): GPUTableEvaluator<T>;
/** Rows of each input in order, chunks concatenated; the inputs share one type and row size. Dictionary columns keep their values: codes into one dictionary (the first's values, then those the others add). */
export function concat<T extends DataType>(first: GPUTableEvaluator<T> | GPUVector<T>, ...rest: (GPUTableEvaluator<SameAs<T>> | GPUVector<SameAs<T>>)[]): GPUTableEvaluator<T>;
/** `concat(...columns)` of an array whose length is not known to the compiler (of one type). */
export function concat<T extends DataType>(...columns: OneType<T> extends true ? readonly (GPUTableEvaluator<T> | GPUVector<T>)[] : never): GPUTableEvaluator<T>;
/** Rows `[start, end)` of `x`, clamped; reads only the chunks it touches (a dictionary kept). */
export function slice<T extends DataType>(x: GPUTableEvaluator<T> | GPUVector<T>, start?: number, end?: number): GPUTableEvaluator<T>;
/** The same rows with new chunk boundaries: rows per chunk, or row counts summing to the length. */
export function rechunk<T extends DataType>(x: GPUTableEvaluator<T> | GPUVector<T>, chunks: Chunking): GPUTableEvaluator<T>;
/** Where a block of `mapBlocks` lies: its chunk index and first row. */
export interface BlockInfo {
  blockId: number;
  rowOffset: number;
}
/**
 * Output chunk k is `fn(...blocksK, {blockId: k, rowOffset})`, built from chunk k of every input
 * (the inputs need the same number of chunks, else `INVALID_ARGUMENT`).
 */
export function mapBlocks(fn: (...args: any[]) => GPUTableEvaluator, ...inputs: (GPUTableEvaluator | GPUVector)[]): GPUTableEvaluator;
/**
 * Output chunk k is `fn(k, ...lists)`, where list i holds the chunks `keys(k)[i]` of input i; it
 * must have `chunks[k]` rows.
 */
export function blockwise(
  fn: (k: number, ...lists: GPUTableEvaluator[][]) => GPUTableEvaluator,
  inputs: (GPUTableEvaluator | GPUVector)[],
  options: {chunks: number[]; keys: (k: number) => number[][]}
): GPUTableEvaluator;
/** `count` sint32 values from `start` by `step`. @example sequence(4, 10, 2) // 10, 12, 14, 16 */
export function sequence(count: number, start?: number, step?: number): GPUTableEvaluator<'sint32'>;
/** `[segmentIndex, indexInSegment]` (uint32) for each of `vertexCount` vertices. */
export function segmentedMap(segments: EvaluatorInput, vertexCount: number): GPUTableEvaluator<'uint32'>;
/** Float64 word pairs (from `fromArray(Float64Array)`) to float32 rows `[high..., low...]`. */
export function fround(x: EvaluatorInput): GPUTableEvaluator<'float32'>;
/** Reorders or duplicates lanes. @example swizzle(xyz, [2, 1, 0]) */
export function swizzle<X extends ColumnInput>(x: X, channels: readonly number[]): GPUTableEvaluator<TypeOf<X>>;
/**
 * Lane-wise `cond != 0 ? whenTrue : whenFalse`. Of dictionary columns, codes into one
 * dictionary, as `concat`'s; a string beside a text column is its code (added where new).
 */
export function select<A extends ArithmeticArgument, B extends ArithmeticArgument>(cond: ArithmeticArgument, whenTrue: A, whenFalse: B): GPUTableEvaluator<ArithmeticType<[A, B]>>;
export function select(cond: ArithmeticArgument, whenTrue: EvaluatorInput | string, whenFalse: EvaluatorInput | string): GPUTableEvaluator;
/** Row dot product (float32, size 1). */
export function dot(a: ArithmeticArgument, b: ArithmeticArgument): GPUTableEvaluator<'float32'>;
/** Row Euclidean length (float32, size 1). */
export function length(x: ArithmeticArgument): GPUTableEvaluator<'float32'>;
/** 1 where every lane of the two rows is equal, else 0 (uint32, size 1). */
export function equalAll(a: ArithmeticArgument, b: ArithmeticArgument): GPUTableEvaluator<'uint32'>;

/**
 * Predicate inputs: evaluators, vectors, numbers or number arrays (integer literals compare
 * exactly); a string compares with a dictionary column by value.
 */
export type PredicateArgument = EvaluatorInput | number | readonly number[] | string;
/** An argument of the ops no string is an argument of (masks, logic, rounding, extremes). */
export type NumericArgument = EvaluatorInput | number | readonly number[];
/**
 * 1 where `a == b`, else 0, per lane (uint8). Values compare exactly across types, as
 * JavaScript compares the same numbers; NaN equals nothing. Arithmetic's size, length and
 * broadcast rules. A dictionary column compares by its values: with a string (one not in
 * its dictionary equals no row) or with another dictionary column, whatever its codes.
 * Order comparisons of a dictionary column go by value too (strings in code-point order).
 * @example filter(x, equal(kind, 3))
 */
export function equal(a: PredicateArgument, b: PredicateArgument): GPUTableEvaluator<'uint8'>;
/** 1 where `a != b` (NaN is unequal to everything, itself included), else 0 (uint8). */
export function notEqual(a: PredicateArgument, b: PredicateArgument): GPUTableEvaluator<'uint8'>;
/** 1 where `a < b` exactly (NaN is never less), else 0 (uint8). @example less(fare, 10) */
export function less(a: PredicateArgument, b: PredicateArgument): GPUTableEvaluator<'uint8'>;
export function lessEqual(a: PredicateArgument, b: PredicateArgument): GPUTableEvaluator<'uint8'>;
export function greater(a: PredicateArgument, b: PredicateArgument): GPUTableEvaluator<'uint8'>;
export function greaterEqual(a: PredicateArgument, b: PredicateArgument): GPUTableEvaluator<'uint8'>;
/** 1 where every argument is nonzero (NaN counts as nonzero), folded left to right (uint8). */
export function and(...args: NumericArgument[]): GPUTableEvaluator<'uint8'>;
/** 1 where any argument is nonzero (uint8). */
export function or(...args: NumericArgument[]): GPUTableEvaluator<'uint8'>;
/** Exclusive or of the arguments' truth, folded left to right (uint8). */
export function xor(...args: NumericArgument[]): GPUTableEvaluator<'uint8'>;
/** 1 where `x` is 0 (uint8). */
export function not(x: NumericArgument): GPUTableEvaluator<'uint8'>;
/** 1 where `x` is NaN (uint8); integers are never NaN. */
export function isNaN(x: NumericArgument): GPUTableEvaluator<'uint8'>;
/** 1 where `x` is neither infinite nor NaN (uint8); integers are always finite. */
export function isFinite(x: NumericArgument): GPUTableEvaluator<'uint8'>;
/** The least argument per lane, folded left to right; NaN if any is NaN (as `Math.min`). */
export function minimum<Args extends NumericArgument[]>(...args: Args): GPUTableEvaluator<ArithmeticType<Args>>;
/** The greatest argument per lane; NaN if any is NaN (as `Math.max`). */
export function maximum<Args extends NumericArgument[]>(...args: Args): GPUTableEvaluator<ArithmeticType<Args>>;
/** `minimum(maximum(x, lo), hi)`. @example clamp(x, 0, 1) */
export function clamp<X extends NumericArgument, L extends NumericArgument, H extends NumericArgument>(x: X, lo: L, hi: H): GPUTableEvaluator<ArithmeticType<[X, L, H]>>;
/** Rounds down: float32 for a float input; integers are returned as they are. */
export function floor<X extends NumericArgument>(x: X): GPUTableEvaluator<TypeOf<X>>;
/** Rounds up: float32 for a float input; integers are returned as they are. */
export function ceil<X extends NumericArgument>(x: X): GPUTableEvaluator<TypeOf<X>>;
/** Rounds toward zero: float32 for a float input; integers are returned as they are. */
export function trunc<X extends NumericArgument>(x: X): GPUTableEvaluator<TypeOf<X>>;
/** Rounds to nearest, halves to even (as NumPy): float32 for a float input; integers are returned as they are. */
export function round<X extends NumericArgument>(x: X): GPUTableEvaluator<TypeOf<X>>;
/** -1, 0 or 1 in x's type (NaN stays NaN). */
export function sign<X extends NumericArgument>(x: X): GPUTableEvaluator<TypeOf<X>>;
/** The remainder with the sign of `b` (Python's `%`); integer `mod` by 0 is 0, float `mod` by 0 NaN. */
export function mod<A extends NumericArgument, B extends NumericArgument>(a: A, b: B): GPUTableEvaluator<ArithmeticType<[A, B]>>;

/** Evaluates every evaluator in `roots` (nested in arrays and plain objects) in one plan and releases every intermediate. */
export function cleanEvaluate<R>(device: Device | undefined | null, roots: R): Promise<R>;

/** A sparse component: a typed array, numbers or a `Float64Array` (uint32 for indices, float32 for values), an evaluator or a vector. */
export type SparseComponent = ArrayLike<number> | GPUTableEvaluator | GPUVector;

export interface SparseOptions {
  /** The device that validates and computes (default: the CPU). */
  device?: Device | null;
}

/**
 * A sparse matrix (0-based uint32 indices) whose components live on a device. Constructors
 * validate (`INVALID_ARGUMENT`): synchronously for arrays and components in host memory (on
 * a CPU device also for lazy components computed from such), else a Promise, validated on the
 * device (`await` works for both). Conversions whose entry count depends on the data are
 * Promises; `toDense()` and `multiply()` are lazy evaluators.
 */
export class SparseMatrix<T extends DataType = DataType> {
  private constructor();
  /** Components given as arrays: validated at once. */
  static fromCSR<V extends ArrayLike<number>>(fields: {rowPtr: ArrayLike<number>; colVal: ArrayLike<number>; nzVal: V; shape: readonly [number, number]}, options?: SparseOptions | null): SparseMatrix<ComponentType<V>>;
  static fromCSR<V extends SparseComponent>(fields: {rowPtr: SparseComponent; colVal: SparseComponent; nzVal: V; shape: readonly [number, number]}, options?: SparseOptions | null): SparseMatrix<ComponentType<V>> | Promise<SparseMatrix<ComponentType<V>>>;
  static fromCSC<V extends ArrayLike<number>>(fields: {colPtr: ArrayLike<number>; rowVal: ArrayLike<number>; nzVal: V; shape: readonly [number, number]}, options?: SparseOptions | null): SparseMatrix<ComponentType<V>>;
  static fromCSC<V extends SparseComponent>(fields: {colPtr: SparseComponent; rowVal: SparseComponent; nzVal: V; shape: readonly [number, number]}, options?: SparseOptions | null): SparseMatrix<ComponentType<V>> | Promise<SparseMatrix<ComponentType<V>>>;
  /** Duplicates allowed, in any order. */
  static fromCOO<V extends ArrayLike<number>>(fields: {rowInd: ArrayLike<number>; colInd: ArrayLike<number>; nzVal: V; shape: readonly [number, number]}, options?: SparseOptions | null): SparseMatrix<ComponentType<V>>;
  static fromCOO<V extends SparseComponent>(fields: {rowInd: SparseComponent; colInd: SparseComponent; nzVal: V; shape: readonly [number, number]}, options?: SparseOptions | null): SparseMatrix<ComponentType<V>> | Promise<SparseMatrix<ComponentType<V>>>;
  /** The nonzeros (NaN included) of `x`: `m` rows of size `n`. */
  static fromDense<X extends SparseComponent>(x: X, options?: (SparseOptions & {format?: 'csr' | 'csc' | 'coo'}) | null): Promise<SparseMatrix<ComponentType<X>>>;
  /** No stored entries. */
  static zeros<Z extends DataType = 'float32'>(shape: readonly [number, number], options?: (SparseOptions & {type?: Z; format?: 'csr' | 'csc' | 'coo'}) | null): SparseMatrix<Z>;
  readonly format: 'csr' | 'csc' | 'coo';
  readonly shape: [number, number];
  /** Stored entries, explicit zeros and duplicates included. */
  readonly nnz: number;
  readonly type: T;
  /** The device its operations run on: the one given, else the default CPU device. */
  readonly device: Device;
  readonly destroyed: boolean;
  /** CSR components (undefined in other formats). */
  readonly rowPtr?: GPUTableEvaluator<'uint32'>;
  readonly colVal?: GPUTableEvaluator<'uint32'>;
  /** CSC components. */
  readonly colPtr?: GPUTableEvaluator<'uint32'>;
  readonly rowVal?: GPUTableEvaluator<'uint32'>;
  /** COO components. */
  readonly rowInd?: GPUTableEvaluator<'uint32'>;
  readonly colInd?: GPUTableEvaluator<'uint32'>;
  readonly nzVal: GPUTableEvaluator<T>;
  /** Shape [n, m]; CSR becomes CSC of the transpose without moving data. */
  transpose(): SparseMatrix<T>;
  /** Row-major COO (duplicates and stored zeros kept). */
  toCOO(): SparseMatrix<T> & COOComponents;
  /** Canonical CSR: columns sorted within rows, duplicates summed. */
  toCSR(): Promise<SparseMatrix<T> & CSRComponents>;
  toCSC(): Promise<SparseMatrix<T> & CSCComponents>;
  /** `m` rows of size `n`. */
  toDense(): GPUTableEvaluator<T>;
  /** Every stored entry in row-major order, zeros included. */
  findnz(): {rows: GPUTableEvaluator<'uint32'>; cols: GPUTableEvaluator<'uint32'>; values: GPUTableEvaluator<T>};
  /** Entries with `col - row >= k`. */
  triu(k?: number): Promise<SparseMatrix<T>>;
  /** Entries with `col - row <= k`. */
  tril(k?: number): Promise<SparseMatrix<T>>;
  /** Entries with `|value| > tol`. */
  droptol(tol?: number): Promise<SparseMatrix<T>>;
  /** 2 (Frobenius, the default), 1 (sum of |v|), Infinity (largest |v|). */
  norm(p?: 1 | 2 | number): Promise<number>;
  /** 1 (largest column sum of |v|) or Infinity (largest row sum). */
  opnorm(p: 1 | number): Promise<number>;
  isZero(): Promise<boolean>;
  isSymmetric(): Promise<boolean>;
  /** Entry (i, j): 0 where nothing is stored, duplicates summed. */
  get(i: number, j: number): Promise<number>;
  /** `alpha * A x + beta * y`: `x` with `n` rows (size 1: SpMV; size k: SpMM) or a `SparseVector` of length `n`. */
  /** The products' type: the deduction rules' for the matrix's and `x`'s types. */
  multiply(x: Float32Array | Float64Array | readonly number[] | GPUTableEvaluator<'float32'> | GPUVector<'float32'> | SparseVector<'float32'>): GPUTableEvaluator<PromotionTable[T]['float32']>;
  multiply(x: Uint8Array | Uint8ClampedArray | GPUTableEvaluator<'uint8'> | GPUVector<'uint8'> | SparseVector<'uint8'>): GPUTableEvaluator<PromotionTable[T]['uint8']>;
  multiply(x: Int8Array | GPUTableEvaluator<'sint8'> | GPUVector<'sint8'> | SparseVector<'sint8'>): GPUTableEvaluator<PromotionTable[T]['sint8']>;
  multiply(x: Uint16Array | GPUTableEvaluator<'uint16'> | GPUVector<'uint16'> | SparseVector<'uint16'>): GPUTableEvaluator<PromotionTable[T]['uint16']>;
  multiply(x: Int16Array | GPUTableEvaluator<'sint16'> | GPUVector<'sint16'> | SparseVector<'sint16'>): GPUTableEvaluator<PromotionTable[T]['sint16']>;
  multiply(x: Uint32Array | GPUTableEvaluator<'uint32'> | GPUVector<'uint32'> | SparseVector<'uint32'>): GPUTableEvaluator<PromotionTable[T]['uint32']>;
  multiply(x: Int32Array | GPUTableEvaluator<'sint32'> | GPUVector<'sint32'> | SparseVector<'sint32'>): GPUTableEvaluator<PromotionTable[T]['sint32']>;
  /** With `alpha` (other than 1) the products are float32; with `beta` and `y`, `y`'s type joins. */
  multiply(x: SparseComponent | SparseVector, options?: {alpha?: number; beta?: number; y?: SparseComponent} | null): GPUTableEvaluator;
  /** Frees the components the matrix made; later use is `DESTROYED`. */
  destroy(): void;
}

/** A CSR matrix's components, there in that format. */
export interface CSRComponents {
  readonly format: 'csr';
  readonly rowPtr: GPUTableEvaluator<'uint32'>;
  readonly colVal: GPUTableEvaluator<'uint32'>;
}
/** A CSC matrix's components. */
export interface CSCComponents {
  readonly format: 'csc';
  readonly colPtr: GPUTableEvaluator<'uint32'>;
  readonly rowVal: GPUTableEvaluator<'uint32'>;
}
/** A COO matrix's components. */
export interface COOComponents {
  readonly format: 'coo';
  readonly rowInd: GPUTableEvaluator<'uint32'>;
  readonly colInd: GPUTableEvaluator<'uint32'>;
}

/**
 * A sparse vector (0-based uint32 indices; a one-column CSC matrix underneath). Arithmetic
 * and `kron` of vectors give vectors; `sum`, `min` and `max` give evaluators.
 */
export class SparseVector<T extends DataType = DataType> {
  private constructor();
  /** Indices in any order; duplicates add up. Validated (`INVALID_ARGUMENT`). */
  static fromArrays<V extends ArrayLike<number>>(fields: {nzInd: ArrayLike<number>; nzVal: V; length: number}, options?: SparseOptions | null): SparseVector<ComponentType<V>>;
  static fromArrays<V extends SparseComponent>(fields: {nzInd: SparseComponent; nzVal: V; length: number}, options?: SparseOptions | null): SparseVector<ComponentType<V>> | Promise<SparseVector<ComponentType<V>>>;
  /** The nonzeros (NaN included) of `x`, rows of size 1. */
  static fromDense<X extends SparseComponent>(x: X, options?: SparseOptions | null): Promise<SparseVector<ComponentType<X>>>;
  /** No stored entries. */
  static zeros<Z extends DataType = 'float32'>(length: number, options?: (SparseOptions & {type?: Z}) | null): SparseVector<Z>;
  readonly format: 'vector';
  readonly shape: [number];
  readonly length: number;
  /** Stored entries, explicit zeros and duplicates included. */
  readonly nnz: number;
  readonly type: T;
  readonly device: Device;
  readonly destroyed: boolean;
  readonly nzInd: GPUTableEvaluator<'uint32'>;
  readonly nzVal: GPUTableEvaluator<T>;
  /** `length` rows of size 1 (lazy). */
  toDense(): GPUTableEvaluator<T>;
  /** Every stored entry by index, zeros included. */
  findnz(): {indices: GPUTableEvaluator<'uint32'>; values: GPUTableEvaluator<T>};
  droptol(tol?: number): Promise<SparseVector<T>>;
  norm(p?: 1 | 2 | number): Promise<number>;
  isZero(): Promise<boolean>;
  /** Entry i: 0 where nothing is stored, duplicates summed. */
  get(i: number): Promise<number>;
  destroy(): void;
}

/** `kron(A, B)`: A(i, j) B(p, q) at row `i * mB + p`, column `j * nB + q`, in A's format. */
export function kron<A extends SparseVector, B extends SparseVector>(a: A, b: B): Promise<SparseVector<ArithmeticType<[A, B]>>>;
export function kron<A extends SparseMatrix, B extends SparseMatrix>(a: A, b: B): Promise<SparseMatrix<ArithmeticType<[A, B]>>>;
/** A vector with a matrix: the vector as its one-column matrix, the result a matrix. */
export function kron<A extends SparseOperand, B extends SparseOperand>(a: A, b: B): Promise<SparseMatrix<ArithmeticType<[A, B]>>>;
