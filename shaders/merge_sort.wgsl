// The stable sort on WebGL2 (src/gl/sort.rs): merge passes in a fragment shader. Pass p
// merges runs of 2^p sorted rows in pairs; each fragment writes one row of the merged runs:
// it finds, by a binary search along the merge path, how many of the first run's rows come
// before it, and copies the row that lands there. Ties take the first run's row first, so
// the sort is stable. Every array is one R32Uint texture of one tile, row `i` at texel
// `(i % width, i / width)`. src/wgsl/fragment.rs fills in the keys: their bindings and
// loads, the lexicographic comparison, and the render targets carrying them. Parameter 3
// of every draw: log2 of the texture width.

fn texel(i: u32) -> vec2<i32> {
    return vec2<i32>(i32(i & ((1u << param(3u)) - 1u)), i32(i >> param(3u)));
}

fn fragment_row(pos: vec4<f32>) -> u32 {
    return (u32(pos.y) << param(3u)) + u32(pos.x);
}

// The keys (bound after a section's own inputs), their comparison, and the render targets:
// the permutation and each key carried.
#KEYS#
// Whether row `p` sorts strictly before row `q`.
fn before(p: u32, q: u32) -> bool {
#BEFORE#}

struct Out {
    @location(0) permutation: u32,
#OUTS#}

// SECTION merge
// Parameters: 0 rows, 1 the run width, 4 1 on the first pass (rows in order: no
// permutation to read), 5.. each key's mask (its low bits).
@group(0) @binding(1) var permutation_in: texture_2d<u32>;

@fragment
fn main(@builtin(position) pos: vec4<f32>) -> Out {
    var out: Out;
    let rows = param(0u);
    let row = fragment_row(pos);
    if (row >= rows) {
        return out;
    }
    let run = param(1u);
    let first_a = row & ~(2u * run - 1u);
    let first_b = min(first_a + run, rows);
    let len_a = first_b - first_a;
    let len_b = min(first_b + run, rows) - first_b;
    let k = row - first_a;
    // The fewest rows of run A such that A's next row comes after B's last taken one: in
    // [lo, lo + n], halved branch-free (the halvings depend on n alone, so neighbouring
    // fragments of one run take the same ones), then one last comparison.
    var lo = select(0u, k - len_b, k > len_b);
    var n = min(k, len_a) - lo;
    while (n > 1u) {
        let half = n >> 1u;
        let mid = lo + half;
        lo = select(mid, lo, before(first_b + k - mid - 1u, first_a + mid));
        n -= half;
    }
    if (n == 1u && !before(first_b + k - lo - 1u, first_a + lo)) {
        lo += 1u;
    }
    let b = k - lo;
    var source = first_b + b;
    if (lo < len_a && (b >= len_b || !before(first_b + b, first_a + lo))) {
        source = first_a + lo;
    }
    out.permutation = source;
    if (param(4u) == 0u) {
        out.permutation = textureLoad(permutation_in, texel(source), 0).r;
    }
#STORES#    return out;
}

// SECTION first_rows
// A sort read for its first k rows alone (k <= MOST): fragment `slot` writes the candidate
// `slot % k` of run `slot / k` (rows RUN * run onward): the run's row that many places into
// its sorted order, found by reading the run once while keeping its first rows in order in
// private memory (a row that ties with the last kept one is not kept: the run's order is
// stable). The candidates, in run order, are merged as any sort's rows, so ties stay in
// row order. `kept` is indexed by loop counters alone, never by a slot the data chose:
// llvmpipe lost rows shifted through such an index (`kept[at] = kept[at - 1]`).
// Parameters: 0 rows, 1 candidates, 4 k, 5.. each key's mask.

const RUN: u32 = #RUN#u;
const MOST: u32 = #MOST#u;

@fragment
fn main(@builtin(position) pos: vec4<f32>) -> Out {
    var out: Out;
    let slot = fragment_row(pos);
    if (slot >= param(1u)) {
        return out;
    }
    let place = slot % param(4u);
    let first = (slot / param(4u)) * RUN;
    let end = min(first + RUN, param(0u));
    var kept: array<u32, MOST>;
    // Rows kept (at most place + 1), and kept[place] once there are that many.
    var count = 0u;
    var last = 0u;
    for (var i = first; i < end; i++) {
        let full = count > place;
        if (full && !before(i, last)) {
            continue;
        }
        // The row takes a new slot (or the last one's, its row dropped) and moves toward
        // slot 0 past the kept rows it comes before; ties stay behind it (a stable order).
        let top = select(count, place, full);
        if (!full) {
            count += 1u;
        }
        var moving = true;
        for (var j = MOST - 1u; j > 0u; j--) {
            if (moving && j <= top) {
                if (before(i, kept[j - 1u])) {
                    kept[j] = kept[j - 1u];
                } else {
                    kept[j] = i;
                    moving = false;
                }
            }
            if (j == place) {
                last = kept[j];
            }
        }
        if (moving) {
            kept[0] = i;
        }
        if (place == 0u) {
            last = kept[0];
        }
    }
    let source = last;
    out.permutation = source;
#STORES#    return out;
}
