// The operations of api.md over evaluators, vectors, numbers and sparse operands.
import {wasm} from './bindings.js';
import {fail, guard, nameOf} from './errors.js';
import {isNumberArray, options} from './types.js';
import {resolveDevice, withHandles, withHandlesAsync} from './devices.js';
import {GPUVector} from './vectors.js';
import {GPUTableEvaluator, denseFold, denseUnary, describe, handleOf, withList, wrap} from './evaluator.js';
import {isSparse, oneShape, sparseFold, sparseReduce, sparseUnary} from './sparse.js';
import {byValue, coded, dictionaryOf, filledByValue, isValue, joinKeys, numbersOf, ranked, reducedByValue, reducedInput, searchedByValue, sharedCodes, unranked} from './dictionaries.js';

function fold(op, args) {
  // One evaluator is the result itself (the engine also gives back the same node).
  if (args.length === 1 && args[0] instanceof GPUTableEvaluator && !dictionaryOf(args[0])) return args[0];
  if (args.some(isSparse)) return sparseFold(op, args);
  return numericFold(op, args);
}

// Arithmetic takes a dictionary of numbers by its values (of strings: TYPE_MISMATCH).
const numericFold = (op, args) => denseFold(op, args.map(x => numbersOf(x, op)));
const numericUnary = (op, x) => denseUnary(op, numbersOf(x, op));
const unary = (op, x) => (isSparse(x) ? sparseUnary(op, x) : numericUnary(op, x));

export const add = (...args) => fold('add', args);
export const subtract = (...args) => fold('subtract', args);
export const multiply = (...args) => fold('multiply', args);
export const divide = (...args) => fold('divide', args);
export const pow = (base, exponent) => {
  // Arithmetic: sparse operands need one shape (concat and interleave join any).
  if (isSparse(base) && isSparse(exponent)) oneShape([base, exponent]);
  return numericFold('pow', [base, exponent]);
};
export const sqrt = x => unary('sqrt', x);
export const abs = x => unary('abs', x);
export const sin = x => unary('sin', x);
export const cos = x => unary('cos', x);
export const tan = x => unary('tan', x);
export const exp = x => unary('exp', x);
export const log = x => unary('log', x);

export function interleave(...args) {
  if (args.length === 1 && args[0] instanceof GPUTableEvaluator) return args[0];
  return withList(args, list => wasm.interleave(list));
}

export function gather(ids, source) {
  return coded(wrap(() => wasm.gather(handleOf(ids), handleOf(source))), dictionaryOf(source));
}

// A reduction over every row, skipping null rows (and those `where` drops): a partial per
// chunk, then combines of at most `splitEvery` partials, then the final row.
function reduction(kind, x, settings) {
  if (isSparse(x) && ['sum', 'min', 'max'].includes(kind)) return sparseReduce(kind, x, settings);
  // The engine checks splitEvery and gives it api.md's default.
  const {splitEvery, where} = options(settings, kind, ['splitEvery', 'where']);
  const input = handleOf(reducedInput(kind, x));
  const mask = where === undefined ? [] : [handleOf(where)];
  return reducedByValue(kind, wrap(() => withHandles(mask, masks => wasm.reduce(kind, input, splitEvery, masks))), x);
}

export function searchSorted(sorted, values, settings) {
  const {side} = options(settings, 'searchSorted', ['side']);
  const [keys, found] = searchedByValue(sorted, values).map(comparand);
  return wrap(() => wasm.searchSorted(handleOf(keys), handleOf(found), side));
}

export function argsort(keys, settings) {
  const {descending, nulls} = options(settings, 'argsort', ['descending', 'nulls']);
  return withList((Array.isArray(keys) ? keys : [keys]).map(ranked), list => wasm.argsort(list, descending, nulls));
}

export function sort(x, settings) {
  if (dictionaryOf(x)) return gather(argsort(x, settings), x);
  const {descending, nulls} = options(settings, 'sort', ['descending', 'nulls']);
  return wrap(() => wasm.sort(handleOf(x), descending, nulls));
}

export function topK(x, k, settings) {
  const {descending} = options(settings, 'topK', ['descending']);
  const [values, indices] = guard(() => wasm.topK(handleOf(ranked(x)), k, descending)).map(handle => new GPUTableEvaluator(handle));
  return {values: dictionaryOf(x) ? gather(indices, x) : values, indices};
}

function cumulative(op, x, settings) {
  const {exclusive, reverse} = options(settings, op, ['exclusive', 'reverse']);
  return wrap(() => wasm.cumulative(op, handleOf(numbersOf(x, op)), exclusive, reverse));
}
export const cumsum = (x, settings) => cumulative('cumsum', x, settings);
export const cumprod = (x, settings) => cumulative('cumprod', x, settings);
export const cummin = (x, settings) => cumulative('cummin', x, settings);
export const cummax = (x, settings) => cumulative('cummax', x, settings);

export const count = mask => wrap(() => wasm.count(handleOf(mask)));
export const filter = (x, mask) => coded(wrap(() => wasm.filter(handleOf(x), handleOf(comparand(mask)))), dictionaryOf(x));
export function unique(x) {
  const values = wrap(() => wasm.unique(handleOf(ranked(x))));
  return dictionaryOf(x) ? unranked(values, dictionaryOf(x), x.type) : values;
}
export function valueCounts(x) {
  const [values, counts] = guard(() => wasm.valueCounts(handleOf(ranked(x)))).map(handle => new GPUTableEvaluator(handle));
  return {values: dictionaryOf(x) ? unranked(values, dictionaryOf(x), x.type) : values, counts};
}
// `groupBy(keys, {name: 'count' | [op, x]})`: `{keys: [...], ...name}`, one row per group.
export function groupBy(keys, aggregates) {
  const keyList = Array.isArray(keys) ? keys : [keys];
  if (aggregates === null || typeof aggregates !== 'object' || Array.isArray(aggregates)) {
    fail('INVALID_ARGUMENT', "groupBy's aggregates are an object of name: 'count' or name: [op, x]");
  }
  const names = Object.keys(aggregates);
  const ops = [];
  const values = [];
  const valued = new Uint8Array(names.length);
  names.forEach((name, i) => {
    const spec = aggregates[name];
    if (name === 'keys') fail('INVALID_ARGUMENT', "groupBy's aggregates cannot be named 'keys'");
    if (typeof spec === 'string') {
      ops.push(spec);
    } else if (Array.isArray(spec) && spec.length === 2 && typeof spec[0] === 'string') {
      ops.push(spec[0]);
      values.push(handleOf(reducedInput(spec[0], spec[1])));
      valued[i] = 1;
    } else {
      fail('INVALID_ARGUMENT', `groupBy's aggregate '${name}' is 'count' or [op, x]`);
    }
  });
  const results = guard(() => withHandles(keyList.map(key => handleOf(ranked(key))), keyHandles =>
    withHandles(values, valueHandles => wasm.groupBy(keyHandles, ops, valueHandles, valued))));
  const evaluators = results.map(handle => new GPUTableEvaluator(handle));
  const keysOut = evaluators.slice(0, keyList.length).map((key, k) => {
    const dictionary = dictionaryOf(keyList[k]);
    return dictionary ? unranked(key, dictionary, keyList[k].type) : key;
  });
  const grouped = {keys: keysOut};
  names.forEach((name, i) => {
    const spec = aggregates[name];
    const result = evaluators[keyList.length + i];
    grouped[name] = typeof spec === 'string' ? result : reducedByValue(spec[0], result, spec[1]);
  });
  return grouped;
}
// `histogram(x, {bins, range = 'auto'} | {edges}, {where})`: uint32 counts per bin.
export function histogram(x, spec, settings) {
  const {bins, range, edges, where: inner} = options(spec, 'histogram', ['bins', 'range', 'edges', 'where']);
  const {where = inner} = options(settings, 'histogram', ['where']);
  const onDevice = edges instanceof GPUTableEvaluator || edges instanceof GPUVector;
  const deviceEdges = onDevice ? [handleOf(numbersOf(edges, 'histogram'))] : [];
  const mask = where === undefined ? [] : [handleOf(comparand(where))];
  return wrap(() => withHandles(deviceEdges, edgeList => withHandles(mask, maskList =>
    wasm.histogram(handleOf(numbersOf(x, 'histogram')), bins, range, onDevice ? undefined : edges, edgeList, maskList))));
}
// `join(leftKeys, rightKeys, {how = 'inner', capacity})`: `{left, right}` sint32 row pairs.
export function join(leftKeys, rightKeys, settings) {
  const {how = 'inner', capacity} = options(settings, 'join', ['how', 'capacity']);
  if (typeof how !== 'string') fail('INVALID_ARGUMENT', "join's how is 'inner' or 'left'");
  if (capacity !== undefined && typeof capacity !== 'number') fail('INVALID_ARGUMENT', "join's capacity is a number of rows");
  const [a, b] = joinKeys(leftKeys, rightKeys);
  const [left, right, pairs] = guard(() => wasm.join(handleOf(a), handleOf(b), how, capacity, false, false))
    .slice(0, 3).map(handle => new GPUTableEvaluator(handle));
  pairs.destroy();
  return {left, right};
}
export function lookup(keys, tableKeys) {
  const [a, b] = joinKeys(keys, tableKeys).map(comparand);
  return wrap(() => wasm.lookup(handleOf(a), handleOf(b)));
}
export const isNull = x => wrap(() => wasm.isNull(handleOf(x)));
export const isValid = x => wrap(() => wasm.isValid(handleOf(x)));
// A dictionary column keeps its dictionary and is filled by one of its values (a number
// is a value of a dictionary of numbers, of text a code).
export function fillNull(x, value) {
  const dictionary = dictionaryOf(x);
  const byValue = dictionary && (isValue(value) || (typeof value === 'number' && typeof dictionary[0] !== 'string'));
  const [codes, code, filled] = byValue ? filledByValue(x, value) : [x, value, dictionary];
  if (dictionary && !byValue && typeof code === 'number' && !(Number.isInteger(code) && code >= 0 && code < dictionary.length)) {
    fail('INVALID_ARGUMENT', `fillNull's code ${code} is not one of the dictionary's ${dictionary.length}`);
  }
  return coded(wrap(() => wasm.fillNull(handleOf(codes), handleOf(comparand(code)))), filled);
}

export const extent = (x, settings) => reduction('extent', x, settings);
export const sum = (x, settings) => reduction('sum', x, settings);
export const min = (x, settings) => reduction('min', x, settings);
export const max = (x, settings) => reduction('max', x, settings);
export const mean = (x, settings) => reduction('mean', x, settings);
export const argmin = (x, settings) => reduction('argmin', x, settings);
export const argmax = (x, settings) => reduction('argmax', x, settings);

export function cast(x, type) {
  const name = nameOf(type, "cast's type");
  return wrap(() => wasm.cast(handleOf(numbersOf(x, 'cast')), name));
}

// Ops that move rows keep a dictionary column's values.
export function concat(...inputs) {
  const [list, dictionary] = sharedCodes(inputs, 'concat');
  return coded(withList(list, handles => wasm.concat(handles)), dictionary);
}

export function slice(x, start, end) {
  return coded(wrap(() => wasm.slice(handleOf(x), start, end)), dictionaryOf(x));
}

export function rechunk(x, chunks) {
  return coded(wrap(() => wasm.rechunk(handleOf(x), chunks)), dictionaryOf(x));
}

// The chunks of a block op's input: a filter's result has them only once evaluated.
function chunksOf(evaluator, what) {
  const chunks = evaluator.chunks;
  if (chunks === null) fail('INVALID_ARGUMENT', `${what} needs its input's chunks, which a result whose length depends on the data has only once evaluated`);
  return chunks;
}

// Row offset of each chunk of `counts`, and the end.
function offsetsOf(counts) {
  const offsets = [0];
  for (const rows of counts) offsets.push(offsets[offsets.length - 1] + rows);
  return offsets;
}

// An evaluator argument (or a GPUVector, as one), checked alive.
function evaluatorOf(arg, what) {
  if (arg instanceof GPUVector) return GPUTableEvaluator.fromVector(arg);
  if (arg instanceof GPUTableEvaluator) {
    arg._live();
    return arg;
  }
  return fail('INVALID_ARGUMENT', `${what} must be an evaluator or a GPUVector, got ${describe(arg)}`);
}

// `fn`'s result for one block, checked to be an evaluator of `rows` rows (when given).
function blockResult(result, k, rows) {
  if (!(result instanceof GPUTableEvaluator)) fail('INVALID_ARGUMENT', `the block function returned ${describe(result)} for block ${k}, not an evaluator`);
  if (rows !== undefined && result.length !== rows) {
    fail('INVALID_ARGUMENT', `block ${k} has ${result.length} rows; its chunk has ${rows}`);
  }
  return result;
}

export function mapBlocks(fn, ...inputs) {
  if (typeof fn !== 'function') fail('INVALID_ARGUMENT', 'mapBlocks needs a function');
  if (inputs.length === 0) fail('INVALID_ARGUMENT', 'mapBlocks needs at least one input');
  const evaluators = inputs.map(x => evaluatorOf(x, 'a mapBlocks input'));
  const counts = evaluators.map(e => chunksOf(e, 'mapBlocks'));
  if (counts.some(c => c.length !== counts[0].length)) {
    fail('INVALID_ARGUMENT', `mapBlocks inputs need the same number of chunks, got ${counts.map(c => c.length).join(' and ')}`);
  }
  const offsets = counts.map(offsetsOf);
  const blocks = counts[0].map((_, k) => {
    const block = evaluators.map((e, i) => slice(e, offsets[i][k], offsets[i][k + 1]));
    return blockResult(fn(...block, {blockId: k, rowOffset: offsets[0][k]}), k);
  });
  return concat(...blocks);
}

export function blockwise(fn, inputs, settings) {
  if (typeof fn !== 'function') fail('INVALID_ARGUMENT', 'blockwise needs a function');
  if (!Array.isArray(inputs)) fail('INVALID_ARGUMENT', 'blockwise inputs must be an array');
  const {chunks, keys} = options(settings, 'blockwise', ['chunks', 'keys']);
  if (!Array.isArray(chunks) || chunks.length === 0 || !chunks.every(n => Number.isInteger(n) && n >= 0)) {
    fail('INVALID_ARGUMENT', 'blockwise chunks must be a non-empty array of row counts');
  }
  if (typeof keys !== 'function') fail('INVALID_ARGUMENT', 'blockwise keys must be a function of the output chunk');
  const evaluators = inputs.map(x => evaluatorOf(x, 'a blockwise input'));
  const offsets = evaluators.map(e => offsetsOf(chunksOf(e, 'blockwise')));
  const blocks = chunks.map((rows, k) => {
    const wanted = keys(k);
    if (!Array.isArray(wanted) || wanted.length !== evaluators.length) {
      fail('INVALID_ARGUMENT', `keys(${k}) must give one list of chunk indices per input`);
    }
    const lists = wanted.map((indices, i) => {
      const count = evaluators[i].chunks.length;
      if (!Array.isArray(indices)) fail('INVALID_ARGUMENT', `keys(${k})[${i}] must be an array of chunk indices`);
      return indices.map(j => {
        if (!Number.isInteger(j) || j < 0 || j >= count) fail('INVALID_ARGUMENT', `keys(${k})[${i}] names chunk ${j}; input ${i} has ${count}`);
        return slice(evaluators[i], offsets[i][j], offsets[i][j + 1]);
      });
    });
    return blockResult(fn(k, ...lists), k, rows);
  });
  return rechunk(concat(...blocks), chunks);
}

export function sequence(count, start, step) {
  return wrap(() => wasm.sequence(count, start, step));
}

export function segmentedMap(segments, vertexCount) {
  return wrap(() => wasm.segmentedMap(handleOf(segments), vertexCount));
}

export const fround = x => wrap(() => wasm.fround(handleOf(x)));

export function swizzle(x, channels) {
  return wrap(() => wasm.swizzle(handleOf(x), channels));
}

// Of dictionary columns, codes into one dictionary; a value of a dictionary column's kind
// (a string) as its code, added where new.
export function select(cond, whenTrue, whenFalse) {
  let [a, b] = [whenTrue, whenFalse];
  let dictionary = null;
  const code = (codes, value) => GPUTableEvaluator.fromConstant(value, codes.type);
  if (isValue(b) && dictionaryOf(a)) [a, b, dictionary] = filledByValue(a, b);
  else if (isValue(a) && dictionaryOf(b)) [b, a, dictionary] = filledByValue(b, a);
  else [[a, b], dictionary] = sharedCodes([a, b], 'select');
  if (typeof a === 'number' && dictionary) a = code(b, a);
  if (typeof b === 'number' && dictionary) b = code(a, b);
  return coded(wrap(() => wasm.select(handleOf(cond), handleOf(a), handleOf(b))), dictionary);
}

export const dot = (a, b) => wrap(() => wasm.dot(handleOf(a), handleOf(b)));
export const length = x => wrap(() => wasm.length(handleOf(x)));
export const equalAll = (a, b) => wrap(() => wasm.equalAll(handleOf(a), handleOf(b)));

// A comparison's number literal: integers as sint32 or uint32 constants, so they compare
// exactly (a float32 literal would round 4294967295 to 4294967296); other numbers float32.
function comparand(arg) {
  const row = typeof arg === 'number' ? [arg] : isNumberArray(arg) && arg.length > 0 ? arg : null;
  if (!row || !row.every(Number.isInteger)) return arg;
  if (row.every(v => v >= -0x80000000 && v < 0x80000000)) return GPUTableEvaluator.fromConstant(arg, 'sint32');
  if (row.every(v => v >= 0 && v <= 0xffffffff)) return GPUTableEvaluator.fromConstant(arg, 'uint32');
  return arg;
}

const predicate = (op, args) => withList(args, list => wasm.predicate(op, list));
const comparison = op => (a, b) => {
  if (isValue(a) || isValue(b) || dictionaryOf(a) || dictionaryOf(b)) [a, b] = byValue(op, a, b);
  return predicate(op, [comparand(a), comparand(b)]);
};
export const equal = comparison('equal');
export const notEqual = comparison('notEqual');
export const less = comparison('less');
export const lessEqual = comparison('lessEqual');
export const greater = comparison('greater');
export const greaterEqual = comparison('greaterEqual');

export const and = (...args) => withList(args, list => wasm.foldLogic('and', list));
export const or = (...args) => withList(args, list => wasm.foldLogic('or', list));
export const xor = (...args) => withList(args, list => wasm.foldLogic('xor', list));
export const not = x => predicate('not', [x]);
export const isNaN = x => predicate('isNaN', [x]);
export const isFinite = x => predicate('isFinite', [x]);
export const minimum = (...args) => numericFold('minimum', args);
export const maximum = (...args) => numericFold('maximum', args);
export const clamp = (x, lo, hi) => wrap(() => wasm.clamp(...[x, lo, hi].map(v => handleOf(numbersOf(v, 'clamp')))));
export const mod = (a, b) => numericFold('mod', [a, b]);
export const floor = x => numericUnary('floor', x);
export const ceil = x => numericUnary('ceil', x);
export const trunc = x => numericUnary('trunc', x);
export const round = x => numericUnary('round', x);
export const sign = x => numericUnary('sign', x);

function collectEvaluators(value, found, seen) {
  if (value instanceof GPUTableEvaluator) {
    found.add(value);
  } else if (value && typeof value === 'object' && !seen.has(value)) {
    seen.add(value);
    const items = Array.isArray(value) ? value : Object.getPrototypeOf(value) === Object.prototype ? Object.values(value) : [];
    for (const item of items) collectEvaluators(item, found, seen);
  }
  return found;
}

export async function cleanEvaluate(device, roots) {
  if (roots === null || typeof roots !== 'object') fail('INVALID_ARGUMENT', 'cleanEvaluate takes an evaluator, or an array or object of them');
  const target = resolveDevice(device);
  const evaluators = [...collectEvaluators(roots, new Set(), new Set())];
  await withHandlesAsync(evaluators.map(e => e._live()), list => target._handle.cleanEvaluate(list));
  return roots;
}

