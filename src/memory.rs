//! Device memory: what every device counts (`stats`, `memory`) and the pool its storage is
//! served from and returned to.
//!
//! Storage is leased: a `Lease` owns one buffer, texture or host array and gives it back to
//! its pool when dropped, so destroying a value frees or pools its storage at once. Size
//! classes are a quarter of a power of two apart (at most a quarter of a buffer is unused);
//! the shared pool holds at most `cap` bytes; named caches (`device.cached(name, fn)`) keep
//! their storage until trimmed; uncached storage is destroyed on release.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::Hash;
use std::rc::{Rc, Weak};

use crate::error::{ErrorCode, GpuTableError, Result};

/// Cumulative counters and memory of one device, shared by its pools and backends.
#[derive(Default, Debug)]
pub struct Counters {
    pub upload_bytes: Cell<u64>,
    pub readback_bytes: Cell<u64>,
    pub kernels: Cell<u64>,
    pub pipelines: Cell<u64>,
    pub allocations: Cell<u64>,
    /// Sorts run (not in `stats`: the tests' check that an operation sorts its entries once).
    pub sorts: Cell<u64>,
    /// Reads waiting on the device (a WebGPU map), not in `stats`: the tests' check that
    /// rows read together take one.
    pub readbacks: Cell<u64>,
    live_bytes: Cell<u64>,
    pooled_bytes: Cell<u64>,
    peak_bytes: Cell<u64>,
}

/// `device.stats`: cumulative counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub upload_bytes: u64,
    pub readback_bytes: u64,
    pub kernels: u64,
    pub pipelines: u64,
    pub allocations: u64,
}

/// `device.memory`: bytes held by live values, by the pool and caches, and the most held by
/// live values at once since `reset_peak`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUse {
    pub live_bytes: u64,
    pub pooled_bytes: u64,
    pub peak_bytes: u64,
}

fn bump(cell: &Cell<u64>, by: u64) {
    cell.set(cell.get().saturating_add(by));
}

impl Counters {
    pub fn add_upload(&self, bytes: u64) {
        bump(&self.upload_bytes, bytes);
    }
    /// One read waiting on the device, of `bytes`.
    pub fn add_readback(&self, bytes: u64) {
        bump(&self.readback_bytes, bytes);
        bump(&self.readbacks, 1);
    }
    pub fn add_kernels(&self, count: u64) {
        bump(&self.kernels, count);
    }
    pub fn add_sort(&self) {
        bump(&self.sorts, 1);
    }
    pub fn add_pipeline(&self) {
        bump(&self.pipelines, 1);
    }

    pub fn stats(&self) -> Stats {
        Stats {
            upload_bytes: self.upload_bytes.get(),
            readback_bytes: self.readback_bytes.get(),
            kernels: self.kernels.get(),
            pipelines: self.pipelines.get(),
            allocations: self.allocations.get(),
        }
    }

    pub fn memory(&self) -> MemoryUse {
        MemoryUse {
            live_bytes: self.live_bytes.get(),
            pooled_bytes: self.pooled_bytes.get(),
            peak_bytes: self.peak_bytes.get(),
        }
    }

    pub fn reset_peak(&self) {
        self.peak_bytes.set(self.live_bytes.get());
    }

    fn lease(&self, bytes: u64) {
        bump(&self.live_bytes, bytes);
        self.peak_bytes
            .set(self.peak_bytes.get().max(self.live_bytes.get()));
    }
    fn unlease(&self, bytes: u64) {
        self.live_bytes
            .set(self.live_bytes.get().saturating_sub(bytes));
    }
    fn pool(&self, bytes: i64) {
        let pooled = self.pooled_bytes.get() as i64 + bytes;
        self.pooled_bytes.set(pooled.max(0) as u64);
    }
}

/// Where a lease's storage goes back to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Home {
    /// The shared pool, bounded by its cap.
    Pool,
    /// A named cache: kept until `trim(name)` or `trim()`.
    Cache(Rc<str>),
    /// Destroyed on release (`device.uncached(fn)`).
    Uncached,
}

/// What a device does with storage it no longer uses.
pub trait Resource {
    /// Frees the storage now (a GPU buffer or texture is destroyed; host memory dropped).
    fn discard(self);
}

/// The size class that serves `bytes`: a multiple of a quarter of the largest power of two
/// not above it (so at most a quarter of the class is unused), never above `max` when
/// `bytes` itself fits, and at least 16 bytes.
pub fn size_class(bytes: u64, max: u64) -> u64 {
    let bytes = bytes.max(16);
    let step = (1u64 << (63 - bytes.leading_zeros())) / 4;
    let class = bytes.div_ceil(step).saturating_mul(step);
    if class > max && bytes <= max {
        bytes.div_ceil(4) * 4
    } else {
        class
    }
}

type FreeKey<K> = (Home, K, u64);

/// What the shared pools of one device may keep, together (caches are not bounded by it).
#[derive(Debug)]
pub struct Budget {
    cap: Cell<u64>,
    bytes: Cell<u64>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            cap: Cell::new(DEFAULT_POOL_CAP),
            bytes: Cell::new(0),
        }
    }
}

/// The free storage of one kind (`K` tells kinds apart: buffer usages, texture formats,
/// element types) of one device.
pub struct Pool<K, R> {
    counters: Rc<Counters>,
    free: RefCell<HashMap<FreeKey<K>, Vec<R>>>,
    budget: Rc<Budget>,
    /// Largest storage the device can create.
    max_bytes: u64,
    /// Set when the device is destroyed: storage given back is freed.
    closed: Cell<bool>,
}

/// Bytes the shared pool keeps by default before freeing storage.
pub const DEFAULT_POOL_CAP: u64 = 64 << 20;

impl<K: Clone + Eq + Hash, R: Resource> Pool<K, R> {
    pub fn new(counters: Rc<Counters>, max_bytes: u64) -> Rc<Pool<K, R>> {
        Pool::with_budget(counters, max_bytes, Rc::new(Budget::default()))
    }

    /// A pool whose shared storage counts against `budget` with other pools of the device.
    pub fn with_budget(
        counters: Rc<Counters>,
        max_bytes: u64,
        budget: Rc<Budget>,
    ) -> Rc<Pool<K, R>> {
        Rc::new(Pool {
            counters,
            free: RefCell::new(HashMap::new()),
            budget,
            max_bytes,
            closed: Cell::new(false),
        })
    }

    /// Frees everything pooled; storage given back later is freed at once.
    pub fn close(&self) {
        self.closed.set(true);
        self.trim(None);
    }

    pub fn set_cap(&self, bytes: u64) {
        self.budget.cap.set(bytes);
        self.shrink_shared(0);
    }

    /// Storage of at least `bytes` of kind `key` for `home`: reused when one of its size
    /// class is free there, else made by `create(class_bytes)` (counted as an allocation).
    pub fn take(
        self: &Rc<Self>,
        key: K,
        bytes: u64,
        home: &Home,
        create: impl FnOnce(u64) -> Result<R>,
    ) -> Result<Lease<K, R>> {
        if bytes > self.max_bytes {
            return Err(GpuTableError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{bytes} bytes exceed the largest storage this device can create ({})",
                    self.max_bytes
                ),
            ));
        }
        let class = size_class(bytes, self.max_bytes);
        let reused = match home {
            Home::Uncached => None,
            _ => {
                let mut free = self.free.borrow_mut();
                let at = (home.clone(), key.clone(), class);
                let raw = free.get_mut(&at).and_then(Vec::pop);
                if free.get(&at).is_some_and(Vec::is_empty) {
                    free.remove(&at);
                }
                raw
            }
        };
        let raw = match reused {
            Some(raw) => {
                self.counters.pool(-(class as i64));
                if *home == Home::Pool {
                    self.budget.bytes.set(self.budget.bytes.get() - class);
                }
                raw
            }
            None => {
                let raw = create(class)?;
                bump(&self.counters.allocations, 1);
                raw
            }
        };
        self.counters.lease(class);
        Ok(Lease {
            raw: Some(raw),
            key,
            bytes: class,
            home: home.clone(),
            pool: Rc::downgrade(self),
        })
    }

    fn give_back(&self, key: K, class: u64, home: Home, raw: R) {
        self.counters.unlease(class);
        if self.closed.get() {
            raw.discard();
            return;
        }
        match home {
            Home::Uncached => raw.discard(),
            Home::Pool if !self.shrink_shared(class) => raw.discard(),
            home => {
                if home == Home::Pool {
                    self.budget.bytes.set(self.budget.bytes.get() + class);
                }
                self.counters.pool(class as i64);
                self.free
                    .borrow_mut()
                    .entry((home, key, class))
                    .or_default()
                    .push(raw);
            }
        }
    }

    /// Frees this pool's shared storage, largest first, until `incoming` more bytes fit the
    /// device's cap; whether they fit.
    fn shrink_shared(&self, incoming: u64) -> bool {
        let cap = self.budget.cap.get();
        while self.budget.bytes.get() + incoming > cap {
            let raw = {
                let mut free = self.free.borrow_mut();
                let largest = free
                    .iter()
                    .filter(|((home, _, _), list)| *home == Home::Pool && !list.is_empty())
                    .max_by_key(|((_, _, class), _)| *class)
                    .map(|(key, _)| key.clone());
                largest.and_then(|key| {
                    let list = free.get_mut(&key)?;
                    let raw = list.pop();
                    if list.is_empty() {
                        free.remove(&key);
                    }
                    raw.map(|raw| (raw, key.2))
                })
            };
            match raw {
                Some((raw, class)) => {
                    raw.discard();
                    self.budget.bytes.set(self.budget.bytes.get() - class);
                    self.counters.pool(-(class as i64));
                }
                None => return false,
            }
        }
        true
    }

    /// Frees the shared pool and every cache (`None`), or one cache.
    pub fn trim(&self, cache: Option<&str>) {
        let drained: Vec<(FreeKey<K>, Vec<R>)> = {
            let mut free = self.free.borrow_mut();
            let keys: Vec<FreeKey<K>> = free
                .keys()
                .filter(|(home, _, _)| match (cache, home) {
                    (None, _) => true,
                    (Some(name), Home::Cache(c)) => &**c == name,
                    _ => false,
                })
                .cloned()
                .collect();
            keys.into_iter()
                .filter_map(|k| free.remove(&k).map(|v| (k, v)))
                .collect()
        };
        for ((home, _, class), list) in drained {
            let bytes = class * list.len() as u64;
            self.counters.pool(-(bytes as i64));
            if home == Home::Pool {
                self.budget
                    .bytes
                    .set(self.budget.bytes.get().saturating_sub(bytes));
            }
            list.into_iter().for_each(Resource::discard);
        }
    }
}

/// One piece of storage in use; dropping it gives the storage back to its pool (or frees
/// it, once the pool is gone).
pub struct Lease<K: Clone + Eq + Hash, R: Resource> {
    raw: Option<R>,
    key: K,
    bytes: u64,
    home: Home,
    pool: Weak<Pool<K, R>>,
}

impl<K: Clone + Eq + Hash, R: Resource> Lease<K, R> {
    /// Storage that belongs to no pool (host data handed in by the user).
    pub fn unpooled(raw: R, key: K) -> Lease<K, R> {
        Lease {
            raw: Some(raw),
            key,
            bytes: 0,
            home: Home::Uncached,
            pool: Weak::new(),
        }
    }

    /// Bytes of device storage this lease holds (its size class).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn key(&self) -> &K {
        &self.key
    }
    pub fn get_mut(&mut self) -> &mut R {
        self.raw
            .as_mut()
            .expect("a lease holds its storage until dropped")
    }
}

impl<K: Clone + Eq + Hash, R: Resource> std::ops::Deref for Lease<K, R> {
    type Target = R;
    fn deref(&self) -> &R {
        self.raw
            .as_ref()
            .expect("a lease holds its storage until dropped")
    }
}

impl<K: Clone + Eq + Hash, R: Resource> Drop for Lease<K, R> {
    fn drop(&mut self) {
        let Some(raw) = self.raw.take() else { return };
        match self.pool.upgrade() {
            Some(pool) => {
                let home = std::mem::replace(&mut self.home, Home::Uncached);
                pool.give_back(self.key.clone(), self.bytes, home, raw);
            }
            None => raw.discard(),
        }
    }
}

/// Which home new storage of a device goes to: the innermost `cached`/`uncached` scope.
#[derive(Default)]
pub struct Homes {
    stack: RefCell<Vec<Home>>,
}

impl Homes {
    pub fn current(&self) -> Home {
        self.stack.borrow().last().cloned().unwrap_or(Home::Pool)
    }
    pub fn enter(&self, home: Home) {
        self.stack.borrow_mut().push(home);
    }
    /// Leaves the innermost scope that is `home` (scopes of overlapping calls may end in
    /// any order).
    pub fn leave(&self, home: &Home) {
        let mut stack = self.stack.borrow_mut();
        if let Some(at) = stack.iter().rposition(|h| h == home) {
            stack.remove(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fake(Rc<Cell<u32>>);
    impl Resource for Fake {
        fn discard(self) {
            self.0.set(self.0.get() + 1);
        }
    }

    type Fixture = (Rc<Pool<u8, Fake>>, Rc<Counters>, Rc<Cell<u32>>);

    fn pool() -> Fixture {
        let counters = Rc::new(Counters::default());
        (
            Pool::new(counters.clone(), 1 << 30),
            counters,
            Rc::new(Cell::new(0)),
        )
    }

    #[test]
    fn size_classes_waste_at_most_a_quarter_and_respect_the_maximum() {
        for bytes in (1..5000u64).chain([1 << 20, (1 << 20) + 1, 3 << 29, (1 << 31) - 4]) {
            let class = size_class(bytes, u64::MAX);
            assert!(class >= bytes);
            assert!(
                class - bytes <= class / 4 || class == 16,
                "{bytes} -> {class}"
            );
        }
        assert_eq!(size_class(1000, 1000), 1000);
        assert_eq!(size_class(1001, 1024), 1024);
        assert_eq!(size_class(1001, 1010), 1004);
        assert!(size_class(1 << 30, 1 << 30) <= 1 << 30);
    }

    #[test]
    fn released_storage_is_reused_counted_and_trimmed() {
        let (pool, counters, discarded) = pool();
        let d = discarded.clone();
        let a = pool
            .take(1, 1000, &Home::Pool, |_| Ok(Fake(d.clone())))
            .unwrap();
        assert_eq!(counters.memory().live_bytes, a.bytes());
        let bytes = a.bytes();
        drop(a);
        assert_eq!(
            counters.memory(),
            MemoryUse {
                live_bytes: 0,
                pooled_bytes: bytes,
                peak_bytes: bytes
            }
        );
        let b = pool
            .take(1, 990, &Home::Pool, |_| panic!("served from the pool"))
            .unwrap();
        assert_eq!(counters.stats().allocations, 1);
        drop(b);
        pool.trim(None);
        assert_eq!(counters.memory().pooled_bytes, 0);
        assert_eq!(discarded.get(), 1);
    }

    #[test]
    fn the_shared_pool_stays_under_its_cap_and_caches_are_kept_apart() {
        let (pool, counters, discarded) = pool();
        pool.set_cap(4096);
        let leases: Vec<_> = (0..10)
            .map(|_| {
                pool.take(1, 1024, &Home::Pool, |_| Ok(Fake(discarded.clone())))
                    .unwrap()
            })
            .collect();
        drop(leases);
        assert!(counters.memory().pooled_bytes <= 4096);
        assert_eq!(discarded.get(), 6);
        let cache = Home::Cache("loop".into());
        let c = pool
            .take(2, 100, &cache, |_| Ok(Fake(discarded.clone())))
            .unwrap();
        drop(c);
        // The cache's storage serves only that cache.
        let fresh = pool
            .take(2, 100, &Home::Pool, |_| Ok(Fake(discarded.clone())))
            .unwrap();
        assert_eq!(counters.stats().allocations, 12);
        drop(fresh);
        let again = pool
            .take(2, 100, &cache, |_| panic!("served from the cache"))
            .unwrap();
        drop(again);
        pool.trim(Some("loop"));
        let uncached = pool
            .take(2, 100, &Home::Uncached, |_| Ok(Fake(discarded.clone())))
            .unwrap();
        let before = discarded.get();
        drop(uncached);
        assert_eq!(
            discarded.get(),
            before + 1,
            "uncached storage is destroyed on release"
        );
    }

    #[test]
    fn storage_past_the_device_maximum_is_limit_exceeded() {
        let (pool, _, discarded) = pool();
        let error = pool
            .take(1, (1 << 30) + 1, &Home::Pool, |_| {
                Ok(Fake(discarded.clone()))
            })
            .err()
            .unwrap();
        assert_eq!(error.code, ErrorCode::LimitExceeded);
    }
}
