// Lookups on WebGPU (src/gpu/lookup.rs): after the slots are cleared (scatter.wgsl's
// `fill`), `insert` puts each table row into an open-addressing hash table (linear probing,
// at most half full) whose slots hold a row's number plus one (0: empty), keeping the lowest
// row of equal keys; then `probe` finds each key's slot. A slot holds no key: the table's
// keys are read through its row, so no key value is set aside to mark an empty slot, and
// every slot is one atomic word. Keys compare as their 32-bit words made `canonical`.
// Sections: the shared part, then `insert` or `probe`. Parameters: 0 rows, 1 invocations
// per grid row, 3 the slots less one (a power of two less one), 4 1 for float keys, 2 for
// integer keys of two signs, 5 1 where the table's rows have flags.

@group(0) @binding(2) var<storage, read> table: array<u32>;

fn row_of(id: vec3<u32>) -> u32 {
    return id.y * param(1u) + id.x;
}

// A key's word as keys are compared, and 1 where it can equal a key at all: floats' -0 as
// +0 and NaN never; of a signed and an unsigned type, a word with its top bit set is a value
// (negative, or 2^31 and up) the other type cannot hold.
fn canonical(word: u32) -> vec2<u32> {
    if (param(4u) == 1u) {
        let magnitude = word & 0x7fffffffu;
        return vec2<u32>(select(word, 0u, magnitude == 0u), select(1u, 0u, magnitude > 0x7f800000u));
    }
    return vec2<u32>(word, select(1u, 0u, param(4u) == 2u && word >= 0x80000000u));
}

// The first slot to try for a key: its word mixed (murmur3's finalizer) so that keys
// in runs spread over the table.
fn first_slot(key: u32) -> u32 {
    var h = key;
    h = (h ^ (h >> 16u)) * 0x85ebca6bu;
    h = (h ^ (h >> 13u)) * 0xc2b2ae35u;
    return (h ^ (h >> 16u)) & param(3u);
}

// SECTION insert
@group(0) @binding(1) var<storage, read_write> slots: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read> flags: array<u32>;

@compute @workgroup_size(#WORKGROUP#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let row = row_of(id);
    if (row >= param(0u) || (param(5u) == 1u && flags[row] == 0u)) { return; }
    let key = canonical(table[row]);
    if (key.y == 0u) { return; }
    var slot = first_slot(key.x);
    loop {
        let held = atomicCompareExchangeWeak(&slots[slot], 0u, row + 1u);
        if (held.exchanged) { return; }
        // A weak exchange may fail with the slot still empty: try it again.
        if (held.old_value != 0u) {
            if (canonical(table[held.old_value - 1u]).x == key.x) {
                atomicMin(&slots[slot], row + 1u);
                return;
            }
            slot = (slot + 1u) & param(3u);
        }
    }
}

// SECTION probe
@group(0) @binding(1) var<storage, read_write> out: array<i32>;
@group(0) @binding(3) var<storage, read> slots: array<u32>;
@group(0) @binding(4) var<storage, read> keys: array<u32>;

@compute @workgroup_size(#WORKGROUP#)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = row_of(id);
    if (i >= param(0u)) { return; }
    let key = canonical(keys[i]);
    var found = -1i;
    // A key that equals none (NaN, a word the other type cannot hold) probes no slot.
    var slot = first_slot(key.x);
    loop {
        if (key.y == 0u) { break; }
        let held = slots[slot];
        if (held == 0u) { break; }
        if (canonical(table[held - 1u]).x == key.x) {
            found = i32(held - 1u);
            break;
        }
        slot = (slot + 1u) & param(3u);
    }
    out[i] = found;
}
