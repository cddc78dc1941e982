// What a page's default import of the package downloads: the browser entry, the modules it
// imports statically, and the default wasm module `init()` fetches; and the WebGL2 module
// loaded on demand. Printed by the build, checked by tests/node/size.test.js.
import {readFileSync} from 'node:fs';
import {dirname, join, relative, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {gzipSync} from 'node:zlib';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist');

/**
 * The default import's budget, gzipped: issue 12's 500 kB, plus 15 kB for issue 38's verbs
 * on every backend: predicates, `where` reductions and `searchSorted` (about 12 kB, less what
 * was saved), then nulls through expressions, the generalised scans with `cumsum`..`cummax`,
 * and `argsort`/`sort`/`topK` (8 kB, less 2.2 kB saved: `searchSorted`'s CPU search and the
 * float32-only CPU ops instantiated once), and the CPU scan's loops over contiguous columns
 * (2 kB, for a 50x faster `cumsum`): 512.4 kB. Then results counted on the device (`filter`,
 * `unique`, and every op, view and verb over them: 35 kB before gzip, 11 kB gzipped):
 * 523.5 kB. Then the table verbs' table of computed columns (11 kB before gzip, 4.8 kB
 * gzipped; 6.8 kB of it the async export's state machine): 528.4 kB. Then the CPU's top-k
 * (`topK` of a few rows in one read of the keys, 3x faster: 1.3 kB gzipped): 530.6 kB, a
 * raise made with no shrink first. Then sparse results counted on the device (the
 * compaction's count read gone: -0.9 kB) and argmin and argmax sharing one CPU folder per
 * type (their direction a value, not a type: -1.3 kB, no slower): 528.5 kB. Then sorts
 * larger than `allowedMem` as runs and a merge (api.md "Memory": the runs' projection, the
 * multi-sequence selection cutting the runs, the runs and merge blocks evaluated through
 * the object-safe `Evaluates`, so once for every backend; 36 kB before gzip, 13.9 kB
 * gzipped), and sorts past one binding or texture tile run the same way (1.3 kB): 543.7 kB,
 * a raise made with no shrink first. Then filters by one mask sharing its kept rows (V9 2.2x
 * faster; 1.0 kB): 544.7 kB; then the review's mends to the runs (a sort waiting for another,
 * errors releasing what they computed: 0.6 kB): 545.3 kB. Then std's sorts (quicksort
 * instances for a sort's buckets, a schedule's frees, a plan's members) replaced by one
 * small heapsort: -6.8 kB; the CPU kernels against the JS loops (comparisons per class,
 * scans per fold, lockstep searches, a sort by counts, repeated-id gathers): +3.4 kB;
 * 542.4 kB, and the budget lowered to 543.5 kB. Then walks (`Op::Compact`, `Op::Scan`: one
 * loop on the CPU, composed elsewhere; the CPU's group folds dropped): +1.7 kB, 544.2 kB
 * (V3 2x, V9 2.5x, V10 2.7x faster), the budget raised to 544.5 kB. Then `valueCounts` (a
 * new export: its binding, shim and the runs it shares with `unique`) and the review's mends
 * (walk outputs in the ledger, reversed folds of counted rows): +1.8 kB, 546.0 kB, the
 * budget raised to 546.5 kB. Then issue 39's verbs composed of the IR's primitives:
 * `groupBy` (nine aggregates, `unique` and `valueCounts` rebuilt on it), `histogram` (exact
 * edges in each type, 'auto' edges on the device), `lookup`, their exports and shims, and a
 * CPU sort's bucket count in u64: 560.6 kB measured on a fresh machine (rustc 1.95), the
 * budget raised to 561.5 kB, a raise made with no shrink first and with the stop before
 * not rebuilt on this machine (part of the 14.6 kB may be the toolchain's). Then `join` (its
 * pairs, the engine's checks after an evaluation, `table.join`'s binding) and temporal Arrow
 * types: +4.1 kB, 564.8 kB; then the bin count walk (`Op::BinCount`: the CPU's loop, the
 * GPUs' composition) and `valueCounts` of 8- and 16-bit integers through it: +1.9 kB,
 * 566.7 kB, the budget raised to 567.5 kB, again with no shrink first. Then text and
 * dictionary columns (the reader's distinct strings and kept dictionary values, the writer's
 * dictionary messages, dictionaries across the JS boundary, the ops' ranks and code tables
 * in JS) with the writer's schema built by our own flatbuffer code in place of arrow-ipc's
 * encoder and dictionary tracker (which saved 4.9 kB of it), `groupBy` of small keys by bin
 * sums (`Op::BinSum`: the CPU's walk, the GPUs' composition) and the CPU's search of few
 * keys: +13.1 kB, 579.8 kB, the budget raised to 580.5 kB, with no further shrink first.
 * Then the group-by in parts under `allowedMem` (`ir/group_stages.rs`, `engine/
 * staged_group.rs`: its parts' graphs, the read-back and the combination; not yet measured
 * by the name section, which is where to look first): +11.0 kB, 590.8 kB, the budget raised
 * to 591.5 kB, with no shrink first. Then the budget's projection of views sharing a
 * table's batches and of passes composed of other ops' passes (their own schedule's peak):
 * +0.9 kB, 591.7 kB, the budget raised to 592.5 kB, with no shrink first. Then WebGPU's
 * atomic bin counts and sums (shaders/bins.wgsl, src/gpu/bins.rs) and the CPU's search index
 * of many sorted keys (`SearchIndex`, one instance for both sides): +3.0 kB, 594.7 kB, the
 * budget raised to 595.5 kB, again with no shrink first (not yet traced in the name
 * section). Then bin passes computing their input where they add it, on the CPU and WebGPU
 * (the CPU region's bin adder, the executor's bin pass once per backend: +3.2 kB before
 * gzip, the generated WebGPU bin kernel), less the walks they replaced, with a histogram's
 * bin in fewer ops and an estimate-first search of evenly spread keys: +1.9 kB, measured
 * against the commit before on one machine (the name section: Run::schedule +3.2 kB,
 * run_blocks +2.4 kB, bins_kernel +2.5 kB, the CPU walks -4.7 kB), 596.7 kB, the budget
 * raised to 597.5 kB, with a 26-byte shrink first (one search of evenly spread keys for
 * both sides). Then WebGPU's float bin sums added exactly (shaders/bins.wgsl's `float` and
 * `float_finish`, the rounding dispatch, an async `finish_bins`) and 32-bit keys counted by
 * their host range (`small_bins`): +3.3 kB, 600.0 kB (measured once build.rs named each
 * shader file for cargo: edits to a shader had left its stripped copy stale), the budget
 * raised to 600.5 kB, with no shrink first. Then WebGPU's lookups by a hash table
 * (`Op::Lookup`, a walk of two or three inputs: shaders/lookup.wgsl, src/gpu/lookup.rs, the
 * executor's native walk now live for WebGPU, G6 10x faster there): +5.3 kB, 605.7 kB (the
 * name section: the lookup's recording 5.0 kB, Run::schedule +3.3 kB, compose_lookup 0.8 kB
 * before gzip), the budget raised to 606.0 kB, with no shrink first. Then irregular
 * float edges searched as uint32 sort keys (G5 on WebGPU 99 ms to 72): +0.4 kB, 606.1 kB,
 * the budget raised to 606.5 kB, with a shrink first of a few bytes (one float sort key
 * for the CPU's keys and the edges'). Then the CPU's searches of evenly spread keys without
 * reading a key (a branch-free loop that vectorizes, ids answered in it), ascending queries
 * walking an indexed column, and a table join's pairs evaluated with their number (T9 7.0 ms
 * to 3.3, T10 58.9 to 35.3 at 1M): +1.2 kB, 607.6 kB, the budget raised to 608.0 kB, with
 * no shrink first (tried: float formatting, 18 kB before gzip, stays while any f64 is
 * displayed anywhere; the messages' `{:.0}` alone are not what keeps it). Then Arrow
 * dictionaries of other values read as their values (+0.7 kB, 608.3 kB), and a shrink: the
 * CPU's segmented sums of values computed where read add each stored type into its own class
 * only (`own_lanes`: 7 instances of the sum loops where there were 21, `segment_sums` 28 kB to
 * 7 kB before gzip): -2.6 kB, 605.7 kB, the budget lowered to 606.0 kB (605.8 kB after the
 * reread's bucket fallback for far ascending queries and the dictionary buffers' checks).
 * Then every Arrow dictionary kept as a dictionary (api.md "Tables"): 64-bit integers,
 * booleans, dates, times, timestamps and durations kept as their stored integers with their
 * Arrow type and written back so (the flatbuffer builders of the temporal types, the
 * integers' reading and writing, their source handed to JS as typed arrays; shown as
 * apache-arrow decodes them by js/dictionary-source.js, not by Rust): +4.6 kB, 610.4 kB, the
 * budget raised to 610.5 kB, with no shrink first. Then WebGPU's `topK` without sorting
 * every row (shaders/top_k.wgsl: each run of 256 rows keeps its first k in one pass, the
 * radix sort orders those candidates alone; 4.4x faster at 1M rows, 6.2x at 10M on
 * lavapipe): the kernels' template and its generator, and the sort's body no longer inlined
 * into the executor's schedule loop (a function of its own holding both paths, 17 kB before
 * gzip; the schedule loop 9 kB smaller): +5.5 kB, 615.9 kB, the budget raised to 616.0 kB,
 * with no shrink first. Then dictionaries of dates and timestamps compared as exact
 * nanoseconds, numbers meeting bigint dictionaries exactly, and a source's values checked to
 * fit its type (a review's findings): +0.6 kB, 616.5 kB, the budget raised to 617.0 kB
 * (616.3 kB after the reread). Then WebGPU's radix sort by subgroup ballots where the
 * adapter has `subgroups` (issue 38: shaders/radix_sort.wgsl's `lanes`, `count_lanes` and
 * `place_lanes`, 1.2 kB of the growth; asking the browser's device for the feature and
 * whether it has it): +2.2 kB, 618.5 kB, the budget raised to 619.0 kB, with no shrink
 * first. Then `explain` counting the copies a view's chunks take (where each input's rows
 * are stored: on the device, a chunk per task of the pass computing them, copied whole, or
 * uploaded a task at a time; joins as many as one kernel binds), which it had left out of
 * its totals, and the kernels' parameter words named once: +1.7 kB (the copy count's pieces
 * and stand-ins, 5 kB before gzip, inlined into `pass_kernels`), 620.2 kB, the budget raised
 * to 620.5 kB, with no shrink first. Then the executor compiled once (`engine::Backend`
 * erases each backend's batch, partial states and bin totals behind `dyn Any`, where the
 * executor, its schedule loop and every export that evaluated were compiled once per
 * backend: the loop alone 58 and 35 kB before gzip): -14.0 kB, 606.3 kB, the budget
 * lowered to 606.5 kB. Then a user's trial's defects mended: exact integer histograms over
 * the extent (`auto_integer_bin`, 3.7 kB before gzip with its type bounds), a group-by in
 * parts taking its result's chunks (`in_chunks`), reductions of nulls alone EMPTY_INPUT:
 * +2.5 kB, 608.6 kB, the budget raised to 609.0 kB. Then a filter larger than allowedMem
 * taken in parts (`engine/staged_filter.rs`: its planning 2.8 kB before gzip, its run 4.9 kB
 * inlined into the executor's `run`, the parts' shared projection 2.7 kB) and an infinite
 * auto histogram range refused: +5.2 kB, 613.8 kB, the budget raised to 614.0 kB, with no
 * shrink first. Then a reread's shared range cutting and typed downcasts, calls where
 * loops were copied: +0.1 kB, 614.0 kB (a few bytes over), the budget raised to 614.5 kB.
 * Then a second user's trial's defects mended and parts projected before they run: a
 * table taking a batch's grown dictionary (and refusing one whose codes read other values),
 * a table of no batches writing its columns' types, dictionaries keeping -0 as +0 and one
 * NaN, searchSorted among a sorted column's valid rows, filters and group-bys in parts
 * projected with the rest first (their results standing in): +1.7 kB, 615.7 kB, the budget
 * raised to 616.0 kB, with no shrink first. Then order comparisons across dictionaries and
 * a join's right columns keeping their fields (js/dictionaries.js's ranks among both
 * dictionaries, `tableOfColumns` taking the other table's fields; `same_values` now a
 * prefix test of equal lengths): +0.4 kB, 616.1 kB, the budget raised to 616.5 kB. Then
 * Date32 and Time32 columns written back as those types (the writer told each field's
 * `arrowType`): +0.3 kB, 616.4 kB. Then the 64-bit temporal types written back, the
 * writer's buffers byte slices: -0.6 kB, 615.8 kB. Then a group-by of more distinct groups
 * than a block of its parts holds within allowedMem, cut by key into key ranges made one at
 * a time (`by_key_range`: the ranges' ascending keys merged by a heap of the crate's
 * `sift_down`, not std's sort, which cost 7 kB before gzip; the most groups a block holds
 * found by a search of projections; the key ranges' results read back and kept on the
 * host) and group-bys whose results later work reads staged too: +6.9 kB (15.5 kB before
 * gzip), 622.7 kB, the budget raised to 623.0 kB, with a shrink first of 0.5 kB (the
 * messages' and WGSL casts' `{:.N}` formats dropped; core's exact float printing stays,
 * `Display` of f64 links it). Then roots held together past the budget read back as they
 * are computed (the schedule projected again, the largest held root read back each time,
 * `schedule::projected` called three times and kept one function): +0.7 kB, 623.4 kB, the
 * budget raised to 623.5 kB, with no shrink first. Then four contract fixes: 'auto'
 * histogram edges exact where their numerator is (a table of steps, one call site per
 * kind of op), a filter's ranges computing only their own rows of its mask, a constant or
 * one-row column broadcast to a table's rows, a text column's fillNull by a string:
 * +1.9 kB, 625.3 kB, the budget raised to 625.5 kB (the steps' table saved 0.5 kB).
 * A histogram's device edges checked for order once computed (a count read back with the
 * other checks), a dictionary column written back with its 8- or 16-bit index type, a
 * derive's row count checked in Rust (not JS), shared rows of work for a filter's and a
 * group-by's parts, and arithmetic, cast, concat and select by a dictionary's values in JS:
 * +1.4 kB, 626.9 kB, the budget raised to 627.0 kB (the index narrowing writes through the
 * widening loop: 0.5 kB less than a column per width).
 * Then a contract trial's defects mended: verbs taking a constant as one row
 * (`constant_as_column`), a search into a counted column with nulls (it recursed), every
 * join's length counted on the device, a dictionary's NaN skipped by min and max, names
 * and option objects checked before they reach wasm, an appendable vector's superseded rows
 * kept for the ops holding them (destroyed with it), masked reductions of a constant: +1.8 kB
 * (wasm 1.3, JS 0.5), 628.7 kB, the budget raised to 629.0 kB, with no shrink first.
 * Cumulative ops in parts under allowedMem (staged_scan), a table verb's rows evaluated in
 * parts kept on the host, chains remade a range at a time without recursion, and fallible
 * copies of IPC bytes and dictionaries: +3.9 kB of wasm (the serde `chunks` reader dropped,
 * the new async parts boxed out of their callers' state machines), 632.7 kB, the budget
 * raised to 632.8 kB.
 * A table join too large for the budget made a left range at a time, all-valid flags made by
 * row-local work and a table column's range made batch by batch (a table mixing null
 * bitmaps streams), reversed cumulative ops in parts from the last range, verbs' own
 * evaluators freed at once: +2.7 kB (wasm 2.1, JS 0.6), 635.5 kB, the budget raised to
 * 635.6 kB, with no shrink first.
 * A destroyed evaluator lets go of its node (a tombstone in its place) and its output's
 * views of it, so its null flags and count are freed at once; a row's all-valid flags one
 * swizzle: +0.3 kB, 635.8 kB, the budget raised to 635.9 kB.
 * `table.derive` lets the evaluators its functions made release their outputs (a derived
 * table's destroy frees them): +0.1 kB, 635.9 kB, the budget raised to 636.0 kB.
 * The sparse API reads a Float64Array as numbers (float32 values, uint32 indices), checks
 * a detached one and whole indices by a loop, its copy and shape check through the shared
 * helpers: 636.0 kB (635,981 bytes), within 636.0 kB.
 * WebGPU sorts of one block in one dispatch a key (shaders/radix_sort.wgsl `block`, 0.9 kB
 * of the shader gzipped, and its recording and `explain` line), a staged scan's ranges by
 * an iterator, and the sorts' pipelines fetched in one loop: +2.3 kB (wasm 2.3), 638.3 kB.
 * Then the ranking by ballots shared by `place` and `block` (functions of a `ballots`
 * section) and the sort's ping-pong arrays by one function: +1.0 kB, 639.3 kB (639,290
 * bytes), the budget raised to 639.3 kB, with no shrink first.
 * Stop 70: WebGPU's compaction of one block (a kernel of its own, the walk joining its
 * flags) and `explain` counting what an evaluation runs (draw arguments, checks, tasks of
 * no rows, joining copies as stored): +1.6 kB, 640.9 kB (640,923 bytes), the budget
 * raised to 641.0 kB.
 * Stop 71: a range's rows, null flags and carry read back together (`read_outputs`, each
 * device's `read_together`; WebGPU's reads packed into staging fills by `read_spans`, which
 * `read_rows` shares): +5.3 kB, 646.2 kB (646,181 bytes), the budget raised to 646.5 kB,
 * with a 0.2 kB shrink first (the CPU slices its host columns, no generic read loop). The
 * name section, before gzip, against the commit before: `read_spans` 4.0 kB, `read_outputs`
 * 2.7 kB, WebGPU's `read_together` 1.7 kB, the staged verbs' reads 2.9 kB, WebGPU's old
 * `read_rows` -1.7 kB: the async state machines of the reads are most of it. Then
 * evaluated counted inputs read as their rows (`counted::align`) and table verbs rejecting
 * their promises on bad arguments: 646.3 kB (646,289 bytes).
 * Stop 72: Arrow schema and field metadata kept through IPC in and out and the table model
 * (reader, writer, `Table`/`Batch::metadata`, the models' getters and constructors), the
 * lane rule for `select`/`dot`/`equalAll`, columns aligned to a counted result's rows
 * (`align_rows`), fused `where` flags: +4.3 kB, 650.6 kB (650,605 bytes), the budget raised
 * to 651.0 kB. Before gzip, against the commit before: `ipc_writer` 1.7 kB, `align_rows`
 * 1.2 kB, `metadata_from_js` 1.1 kB, the flatbuffer key-value tables and their reading
 * 1.8 kB; a first version collected metadata into `BTreeMap`s, whose sort added 13 kB more.
 * The CPU scan's loops (`scan_whole`, 15 kB before gzip: a loop
 * per fold, class and direction) are the next place to look. The largest
 * families left to shrink, measured from the name section: the CPU reduction folders (12
 * instances), the async exports' state machines (21, 60 kB), the CPU region's compute (3
 * classes, 83 kB), and float
 * formatting (18 kB before gzip: `Display` of f64 in error messages pulls in core's
 * shortest and exact float printing; a formatter through JS's own would drop it).
 */
export const DEFAULT_IMPORT_BUDGET = 651_000;

const gzipped = file => gzipSync(readFileSync(file), {level: 9}).length;

/** `entry` and every module it imports statically (dynamic `import()` is left out). */
function staticGraph(entry, seen = new Set()) {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  const source = readFileSync(entry, 'utf8');
  // Static imports, minified or not: `import x from './a.js'`, `import{a}from"./b.js"`.
  for (const [, , specifier] of source.matchAll(/(?:^|[;}\s])(?:import|export)\s*(?:[^;'"()]*?from\s*)?(['"])([^'"]+)\1/gm)) {
    if (specifier.startsWith('.')) staticGraph(join(dirname(entry), specifier), seen);
  }
  return seen;
}

function measure(files) {
  const rows = files.map(file => ({file: relative(dist, file), bytes: readFileSync(file).length, gzipped: gzipped(file)}));
  return {rows, bytes: rows.reduce((a, r) => a + r.bytes, 0), gzipped: rows.reduce((a, r) => a + r.gzipped, 0)};
}

/** Bytes of the default import (JavaScript and wasm), raw and gzipped, per file and in all. */
export function defaultImportSize() {
  return measure([...staticGraph(join(dist, 'web/index.js')), join(dist, 'wasm/gputable_bg.wasm')]);
}

/** The WebGL2 module and its bindings, loaded on demand. */
export function webglModuleSize() {
  return measure([join(dist, 'wasm-webgl/gputable.js'), join(dist, 'wasm-webgl/gputable_bg.wasm')]);
}

const kB = n => `${(n / 1000).toFixed(1)} kB`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const base = defaultImportSize();
  const webgl = webglModuleSize();
  const within = base.gzipped <= DEFAULT_IMPORT_BUDGET ? 'within' : 'OVER';
  console.log(`[build] default import: ${kB(base.gzipped)} gzipped (${kB(base.bytes)}; wasm ${kB(base.rows.at(-1).gzipped)} gzipped), ` +
    `${within} its ${kB(DEFAULT_IMPORT_BUDGET)} budget`);
  console.log(`[build] WebGL2 module, loaded on demand: ${kB(webgl.gzipped)} gzipped (${kB(webgl.bytes)})`);
}
