// The stable sort on WebGPU (src/gpu/sort.rs): an LSD radix sort of 4-bit digits over every
// key's bits, the last key's lowest digit first. Rows are cut into blocks of THREADS * ITEMS; a pass
// runs three kernels: `count` counts each block's digits, `scan` turns the counts of each
// digit (one workgroup per digit) into where that digit's rows of each block start among the
// digit's rows, and `place` moves each row to its place: after every row of a smaller digit,
// of its digit in earlier blocks, and of its digit earlier in its block. Sections are split
// on their marker comments: `count` and `place` take the shared part, `load` and theirs;
// `scan` the shared part and its own.
// Parameters: 0 rows, 1 workgroups per grid row, 3 blocks, 4 the digit's shift, 5 its mask,
// 6 how a pass reads its rows (0: the key in place, rows in order; 1: the key carried from
// the last pass and the permutation so far; 2: the permutation, and the key read through
// it), 7 whether `place` carries the key to the next pass.

const DIGITS: u32 = 16u;
const THREADS: u32 = #THREADS#u;
const ITEMS: u32 = #ITEMS#u;

var<workgroup> partials: array<u32, #THREADS#>;

// An inclusive scan of `partials` (each thread's own entry `t`), Hillis and Steele's.
fn scan_partials(t: u32) {
    for (var offset = 1u; offset < THREADS; offset = offset * 2u) {
        workgroupBarrier();
        let before = select(0u, partials[max(t, offset) - offset], t >= offset);
        workgroupBarrier();
        partials[t] = partials[t] + before;
    }
    workgroupBarrier();
}

// SECTION load
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read> carried_keys: array<u32>;
@group(0) @binding(3) var<storage, read> permutation: array<u32>;

// Per digit, per thread: how many of the thread's rows have the digit (digit-major, so a
// scan in index order numbers a block's rows by digit, then thread, then row).
var<workgroup> tallies: array<u32, #TALLIES#>;

fn block_of(group: vec3<u32>) -> u32 {
    return group.y * param(1u) + group.x;
}

// Row `i`'s key and the row of the input it came from, as this pass reads them.
fn load(i: u32) -> vec2<u32> {
    switch param(6u) {
        case 0u: {
            return vec2<u32>(keys[i], i);
        }
        case 1u: {
            return vec2<u32>(carried_keys[i], permutation[i]);
        }
        default: {
            let row = permutation[i];
            return vec2<u32>(keys[row], row);
        }
    }
}

fn digit_of(key: u32) -> u32 {
    return (key >> param(4u)) & param(5u);
}

// SECTION count
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;

@compute @workgroup_size(#THREADS#)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let block = block_of(group);
    if (block >= param(3u)) { return; }
    for (var d = 0u; d < DIGITS; d++) { tallies[d * THREADS + t] = 0u; }
    for (var j = 0u; j < ITEMS; j++) {
        // Any rows of the block will do for counting: consecutive threads read consecutive rows.
        let i = block * THREADS * ITEMS + j * THREADS + t;
        if (i < param(0u)) {
            let d = digit_of(load(i).x);
            tallies[d * THREADS + t] += 1u;
        }
    }
    workgroupBarrier();
    // THREADS / DIGITS threads sum each digit's tallies.
    let share = THREADS / DIGITS;
    let digit = t / share;
    let first = digit * THREADS + (t % share) * DIGITS;
    var sum = 0u;
    for (var k = 0u; k < THREADS / share; k++) { sum += tallies[first + k]; }
    partials[t] = sum;
    workgroupBarrier();
    if (t < DIGITS) {
        var total = 0u;
        for (var k = 0u; k < share; k++) { total += partials[t * share + k]; }
        counts[t * param(3u) + block] = total;
    }
}

// SECTION scan
@group(0) @binding(1) var<storage, read_write> counts: array<u32>;
@group(0) @binding(2) var<storage, read_write> totals: array<u32>;

// Workgroup `d`: digit d's counts of every block, in block order, replaced by the sum of
// those before (tiles of THREADS * ITEMS blocks, a running carry between tiles); its total.
@compute @workgroup_size(#THREADS#)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let blocks = param(3u);
    let row = group.x * blocks;
    var carry = 0u;
    for (var tile = 0u; tile < blocks; tile += THREADS * ITEMS) {
        let first = tile + t * ITEMS;
        var values: array<u32, #ITEMS#>;
        var sum = 0u;
        for (var j = 0u; j < ITEMS; j++) {
            values[j] = select(0u, counts[row + min(first + j, blocks - 1u)], first + j < blocks);
            sum += values[j];
        }
        partials[t] = sum;
        scan_partials(t);
        var running = carry + partials[t] - sum;
        for (var j = 0u; j < ITEMS; j++) {
            if (first + j < blocks) { counts[row + first + j] = running; }
            running += values[j];
        }
        carry += partials[THREADS - 1u];
        // Every thread has read the carry before the next tile overwrites `partials`.
        workgroupBarrier();
    }
    if (t == 0u) { totals[group.x] = carry; }
}

// SECTION place
@group(0) @binding(4) var<storage, read> counts: array<u32>;
@group(0) @binding(5) var<storage, read> totals: array<u32>;
@group(0) @binding(6) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> permutation_out: array<u32>;

// Where each digit's rows of this block start in the output.
var<workgroup> digit_starts: array<u32, 16>;

@compute @workgroup_size(#THREADS#)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let block = block_of(group);
    if (block >= param(3u)) { return; }
    // Each thread takes ITEMS consecutive rows: the block's order is (thread, item).
    let first = (block * THREADS + t) * ITEMS;
    var pairs: array<vec2<u32>, #ITEMS#>;
    var ranks: array<u32, #ITEMS#>;
    for (var d = 0u; d < DIGITS; d++) { tallies[d * THREADS + t] = 0u; }
    for (var j = 0u; j < ITEMS; j++) {
        if (first + j < param(0u)) {
            pairs[j] = load(first + j);
            let slot = digit_of(pairs[j].x) * THREADS + t;
            ranks[j] = tallies[slot];
            tallies[slot] += 1u;
        }
    }
    if (t < DIGITS) {
        var smaller = 0u;
        for (var d = 0u; d < t; d++) { smaller += totals[d]; }
        digit_starts[t] = smaller + counts[t * param(3u) + block];
    }
    workgroupBarrier();
    // An exclusive scan of the tallies in index order: THREADS runs of DIGITS entries.
    var sum = 0u;
    for (var k = 0u; k < DIGITS; k++) { sum += tallies[t * DIGITS + k]; }
    partials[t] = sum;
    scan_partials(t);
    var running = partials[t] - sum;
    for (var k = 0u; k < DIGITS; k++) {
        let tally = tallies[t * DIGITS + k];
        tallies[t * DIGITS + k] = running;
        running += tally;
    }
    workgroupBarrier();
    for (var j = 0u; j < ITEMS; j++) {
        if (first + j < param(0u)) {
            let d = digit_of(pairs[j].x);
            // Rows of this digit before this thread's in the block, counted from the
            // block's first row of the digit.
            let place = digit_starts[d] + tallies[d * THREADS + t] - tallies[d * THREADS] + ranks[j];
            permutation_out[place] = pairs[j].y;
            if (param(7u) != 0u) { keys_out[place] = pairs[j].x; }
        }
    }
}
