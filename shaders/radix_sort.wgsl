// The stable sort on WebGPU (src/gpu/sort.rs): an LSD radix sort of 8-bit digits over every
// key's bits, the last key's lowest digit first (DeviceRadixSort's reduce-then-scan shape).
// Rows are cut into blocks of THREADS * ITEMS, read in rounds of THREADS consecutive rows; a
// pass runs three kernels: `count` counts each block's digits, `scan` turns the counts of
// each digit (one workgroup per digit) into where that digit's rows of each block start
// among the digit's rows, and `place` moves each row to its place: after every row of a
// smaller digit, of its digit in earlier blocks, and of its digit earlier in its block.
// Sections are split on their marker comments: `count` and `place` take the shared part,
// `load` and theirs; `scan` the shared part and its own.
// Parameters: 0 rows, 1 workgroups per grid row, 3 blocks, 4 the digit's shift, 5 its mask,
// 6 how a pass reads its rows (0: the key in place, rows in order; 1: the key carried from
// the last pass and the permutation so far; 2: the permutation, and the key read through
// it), 7 whether `place` carries the key to the next pass.

// One invocation per digit value in `count` and `place`.
const THREADS: u32 = 256u;
const ITEMS: u32 = #ITEMS#u;

var<workgroup> partials: array<u32, 256>;

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

// The row that thread `t` reads in round `j` of a block.
fn row_of(block: u32, j: u32, t: u32) -> u32 {
    return (block * ITEMS + j) * THREADS + t;
}

// SECTION count
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;

var<workgroup> histogram: array<atomic<u32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let block = block_of(group);
    if (block >= param(3u)) { return; }
    atomicStore(&histogram[t], 0u);
    workgroupBarrier();
    for (var j = 0u; j < ITEMS; j++) {
        let i = row_of(block, j, t);
        if (i < param(0u)) { atomicAdd(&histogram[digit_of(load(i).x)], 1u); }
    }
    workgroupBarrier();
    counts[t * param(3u) + block] = atomicLoad(&histogram[t]);
}

// SECTION scan
@group(0) @binding(1) var<storage, read_write> counts: array<u32>;
@group(0) @binding(2) var<storage, read_write> totals: array<u32>;

// Workgroup `d`: digit d's counts of every block, in block order, replaced by the sum of
// those before (tiles of THREADS blocks, a running carry between tiles); its total.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let blocks = param(3u);
    let row = group.x * blocks;
    var carry = 0u;
    for (var tile = 0u; tile < blocks; tile += THREADS) {
        let block = tile + t;
        let count = select(0u, counts[row + min(block, blocks - 1u)], block < blocks);
        partials[t] = count;
        scan_partials(t);
        if (block < blocks) { counts[row + block] = carry + partials[t] - count; }
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

const WORDS: u32 = THREADS / 32u;
// A round's ballot per digit: bit t of digit d's WORDS words is set when thread t's row has
// digit d. A thread's rank among its digit's rows of the round is the bits below its own.
var<workgroup> ballots: array<atomic<u32>, #BALLOTS#>;
// Where the next row of each digit goes in the output.
var<workgroup> next_place: array<atomic<u32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let block = block_of(group);
    if (block >= param(3u)) { return; }
    // Digit t starts after every row of a smaller digit and its rows of earlier blocks.
    let total = totals[t];
    partials[t] = total;
    scan_partials(t);
    atomicStore(&next_place[t], partials[t] - total + counts[t * param(3u) + block]);
    for (var w = 0u; w < WORDS; w++) { atomicStore(&ballots[t * WORDS + w], 0u); }
    let word = t / 32u;
    let bit = 1u << (t % 32u);
    workgroupBarrier();
    for (var j = 0u; j < ITEMS; j++) {
        let i = row_of(block, j, t);
        let live = i < param(0u);
        var pair = vec2<u32>(0u);
        var slot = 0u;
        if (live) {
            pair = load(i);
            slot = digit_of(pair.x) * WORDS;
            atomicOr(&ballots[slot + word], bit);
        }
        workgroupBarrier();
        var place = 0u;
        if (live) {
            place = atomicLoad(&next_place[slot / WORDS]);
            for (var w = 0u; w < word; w++) { place += countOneBits(atomicLoad(&ballots[slot + w])); }
            place += countOneBits(atomicLoad(&ballots[slot + word]) & (bit - 1u));
            permutation_out[place] = pair.y;
            if (param(7u) != 0u) { keys_out[place] = pair.x; }
        }
        workgroupBarrier();
        // The digit's next row goes after its last of this round; its ballot is cleared.
        if (live) {
            atomicMax(&next_place[slot / WORDS], place + 1u);
            atomicStore(&ballots[slot + word], 0u);
        }
        workgroupBarrier();
    }
}
