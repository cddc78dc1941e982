// The stable sort on WebGPU (src/gpu/sort.rs): an LSD radix sort of 8-bit digits over every
// key's bits, the last key's lowest digit first (DeviceRadixSort's reduce-then-scan shape).
// Rows are cut into blocks of THREADS * ITEMS, read in rounds of THREADS consecutive rows; a
// pass runs three kernels: `count` counts each block's digits, `scan` turns the counts of
// each digit (one workgroup per digit) into where that digit's rows of each block start
// among the digit's rows, and `place` moves each row to its place: after every row of a
// smaller digit, of its digit in earlier blocks, and of its digit earlier in its block.
// Where the device has subgroups, `count_lanes` and `place_lanes` (after `lanes`) replace
// `count` and `place`: rows of a digit are found in a subgroup by ballots, so one atomic adds
// for all of them, and a block is ranked with three barriers a part, not three a round.
// A sort of one block's rows runs `block` instead: every pass of a key in one dispatch.
// Sections are split on their marker comments: `count` takes the shared part, `load` and its
// own; `place` also `ballots`; `scan` the shared part and its own; `block` also `ballots`.
// Parameters: 0 rows, 1 workgroups per grid row, 3 blocks, 4 the digit's shift, 5 its mask,
// 6 how a pass reads its rows (0: the key in place, rows in order; 1: the key carried from
// the last pass and the permutation so far; 2: the permutation, and the key read through
// it), 7 whether `place` carries the key to the next pass.

// One invocation per digit value in `count` and `place`.
const THREADS: u32 = 256u;
const ITEMS: u32 = #ITEMS#u;

var<workgroup> partials: array<u32, 256>;

// An inclusive scan of the first `count` of `partials` (each thread's own entry `t`, every
// thread below `count` taking part), Hillis and Steele's.
fn scan_partials(t: u32, count: u32) {
    for (var offset = 1u; offset < count; offset = offset * 2u) {
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
        scan_partials(t, THREADS);
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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let block = block_of(group);
    if (block >= param(3u)) { return; }
    // Digit t starts after every row of a smaller digit and its rows of earlier blocks.
    let total = totals[t];
    partials[t] = total;
    scan_partials(t, THREADS);
    start_rounds(t, partials[t] - total + counts[t * param(3u) + block]);
    for (var j = 0u; j < ITEMS; j++) {
        let i = row_of(block, j, t);
        let live = i < param(0u);
        var pair = vec2<u32>(0u);
        if (live) { pair = load(i); }
        let slot = digit_of(pair.x) * WORDS;
        let place = place_in_round(live, slot, t);
        if (live) {
            permutation_out[place] = pair.y;
            if (param(7u) != 0u) { keys_out[place] = pair.x; }
        }
        end_round(live, slot, place, t);
    }
}

// SECTION ballots
// Rows ranked a round of THREADS at a time by ballots in workgroup memory (`place`, `block`).
const WORDS: u32 = THREADS / 32u;
// A round's ballot per digit: bit t of digit d's WORDS words is set when thread t's row has
// digit d. A thread's rank among its digit's rows of the round is the bits below its own.
var<workgroup> ballots: array<atomic<u32>, #BALLOTS#>;
// Where the next row of each digit goes in the output.
var<workgroup> next_place: array<atomic<u32>, 256>;

// Digit t's rows start at `start`; the ballots are cleared. Every thread calls it.
fn start_rounds(t: u32, start: u32) {
    atomicStore(&next_place[t], start);
    for (var w = 0u; w < WORDS; w++) { atomicStore(&ballots[t * WORDS + w], 0u); }
    workgroupBarrier();
}

// Where thread t's row (`live`, its digit's ballot at `slot`) goes this round: after its
// digit's rows of earlier rounds and of lower threads in this one. Every thread calls it.
fn place_in_round(live: bool, slot: u32, t: u32) -> u32 {
    let word = t / 32u;
    let bit = 1u << (t % 32u);
    if (live) { atomicOr(&ballots[slot + word], bit); }
    workgroupBarrier();
    var place = 0u;
    if (live) {
        place = atomicLoad(&next_place[slot / WORDS]);
        for (var w = 0u; w < word; w++) { place += countOneBits(atomicLoad(&ballots[slot + w])); }
        place += countOneBits(atomicLoad(&ballots[slot + word]) & (bit - 1u));
    }
    return place;
}

// After the round's rows are written: the digit's next row goes after its last of this
// round, and its ballot is cleared. Every thread calls it.
fn end_round(live: bool, slot: u32, place: u32, t: u32) {
    workgroupBarrier();
    if (live) {
        atomicMax(&next_place[slot / WORDS], place + 1u);
        atomicStore(&ballots[slot + t / 32u], 0u);
    }
    workgroupBarrier();
}

// SECTION lanes
// With subgroups (the device has them): rows of the same digit in a subgroup are found by
// ballots, and one invocation adds for all of them, so a digit common in a block costs one
// workgroup atomic per subgroup rather than one per row.

// The lanes of this subgroup whose row is live and has digit `digit` (for a live lane).
fn same_digit(digit: u32, live: bool) -> vec4<u32> {
    var lanes = subgroupBallot(live);
    for (var b = 0u; b < 8u; b++) {
        let one = ((digit >> b) & 1u) != 0u;
        let ones = subgroupBallot(one);
        lanes &= select(~ones, ones, one);
    }
    return lanes;
}

fn lane_count(lanes: vec4<u32>) -> u32 {
    return dot(countOneBits(lanes), vec4<u32>(1u));
}

// The lanes below `lane`.
fn lanes_below(lane: u32) -> vec4<u32> {
    var mask = vec4<u32>(0u);
    for (var k = 0u; k < 4u; k++) {
        let start = k * 32u;
        if (lane >= start + 32u) {
            mask[k] = 0xffffffffu;
        } else if (lane > start) {
            mask[k] = (1u << (lane - start)) - 1u;
        }
    }
    return mask;
}

// The lowest of `lanes` (not empty), branch-free: its result picks a shuffle's lane.
fn first_lane(lanes: vec4<u32>) -> u32 {
    let at = countTrailingZeros(lanes) + vec4<u32>(0u, 32u, 64u, 96u);
    return select(select(select(at.w, at.z, lanes.z != 0u), at.y, lanes.y != 0u), at.x, lanes.x != 0u);
}

// SECTION count_lanes
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;

var<workgroup> histogram: array<atomic<u32>, 256>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let block = block_of(group);
    if (block >= param(3u)) { return; }
    atomicStore(&histogram[t], 0u);
    workgroupBarrier();
    let below = lanes_below(lane);
    for (var j = 0u; j < ITEMS; j++) {
        let i = row_of(block, j, t);
        let live = i < param(0u);
        var digit = 0u;
        if (live) { digit = digit_of(load(i).x); }
        let same = same_digit(digit, live);
        if (live && lane_count(same & below) == 0u) {
            atomicAdd(&histogram[digit], lane_count(same));
        }
    }
    workgroupBarrier();
    counts[t * param(3u) + block] = atomicLoad(&histogram[t]);
}

// SECTION place_lanes
// A block's rows are placed in parts of LANES * PART_ITEMS rows. Each subgroup takes a slot,
// in the order of its rows (its first row is its place among the workgroup's invocations
// times PART_ITEMS), and ranks its rows of each digit in its slot's count; the counts of
// earlier slots then say where a slot's rows of a digit start.
@group(0) @binding(4) var<storage, read> counts: array<u32>;
@group(0) @binding(5) var<storage, read> totals: array<u32>;
@group(0) @binding(6) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> permutation_out: array<u32>;

// Invocations of a workgroup: 16 subgroups of the adapter's smallest size, at most 256.
const LANES: u32 = #LANES#u;
const PART_ITEMS: u32 = 16u;
const PARTS: u32 = THREADS * ITEMS / (LANES * PART_ITEMS);
const SLOTS: u32 = 16u;
// Digits each invocation starts, and digit pairs it sums over the slots.
const DIGITS_EACH: u32 = 256u / LANES;
const PAIRS_EACH: u32 = (128u + LANES - 1u) / LANES;

// Where the next row of each digit goes in the output.
var<workgroup> next_place: array<u32, 256>;
// Each slot's rows of each digit in the part, two digits a word (a part has under 2^16 rows),
// then its rows' start among the part's rows of their digit.
var<workgroup> slot_counts: array<atomic<u32>, 2048>;
// The slots taken (high half) and invocations in them (low half).
var<workgroup> taken: atomic<u32>;

fn half_of(word: u32, digit: u32) -> u32 {
    return (word >> (16u * (digit & 1u))) & 0xffffu;
}

@compute @workgroup_size(LANES)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let block = block_of(group);
    if (block >= param(3u)) { return; }
    for (var w = t; w < 2048u; w += LANES) { atomicStore(&slot_counts[w], 0u); }
    if (t == 0u) { atomicStore(&taken, 0u); }
    // Digit d starts after every row of a smaller digit and its rows of earlier blocks.
    var sum = 0u;
    for (var k = 0u; k < DIGITS_EACH; k++) { sum += totals[t * DIGITS_EACH + k]; }
    partials[t] = sum;
    scan_partials(t, LANES);
    var start = partials[t] - sum;
    for (var k = 0u; k < DIGITS_EACH; k++) {
        let d = t * DIGITS_EACH + k;
        next_place[d] = start + counts[d * param(3u) + block];
        start += totals[d];
    }
    let below = lanes_below(lane);
    let present = subgroupBallot(true);
    let rank = lane_count(present & below);
    let width = lane_count(present);
    var claim = 0u;
    if (rank == 0u) { claim = atomicAdd(&taken, (1u << 16u) | width); }
    claim = subgroupBroadcastFirst(claim);
    let slot = claim >> 16u;
    let first = (claim & 0xffffu) * PART_ITEMS + rank;
    var keys: array<u32, PART_ITEMS>;
    var rows: array<u32, PART_ITEMS>;
    var ranks: array<u32, PART_ITEMS>;
    var pair_totals: array<u32, PAIRS_EACH>;
    for (var part = 0u; part < PARTS; part++) {
        let part_start = ((block * PARTS) + part) * LANES * PART_ITEMS;
        var live_items = 0u;
        for (var r = 0u; r < PART_ITEMS; r++) {
            let i = part_start + first + r * width;
            let live = i < param(0u);
            var pair = vec2<u32>(0u);
            if (live) { pair = load(i); }
            let digit = digit_of(pair.x);
            let same = same_digit(digit, live);
            let before = lane_count(same & below);
            var earlier = 0u;
            if (live && before == 0u) {
                let added = lane_count(same) << (16u * (digit & 1u));
                earlier = half_of(atomicAdd(&slot_counts[slot * 128u + digit / 2u], added), digit);
            }
            earlier = subgroupShuffle(earlier, first_lane(same));
            keys[r] = pair.x;
            rows[r] = pair.y;
            ranks[r] = earlier + before;
            live_items |= u32(live) << r;
        }
        workgroupBarrier();
        // Each pair of digits' counts over the slots become the counts of the slots before.
        let slots = atomicLoad(&taken) >> 16u;
        for (var k = 0u; k < PAIRS_EACH; k++) {
            let w = t + k * LANES;
            var sum = 0u;
            for (var s = 0u; s < slots && w < 128u; s++) {
                let count = atomicLoad(&slot_counts[s * 128u + w]);
                atomicStore(&slot_counts[s * 128u + w], sum);
                sum += count;
            }
            pair_totals[k] = sum;
        }
        workgroupBarrier();
        for (var r = 0u; r < PART_ITEMS; r++) {
            if ((live_items & (1u << r)) != 0u) {
                let digit = digit_of(keys[r]);
                let word = atomicLoad(&slot_counts[slot * 128u + digit / 2u]);
                let place = next_place[digit] + half_of(word, digit) + ranks[r];
                permutation_out[place] = rows[r];
                if (param(7u) != 0u) { keys_out[place] = keys[r]; }
            }
        }
        workgroupBarrier();
        // The next part's rows of each digit go after this part's; the slots' counts restart.
        for (var k = 0u; k < PAIRS_EACH; k++) {
            let w = t + k * LANES;
            if (w < 128u) {
                next_place[2u * w] += pair_totals[k] & 0xffffu;
                next_place[2u * w + 1u] += pair_totals[k] >> 16u;
                for (var s = 0u; s < SLOTS; s++) { atomicStore(&slot_counts[s * 128u + w], 0u); }
            }
        }
        workgroupBarrier();
    }
}

// SECTION block
// A sort of one block's rows (at most THREADS * ITEMS) by one key: every pass of its digits
// in one workgroup, so one dispatch, each pass counting, scanning and placing as `count`,
// `scan` and `place` do for one block, and handing its arrays to the next through a storage
// barrier. Passes read side a and write side b, then the other way round.
// Parameters: 0 rows, 1 how the first pass reads its rows (0: the key in place; 2: the key
// read through the permutation in side a), 2 passes, 3 the key's bits, 4 whether the last
// pass carries the key (writes it in order).
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> permutation_a: array<u32>;
@group(0) @binding(3) var<storage, read_write> carried_a: array<u32>;
@group(0) @binding(4) var<storage, read_write> permutation_b: array<u32>;
@group(0) @binding(5) var<storage, read_write> carried_b: array<u32>;

var<workgroup> histogram: array<atomic<u32>, 256>;

// Row `i`'s key and the input row it came from, as pass `step` reads them.
fn load_pass(step: u32, i: u32) -> vec2<u32> {
    if (step == 0u) {
        if (param(1u) == 0u) { return vec2<u32>(keys[i], i); }
        let row = permutation_a[i];
        return vec2<u32>(keys[row], row);
    }
    if (step % 2u == 1u) { return vec2<u32>(carried_b[i], permutation_b[i]); }
    return vec2<u32>(carried_a[i], permutation_a[i]);
}

fn store_pass(step: u32, place: u32, pair: vec2<u32>, carries: bool) {
    if (step % 2u == 0u) {
        permutation_b[place] = pair.y;
        if (carries) { carried_b[place] = pair.x; }
    } else {
        permutation_a[place] = pair.y;
        if (carries) { carried_a[place] = pair.x; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
    let rows = param(0u);
    let passes = param(2u);
    let bits = param(3u);
    // Rounds of THREADS rows: only those holding rows.
    let rounds = (rows + THREADS - 1u) / THREADS;
    for (var step = 0u; step < passes; step++) {
        let shift = step * 8u;
        let mask = (1u << min(bits - shift, 8u)) - 1u;
        let carries = shift + 8u < bits || (step + 1u == passes && param(4u) != 0u);
        atomicStore(&histogram[t], 0u);
        workgroupBarrier();
        for (var j = 0u; j < rounds; j++) {
            let i = j * THREADS + t;
            if (i < rows) { atomicAdd(&histogram[(load_pass(step, i).x >> shift) & mask], 1u); }
        }
        workgroupBarrier();
        // Digit t starts after every row of a smaller digit.
        let count = atomicLoad(&histogram[t]);
        partials[t] = count;
        scan_partials(t, THREADS);
        start_rounds(t, partials[t] - count);
        for (var j = 0u; j < rounds; j++) {
            let i = j * THREADS + t;
            let live = i < rows;
            var pair = vec2<u32>(0u);
            if (live) { pair = load_pass(step, i); }
            let slot = ((pair.x >> shift) & mask) * WORDS;
            let place = place_in_round(live, slot, t);
            if (live) { store_pass(step, place, pair, carries); }
            end_round(live, slot, place, t);
        }
        // The next pass reads what this one wrote.
        storageBarrier();
    }
}
