// The first k rows of a stable sort on WebGPU (src/gpu/sort.rs), without sorting every row:
// in `select` each invocation reads a run of RUN consecutive rows and keeps its first k (by
// key words, then row) in private memory, most rows costing one comparison with the last
// row kept; `gather` copies one key word of each candidate; the radix sort then orders the
// candidates alone (laid out by run, each run's in order: its stability keeps equal keys in
// row order), and `finish` maps its first k back to rows. Sections are split on their
// marker comments.

// SECTION select
// Parameters: 0 rows, 1 invocations per grid row, 3 k (at most MOST), 4.. each key word's mask.
const WORDS: u32 = #WORDS#u;
const MOST: u32 = #MOST#u;
const RUN: u32 = #RUN#u;
const NONE: u32 = 0xffffffffu;

#KEYS#

@group(0) @binding(#CANDIDATES#) var<storage, read_write> candidates: array<u32>;

// The rows kept so far, first first, and the key of the row read.
var<private> kept_keys: array<u32, #KEY_SLOTS#>;
var<private> kept_rows: array<u32, #MOST#>;
var<private> key: array<u32, #WORDS#>;

// Whether the row read comes before kept row `j` (a later row never ties before it).
fn before_kept(j: u32) -> bool {
    for (var w = 0u; w < WORDS; w++) {
        let held = kept_keys[j * WORDS + w];
        if (key[w] != held) { return key[w] < held; }
    }
    return false;
}

@compute @workgroup_size(#WORKGROUP#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let run = id.y * param(1u) + id.x;
    let first = run * RUN;
    let k = param(3u);
    if (first >= param(0u) || k == 0u) { return; }
    let end = min(first + RUN, param(0u));
    var held = 0u;
    for (var row = first; row < end; row++) {
        for (var w = 0u; w < WORDS; w++) { key[w] = key_word(w, row) & param(4u + w); }
        if (held == k && !before_kept(k - 1u)) { continue; }
        // Its place: later kept rows move down a slot (the last one out where k are kept).
        var at = min(held, k - 1u);
        loop {
            if (at == 0u || !before_kept(at - 1u)) { break; }
            for (var w = 0u; w < WORDS; w++) { kept_keys[at * WORDS + w] = kept_keys[(at - 1u) * WORDS + w]; }
            kept_rows[at] = kept_rows[at - 1u];
            at -= 1u;
        }
        for (var w = 0u; w < WORDS; w++) { kept_keys[at * WORDS + w] = key[w]; }
        kept_rows[at] = row;
        held = min(held + 1u, k);
    }
    for (var i = 0u; i < k; i++) {
        candidates[run * k + i] = select(NONE, kept_rows[i], i < held);
    }
}

// SECTION gather
// Parameters: 0 candidates, 1 invocations per grid row, 3 the key word's mask.
@group(0) @binding(1) var<storage, read> key: array<u32>;
@group(0) @binding(2) var<storage, read> candidates: array<u32>;
@group(0) @binding(3) var<storage, read_write> candidate_key: array<u32>;

@compute @workgroup_size(#WORKGROUP#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let c = id.y * param(1u) + id.x;
    if (c >= param(0u)) { return; }
    let row = candidates[c];
    candidate_key[c] = select(0xffffffffu, key[min(row, arrayLength(&key) - 1u)] & param(3u), row != 0xffffffffu);
}

// SECTION finish
// Parameters: 0 k, 1 invocations per grid row.
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read> candidates: array<u32>;
@group(0) @binding(3) var<storage, read_write> permutation: array<u32>;

@compute @workgroup_size(#WORKGROUP#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.y * param(1u) + id.x;
    if (i >= param(0u)) { return; }
    permutation[i] = candidates[order[i]];
}
