// Typed examples of the API, compiled with `tsc --strict` by tests/node/typescript.test.js:
// every `Equals` must hold, and every line under `@ts-expect-error` must fail to compile
// (tsc reports a directive with no error under it).
import {
  GPUTableEvaluator as E, GPUVector, GpuTableError, Device, add, subtract, multiply, divide, sqrt, abs, sin,
  interleave, gather, extent, sum, min, mean, argmax, cast, concat, slice, select, swizzle, dot, equalAll,
  sequence, segmentedMap, fround, createDevice, init, GPUTable, SparseMatrix, SparseVector, SparseOperand, CSRComponents,
  argsort, sort, groupBy, histogram, unique, cumsum, filter, greater, join, searchSorted, GroupOp, GPUSchema, GPUField
} from 'gputable';
// The module's file, as a bundler's file loader gives it.
import wasmModuleUrl from 'gputable/wasm';
import webglModuleUrl from 'gputable/wasm-webgl';

type Equals<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
function expectType<Expected>() {
  return <Actual>(_value: Actual, ..._: Equals<Actual, Expected> extends true ? [] : [never]) => {};
}

export async function examples(bytes: Uint8Array) {
  await init();
  await init(bytes);
  await init(wasmModuleUrl);
  await init(wasmModuleUrl, webglModuleUrl);
  // @ts-expect-error a module is a URL, a Response, bytes or a compiled module
  await init(wasmModuleUrl, null);
  const device: Device = await createDevice({type: 'best', allowedMem: 1 << 20});

  // fromArray takes its type from the typed array; number[] is float32 unless a type is given.
  const f32 = E.fromArray(new Float32Array([1, 2, 3, 4, 5, 6]), {size: 3});
  const u8 = E.fromArray(new Uint8Array([200, 7]));
  const s8 = E.fromArray(new Int8Array([-1, 1]));
  const u32 = E.fromArray(new Uint32Array([1, 2]));
  expectType<E<'float32'>>()(f32);
  expectType<E<'uint8'>>()(u8);
  expectType<E<'uint8'>>()(E.fromArray(new Uint8ClampedArray([1])));
  expectType<E<'sint16'>>()(E.fromArray(new Int16Array([1])));
  expectType<E<'uint32'>>()(E.fromArray(new Float64Array([Math.PI])));
  expectType<E<'float32'>>()(E.fromArray([1, 2, 3]));
  expectType<E<'sint8'>>()(E.fromArray([1, 2, 3], {type: 'sint8'}));
  expectType<E<'float32'>>()(E.fromConstant(5));
  expectType<E<'uint32'>>()(E.fromConstant(5, 'uint32'));

  // Op results follow the deduction rules, and readValue() the result's type.
  const r = add(f32, [10, 20, 30], 1);
  await r.evaluate(device);
  expectType<Float32Array>()(await r.readValue());
  expectType<Uint8Array>()(await add(u8, u8).readValue());
  expectType<E<'sint16'>>()(add(u8, s8));
  expectType<E<'float32'>>()(add(u32, 1));
  expectType<E<'uint32'>>()(add(u32, E.fromConstant(1, 'uint32')));
  expectType<E<'float32'>>()(subtract(u32, s8));
  expectType<E<'sint32'>>()(multiply(E.fromArray(new Uint16Array([1])), s8, u8));
  expectType<E<'sint32'>>()(divide(E.fromArray(new Int32Array([-7, 7])), E.fromArray(new Int32Array([2, 0]))));
  expectType<E<'float32'>>()(sqrt(u8));
  expectType<E<'sint8'>>()(abs(s8));
  expectType<E<'float32'>>()(sin(u32));
  expectType<E<'uint8'>>()(interleave(u8, u8));
  expectType<E<'float32'>>()(gather(u32, f32));
  expectType<E<'uint8'>>()(extent(u8));
  expectType<E<'uint32'>>()(sum(u8));
  expectType<E<'sint32'>>()(sum(s8));
  expectType<E<'float32'>>()(sum(f32));
  expectType<E<'sint8'>>()(min(s8));
  expectType<E<'float32'>>()(mean(u8));
  expectType<E<'sint32'>>()(argmax(u8));
  expectType<E<'sint16'>>()(cast(f32, 'sint16'));
  expectType<E<'uint8'>>()(concat(u8, u8));
  const parts: E<'uint8'>[] = [u8, u8];
  expectType<E<'uint8'>>()(concat(...parts));
  const anyType: E[] = [u8, f32];
  expectType<E>()(concat(...anyType));
  expectType<E<'uint8'>>()(slice(u8, 0, 1));
  expectType<E<'sint16'>>()(select(u32, u8, s8));
  expectType<E<'float32'>>()(swizzle(f32, [2, 1, 0]));
  expectType<E<'float32'>>()(dot(f32, f32));
  expectType<E<'uint32'>>()(equalAll(u8, u8));
  expectType<E<'sint32'>>()(sequence(4, 10, 2));
  expectType<E<'uint32'>>()(segmentedMap(E.fromArray([0, 3], {type: 'uint32'}), 7));
  expectType<E<'float32'>>()(fround(E.fromArray(new Float64Array([Math.PI]))));

  // A vector keeps its type, and an evaluator over it too.
  const vector = await u8.evaluate(device);
  expectType<GPUVector<'uint8'>>()(vector);
  expectType<E<'uint16'>>()(add(vector, E.fromArray(new Uint16Array([1, 2]))));
  expectType<E<'uint8'>>()(E.fromVector(vector));
  expectType<Uint8Array>()(await vector.readValue());

  // An evaluator of unknown type gives a union, which narrows on `type`.
  const unknown: E = E.fromArray([1]);
  const values = await add(unknown, unknown).readValue();
  expectType<Float32Array | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array>()(values);
  expectType<E<'float32'>>()(add(unknown, 1));

  // Tables and sparse matrices.
  const table = await GPUTable.fromArrowIPC(bytes, {device, float64: 'words'});
  const column: GPUVector = table.getVector('x');
  // Arrays are validated at once; evaluators may be on a GPU device (validated there).
  const matrix = SparseMatrix.fromCSR({rowPtr: [0, 1], colVal: [0], nzVal: new Float32Array([2]), shape: [1, 1]});
  expectType<SparseMatrix<'float32'>>()(matrix);
  expectType<SparseMatrix<'float32'> | Promise<SparseMatrix<'float32'>>>()(SparseMatrix.fromCOO({rowInd: [0], colInd: [0], nzVal: f32, shape: [1, 1]}));
  const product = matrix.multiply(new Float32Array([3]));
  expectType<E<'float32'>>()(product);
  expectType<Promise<SparseMatrix<'float32'>>>()(add(matrix, matrix));
  expectType<SparseMatrix<'float32'>>()(multiply(matrix, 2));
  // A sparse matrix's values keep their type (the deduction rules where operands meet).
  const counts = SparseMatrix.fromCOO({rowInd: [0, 1], colInd: [1, 0], nzVal: new Uint8Array([1, 2]), shape: [2, 2]});
  expectType<SparseMatrix<'uint8'>>()(counts);
  expectType<E<'uint8'>>()(counts.nzVal);
  expectType<E<'uint8'>>()(counts.toDense());
  expectType<Promise<SparseMatrix<'uint8'> & CSRComponents>>()(counts.toCSR());
  expectType<E<'sint16'>>()(counts.multiply(new Int8Array([1, 2])));
  expectType<E<'float32'>>()(counts.multiply([1, 2]));
  expectType<E>()(counts.multiply(u8, {alpha: 2}));
  expectType<E<'uint32'>>()(sum(counts));
  expectType<Promise<SparseMatrix<'float32'>>>()(sqrt(counts));
  expectType<Promise<SparseMatrix<'sint16'>>>()(add(counts, SparseMatrix.zeros([2, 2], {type: 'sint8'})));
  expectType<SparseMatrix<'float32'>>()(multiply(counts, 2));
  const spread = SparseVector.fromArrays({nzInd: [0], nzVal: new Int32Array([3]), length: 2});
  expectType<SparseVector<'sint32'>>()(spread);
  expectType<E<'sint32'>>()(counts.multiply(spread));
  expectType<E<'float32'>>()(counts.multiply(new Float64Array([1, 2])));
  expectType<SparseMatrix<'float32'>>()(SparseMatrix.fromCOO({rowInd: [0], colInd: [0], nzVal: new Float64Array([1]), shape: [1, 1]}));
  // Operands of one type keep it, and a format's components (the first operand's format).
  const csr = await counts.toCSR();
  expectType<E<'uint32'>>()((await add(csr, csr)).rowPtr);
  expectType<E<'uint32'>>()((multiply(csr, 2)).rowPtr);
  const sameKind = <M extends SparseMatrix>(m: M): Promise<M> => add(m, m);
  expectType<Promise<SparseMatrix<'uint8'>>>()(sameKind(counts));
  const generic: SparseMatrix = counts;
  expectType<E>()(generic.toDense());

  // A fold that starts sparse and mixes in dense arguments may be either, or a Promise.
  type Folded = SparseOperand | E | Promise<SparseOperand | E>;
  expectType<Folded>()(add(matrix, matrix, 1));
  expectType<Folded>()(subtract(matrix, 1, matrix));
  expectType<SparseMatrix<'float32'>>()(multiply(matrix, 2, 3));
  // Options whose type is known only at run time, and read-only rows.
  const settings: {type?: 'uint8' | 'float32'; size: number} = {size: 1};
  expectType<E>()(E.fromArray([1, 2], settings));
  const row: readonly number[] = [1, 2];
  expectType<E<'float32'>>()(add(f32, row));

  try {
    column.destroy();
  } catch (error) {
    if (error instanceof GpuTableError) expectType<'GpuTableError'>()(error.name);
  }

  // Verbs take readonly arrays and `as const` options; groupBy's keys keep their types.
  const grouped = groupBy([u8, s8] as const, {n: 'count', m: ['mean', f32], s: ['sum', u8]} as const);
  expectType<[E<'uint8'>, E<'sint8'>]>()(grouped.keys);
  expectType<E<'uint32'>>()(grouped.n);
  expectType<E<'float32'>>()(grouped.m);
  expectType<E<'uint32'>>()(grouped.s);
  expectType<[E<'uint8'>]>()(groupBy(u8, {n: 'count'}).keys);
  expectType<E<'uint32'>>()(argsort([u8, s8] as const, {descending: [true, false] as const}));
  expectType<E<'sint8'>>()(sort(s8, {descending: [true]}));
  expectType<E<'uint32'>>()(histogram(f32, {edges: [0, 1, 2] as const}));
  // A number is a verb's column too: one float32 row, repeated beside a column.
  expectType<E<'float32'>>()(unique(3));
  expectType<E<'float32'>>()(cumsum(2, {exclusive: true}));
  expectType<[E<'uint8'>, E<'float32'>]>()(groupBy([u8, 1] as const, {s: ['sum', 2]} as const).keys);
  expectType<E<'float32'>>()(groupBy(u8, {s: ['max', 2]} as const).s);
  expectType<E<'float32'>>()(filter(7, greater(u8, 1)));
  expectType<E<'sint32'>>()(join(3, u8).left);
  expectType<E<'uint32'>>()(searchSorted(0, f32));
  // An aggregate whose op is known only at run time has a type known only then.
  const op = 'sum' as GroupOp;
  expectType<E>()(groupBy(u8, {value: [op, f32]}).value);
  // @ts-expect-error: 'keys' names the key columns
  groupBy(u8, {keys: 'count'});
  // @ts-expect-error: bins or edges, not both
  histogram(f32, {bins: 2, edges: [0, 1]});
  expectType<E<'uint32'>>()(histogram(f32, {edges: new Int32Array([0, 5])}));
  expectType<E<'uint8'>>()(swizzle(u8, [0, 0] as const));
  expectType<Device | null>()(new GPUTable().device);
  expectType<string[]>()(new GPUSchema([new GPUField({name: 'x', type: 'float32'})]).names);
  // @ts-expect-error: evaluators come from fromArray, fromConstant, fromVector and the ops
  new E();
  // @ts-expect-error: a sparse reduction takes no mask
  sum(matrix, {where: u8});
  // @ts-expect-error: a mask is numbers (a string compares with a dictionary column)
  filter(u8, 'Soho');
  expectType<E<'uint32'>>()((await matrix.toCSR()).rowPtr);
  const trips = new GPUTable();
  await trips.orderBy(['a', 'b'] as const);
  await trips.groupBy(['a'] as const).rollup({s: ['sum', 'x']} as const);
  await trips.join(trips, {on: ['a', 'b'] as const});
  expectType<E>()(select(u8, u8, 'a string'));
  // @ts-expect-error: nulls go first or last
  argsort(u8, {nulls: 'middle'});

  // What must not compile.
  // @ts-expect-error: readValue() of a float32 result is no Uint8Array
  const wrong: Uint8Array = await r.readValue();
  // @ts-expect-error: an unknown data type
  E.fromArray([1], {type: 'float64'});
  // @ts-expect-error: strings are no arithmetic arguments
  add(f32, 'one');
  // @ts-expect-error: a device type that does not exist
  await createDevice({type: 'metal'});
  // @ts-expect-error: cast to an unknown type
  cast(f32, 'int32');
  // @ts-expect-error: concat of different types
  concat(u8, f32);
  const mixed = [u8, f32];
  // @ts-expect-error: a spread of different types
  concat(...mixed);
  // @ts-expect-error: allowedMem is a number of bytes
  await createDevice({type: 'webgpu', allowedMem: '1GB'});
  // @ts-expect-error: the error codes are a closed set
  new GpuTableError('NOT_A_CODE', 'message');
  return wrong;
}
