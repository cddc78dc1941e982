// A plain reference for the reductions of api.md ("Chunked evaluation"), shared by the Node
// and headless-Chromium tests: per lane over the rows whose slot is valid, in float64.

export const REDUCTIONS = ['sum', 'min', 'max', 'mean', 'argmin', 'argmax', 'extent'];

/**
 * `kind` of `values` (`size` lanes per row) of `type`, counting the slots `valid(row, lane)`
 * accepts. A lane with no number gives NaN (0 in an integer type) or -1 for the arg-reductions.
 */
export function reduceReference(kind, type, values, size, valid = () => true) {
  const rows = values.length / size;
  const out = [];
  const wrap = v => type === 'float32' ? Math.fround(v) : type.startsWith('sint') ? v | 0 : v >>> 0;
  const none = type === 'float32' ? NaN : 0;
  for (let lane = 0; lane < size; lane++) {
    const slots = [];
    for (let r = 0; r < rows; r++) if (valid(r, lane)) slots.push([r, Number(values[r * size + lane])]);
    const numbers = slots.filter(([, v]) => !Number.isNaN(v));
    const least = Math.min(...numbers.map(([, v]) => v));
    const most = Math.max(...numbers.map(([, v]) => v));
    const first = target => numbers.find(([, v]) => v === target)?.[0] ?? -1;
    const total = slots.reduce((s, [, v]) => s + v, 0);
    switch (kind) {
      case 'sum': out.push(wrap(total)); break;
      case 'mean': out.push(Math.fround(total / slots.length)); break;
      case 'min': out.push(numbers.length ? least : none); break;
      case 'max': out.push(numbers.length ? most : none); break;
      case 'extent': out.push(...(numbers.length ? [least, most] : [none, none])); break;
      case 'argmin': out.push(first(least)); break;
      case 'argmax': out.push(first(most)); break;
    }
  }
  return out;
}

/** Values of each type with ties and (for float32) NaN, small enough that sums are exact. */
export function reductionSample(Typed, length) {
  return Typed.from({length}, (_, i) => {
    if (Typed === Float32Array) return i % 7 === 3 ? NaN : ((i * 37) % 17 - 8) / 4;
    const v = (i * 37) % 9;
    return Typed.name.startsWith('Int') ? v - 4 : v;
  });
}

/** The first value of `got` that differs from `want` (NaN equal to NaN), or null. */
export function firstDifference(got, want, tolerance = 0) {
  if (got.length !== want.length) return `${got.length} values instead of ${want.length}`;
  for (let i = 0; i < want.length; i++) {
    const [a, b] = [Number(got[i]), want[i]];
    const bad = Number.isNaN(b) ? !Number.isNaN(a) : !(Math.abs(a - b) <= tolerance * Math.max(Math.abs(b), 1));
    if (bad) return `value ${i}: ${a} instead of ${b}`;
  }
  return null;
}
