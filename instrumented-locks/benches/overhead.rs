//! What the validating wrappers cost, next to their peers, in one run.
//!
//! Columns, per row (each on its own lock instances):
//!
//! - `peer`: real parking_lot 0.12 (renamed `real_parking_lot`), or `std::sync` for the
//!   std-flavoured rows;
//! - `dd`: parking_lot 0.11 with its `deadlock_detection` feature (renamed `parking_lot_dd`);
//! - `tm`: tracing-mutex 0.3 (its always-tracing parking_lot types): lock-order graph, cycle
//!   check on every new edge;
//! - `dx`: deloxide 1.1 with its `lock-order-graph` feature (started once, with a callback
//!   that counts reports: none is expected);
//! - `floor`: this crate's raw mutex with a held-lock stack and nothing else (no class, no
//!   chain, no dependency): the lock's address pushed on a thread-local array before it is
//!   taken, found and removed before it is released, both out of line as the wrappers'
//!   lockdep calls are. What the least held-lock tracking costs on the machine, for the
//!   mutex rows;
//! - `raw`: lock_api's types over this crate's raw locks: exactly what the wrappers compile to
//!   without the `validate` feature (the layout test asserts the sizes);
//! - `on`: the wrappers, validating (every acquisition a chain-cache hit after the first);
//! - `off`: the same wrappers with validation switched off at run time (`set_enabled(false)`).
//!
//! Rows: mutex lock+unlock and try_lock, a new mutex each time (made, locked once, dropped),
//! a nested pair A→B (and the same pair released in the order taken, as a tuple of guards
//! drops), A→B then A→C under one hold of A (B and C take turns in one slot of the held
//! stack, so every second lock is a chain-cache hit with no memo), an 8-deep nest (eight
//! classes), hand-over-hand down the same eight (each taken while the one before is held, which
//! then goes), eight instances of one class held in
//! one order (an ordered run of shards; and the same released in the order taken, as a tuple or
//! a vector of guards drops), rwlock read /
//! read_recursive / upgradable_read / write / try_read / try_write, re-entrant lock, a condvar's
//! `notify_one` with no waiter and `wait_for` with a zero timeout (the wait's release and
//! relock, no other thread), condvar
//! ping-pong between two threads (one round trip: two notifies, two waits), and std's Mutex
//! and RwLock read. Single thread and uncontended except the ping-pong.
//!
//! Method: 45 rounds; each round runs every cell of every row once (cells in rotating order),
//! `ops` operations each (short cells, so that a busy phase of the machine spoils few rounds
//! whole); per cell the median over rounds of ns/op, and per ratio or difference the median
//! over rounds of the per-round value (a busy phase hits a whole round, so a ratio within a
//! round stays fair). Overheads per lock: `on`, `off` and `floor` against `raw` (the same lock without
//! validation), the other detectors against `peer` (the lock they wrap). Run `cargo bench -p
//! instrumented-locks --bench overhead` (fat LTO in the workspace's bench profile); `--
//! pair mutex` keeps only the rows whose name contains `pair` or `mutex`, and
//! `OVERHEAD_ROUNDS=n` sets the number of rounds; `OVERHEAD_COLS=raw,on` keeps only the named
//! columns (the others, and the figures that need them, print as `–`); `OVERHEAD_LOCK_STAT=1`
//! runs with lock_stat on. With
//! `--no-default-features` the `on` column is the feature-off build and must equal `raw`.
//! Under `cargo test --benches`, one short round.

use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use instrumented_locks::{raw, set_enabled, std_sync};

/// A cell: runs its operation `n` times.
type Run<'a> = Box<dyn FnMut(u64) + 'a>;

/// What a column measures.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Col {
    Peer,
    Dd,
    Tm,
    Dx,
    Raw,
    Floor,
    On,
    Off,
}

struct Row<'a> {
    name: &'static str,
    /// Locks an operation takes (for per-lock overheads).
    locks: u32,
    /// Operations per cell per round in bench mode.
    ops: u64,
    cells: Vec<(Col, Run<'a>)>,
}

/// A row whose cells all run `body` (with `$x` bound to the cell's locks) in a loop: the
/// wrappers have the peers' API, so one body serves every column.
macro_rules! row {
    ($name:expr, $locks:expr, $ops:expr, [$($col:ident: $lock:expr),* $(,)?], |$x:ident| $body:expr) => {
        Row {
            name: $name,
            locks: $locks,
            ops: $ops,
            cells: vec![$(
                (Col::$col, {
                    let $x = $lock;
                    Box::new(move |n: u64| {
                        for _ in 0..n {
                            $body;
                        }
                    }) as Run<'_>
                })
            ),*],
        }
    };
}

/// One round trip of a condvar ping-pong: this thread sets the flag and waits for the other
/// to clear it, `n` times.
macro_rules! ping_pong {
    ($m:expr, $cv:expr, $n:expr) => {{
        let (m, cv, n) = ($m, $cv, $n);
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..n {
                    let mut g = m.lock();
                    while !*g {
                        cv.wait(&mut g);
                    }
                    *g = false;
                    cv.notify_one();
                }
            });
            for _ in 0..n {
                let mut g = m.lock();
                *g = true;
                cv.notify_one();
                while *g {
                    cv.wait(&mut g);
                }
            }
        });
    }};
}

type Raw<T> = lock_api::Mutex<raw::RawMutex, T>;
type Floor<T> = lock_api::Mutex<FloorRaw, T>;
type RawRw<T> = lock_api::RwLock<raw::RawRwLock, T>;
type RawRe<T> = lock_api::ReentrantMutex<raw::RawMutex, raw::RawThreadId, T>;
type Ours<T> = instrumented_locks::Mutex<T>;
type OursRw<T> = instrumented_locks::RwLock<T>;
type DdMutex<T> = parking_lot_dd::Mutex<T>;
type TmMutex<T> = tracing_mutex::parkinglot::tracing::Mutex<T>;
type TmRw<T> = tracing_mutex::parkinglot::tracing::RwLock<T>;
type DxMutex<T> = deloxide::Mutex<T>;
type DxRw<T> = deloxide::RwLock<T>;

/// The `floor` column's raw mutex (see the module docs).
struct FloorRaw(raw::RawMutex);

thread_local! {
    /// The `floor` column's held-lock stack: its depth and its slots (no destructor, so the
    /// access is a plain thread-local address, as lockdep's own state).
    static FLOOR_DEPTH: Cell<usize> = const { Cell::new(0) };
    static FLOOR_STACK: [Cell<usize>; 64] = const { [const { Cell::new(0) }; 64] };
}

/// Pushes `addr` on the `floor` stack (at most 64 held: the rows hold eight).
#[inline(never)]
fn floor_push(addr: usize) {
    let n = FLOOR_DEPTH.get();
    FLOOR_STACK.with(|s| s[n % 64].set(addr));
    FLOOR_DEPTH.set(n + 1);
}

/// Removes the topmost `addr` from the `floor` stack, the entries above it moving down.
/// Panics if it is not there.
#[inline(never)]
fn floor_pop(addr: usize) {
    let n = FLOOR_DEPTH.get();
    FLOOR_STACK.with(|s| {
        let mut i = n;
        while i > 0 && s[(i - 1) % 64].get() != addr {
            i -= 1;
        }
        assert!(i > 0, "floor: a lock released that is not held");
        for j in i..n {
            s[(j - 1) % 64].set(s[j % 64].get());
        }
    });
    FLOOR_DEPTH.set(n - 1);
}

// SAFETY: every operation is the inner raw mutex's, with the floor stack's bookkeeping (of
// this thread only) before it.
unsafe impl lock_api::RawMutex for FloorRaw {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: FloorRaw = FloorRaw(<raw::RawMutex as lock_api::RawMutex>::INIT);
    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock(&self) {
        floor_push(std::ptr::from_ref(self) as usize);
        self.0.lock();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let locked = self.0.try_lock();
        if locked {
            floor_push(std::ptr::from_ref(self) as usize);
        }
        locked
    }

    #[inline]
    unsafe fn unlock(&self) {
        floor_pop(std::ptr::from_ref(self) as usize);
        // SAFETY: the caller holds the lock (lock_api's contract).
        unsafe { self.0.unlock() };
    }
}

/// Eight locks of one implementation (eight construction sites: eight classes).
macro_rules! eight {
    ($new:expr) => {
        [$new, $new, $new, $new, $new, $new, $new, $new]
    };
}

/// Locks the eight locks of `x` in order, all held at once, then drops the guards last first.
macro_rules! nest_eight {
    ($x:expr) => {{
        let x = black_box($x);
        let g0 = x[0].lock();
        let g1 = x[1].lock();
        let g2 = x[2].lock();
        let g3 = x[3].lock();
        let g4 = x[4].lock();
        let g5 = x[5].lock();
        let g6 = x[6].lock();
        let g7 = x[7].lock();
        black_box((&g0, &g1, &g2, &g3, &g4, &g5, &g6, &g7));
    }};
}

/// [`nest_eight!`] with the guards in a tuple, dropped as it is: its first field first, so
/// every release but the last is of the lock at the bottom of the held stack (first taken,
/// first released: a vector or a struct of guards).
macro_rules! nest_eight_in_order {
    ($x:expr) => {{
        let x = black_box($x);
        let g = (
            x[0].lock(),
            x[1].lock(),
            x[2].lock(),
            x[3].lock(),
            x[4].lock(),
            x[5].lock(),
            x[6].lock(),
            x[7].lock(),
        );
        black_box(&g);
    }};
}

/// Hand-over-hand locking (lock coupling) down the eight locks: each lock is taken while the
/// one before it is held, and then the one before is released (`g = next`: the old guard
/// drops after the next lock is taken), so every release but the last is of the entry just
/// below the top, and the next acquisition follows it (a walk down a linked list or a tree).
macro_rules! hand_over_hand {
    ($x:expr) => {{
        let x = black_box($x);
        let mut g = x[0].lock();
        for m in &x[1..] {
            g = m.lock();
        }
        black_box(&g);
    }};
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    // `OVERHEAD_ROUNDS` overrides the number of rounds (a quick look while profiling).
    let rounds = match std::env::var("OVERHEAD_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
    {
        Some(r) if bench => r,
        _ if bench => 45,
        _ => 1,
    };
    // Other arguments that are not flags keep only the rows whose name contains one of them.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    const OPS: u64 = 60_000;

    // `OVERHEAD_LOCK_STAT=1`: lock_stat on for the whole run (the `on` column then measures
    // validation with lock_stat counting; `off` and the peers are unaffected).
    let lock_stat = std::env::var_os("OVERHEAD_LOCK_STAT").is_some_and(|v| v == "1");
    #[cfg(feature = "validate")]
    instrumented_locks::set_lock_stat(lock_stat);

    static DX_REPORTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    deloxide::Deloxide::new()
        .callback(|_| {
            // Relaxed: a count read after the run.
            DX_REPORTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .start()
        .expect("deloxide starts");

    // The locks of the mutex rows, per column. Spelled out, not made by a macro: a lock's class
    // is its construction site, and a macro's locks would all have its invocation's (the `on`
    // and `off` columns, and the tuples of one row, one class).
    let m = (
        real_parking_lot::Mutex::new(0u64),
        DdMutex::new(0u64),
        TmMutex::new(0u64),
        DxMutex::new(0u64),
        Raw::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Floor::new(0u64),
    );
    let a = (
        real_parking_lot::Mutex::new(0u64),
        DdMutex::new(0u64),
        TmMutex::new(0u64),
        DxMutex::new(0u64),
        Raw::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Floor::new(0u64),
    );
    let b = (
        real_parking_lot::Mutex::new(0u64),
        DdMutex::new(0u64),
        TmMutex::new(0u64),
        DxMutex::new(0u64),
        Raw::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Floor::new(0u64),
    );
    let c = (
        real_parking_lot::Mutex::new(0u64),
        DdMutex::new(0u64),
        TmMutex::new(0u64),
        DxMutex::new(0u64),
        Raw::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Floor::new(0u64),
    );
    let d_pl = eight!(real_parking_lot::Mutex::new(0u64));
    let d_dd = eight!(DdMutex::new(0u64));
    let d_tm = eight!(TmMutex::new(0u64));
    let d_dx = eight!(DxMutex::new(0u64));
    let d_raw = eight!(Raw::new(0u64));
    let d_floor = eight!(Floor::new(0u64));
    // Spelled out: eight construction sites, eight classes (one site would nest a class in
    // itself).
    let d_on = [
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
    ];
    let d_off = [
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
        Ours::new(0u64),
    ];
    // One construction site: eight instances of one class, held in one order (every shard of
    // a sharded map), validated by instance order: an ordered run.
    let s_on = eight!(Ours::new(0u64));
    let s_off = eight!(Ours::new(0u64));
    let l = (
        real_parking_lot::RwLock::new(0u64),
        parking_lot_dd::RwLock::new(0u64),
        TmRw::new(0u64),
        DxRw::new(0u64),
        RawRw::new(0u64),
        OursRw::new(0u64),
        OursRw::new(0u64),
    );
    let re = (
        real_parking_lot::ReentrantMutex::new(0u64),
        parking_lot_dd::ReentrantMutex::new(0u64),
        tracing_mutex::parkinglot::tracing::ReentrantMutex::new(0u64),
        RawRe::new(0u64),
        instrumented_locks::ReentrantMutex::new(0u64),
        instrumented_locks::ReentrantMutex::new(0u64),
    );
    let cv = (
        (
            real_parking_lot::Mutex::new(false),
            real_parking_lot::Condvar::new(),
        ),
        (DdMutex::new(false), parking_lot_dd::Condvar::new()),
        (DxMutex::new(false), deloxide::Condvar::new()),
        (Raw::new(false), raw::Condvar::new()),
        (Ours::new(false), instrumented_locks::Condvar::new()),
        (Ours::new(false), instrumented_locks::Condvar::new()),
    );
    let sm = (
        std::sync::Mutex::new(0u64),
        std_sync::Mutex::new(0u64),
        std_sync::Mutex::new(0u64),
    );
    let sl = (
        std::sync::RwLock::new(0u64),
        std_sync::RwLock::new(0u64),
        std_sync::RwLock::new(0u64),
    );

    let mut rows = vec![
        row!("mutex lock+unlock", 1, OPS,
            [Peer: &m.0, Dd: &m.1, Tm: &m.2, Dx: &m.3, Raw: &m.4, Floor: &m.7, On: &m.5,
             Off: &m.6],
            |x| *black_box(x).lock() += 1),
        // A lock made, taken once and dropped, as a program that makes locks as it goes (a
        // channel, a connection, a cache entry each): one construction site, so one class;
        // validated, each new lock's first acquisition finds its class (not yet in the map).
        row!("new mutex: make, lock+unlock, drop", 1, OPS / 2,
        [Peer: &|| real_parking_lot::Mutex::new(0u64), Dd: &|| DdMutex::new(0u64),
         Tm: &|| TmMutex::new(0u64), Dx: &|| DxMutex::new(0u64), Raw: &|| Raw::new(0u64),
         On: &|| Ours::new(0u64), Off: &|| Ours::new(0u64)],
        |x| {
            // Made, locked once, and dropped at the end of the block.
            let m = black_box(x());
            *black_box(&m).lock() += 1;
        }),
        row!("mutex try_lock+unlock", 1, OPS,
            [Peer: &m.0, Dd: &m.1, Tm: &m.2, Dx: &m.3, Raw: &m.4, Floor: &m.7, On: &m.5,
             Off: &m.6],
            |x| *black_box(x).try_lock().unwrap() += 1),
        row!("nested pair A→B", 2, OPS,
        [Peer: (&a.0, &b.0), Dd: (&a.1, &b.1), Tm: (&a.2, &b.2), Dx: (&a.3, &b.3),
         Raw: (&a.4, &b.4), Floor: (&a.7, &b.7), On: (&a.5, &b.5), Off: (&a.6, &b.6)],
        |x| {
            let mut ga = black_box(x.0).lock();
            let mut gb = black_box(x.1).lock();
            *ga += 1;
            *gb += 1;
        }),
        row!("nested pair, released in order taken", 2, OPS,
        [Peer: (&a.0, &b.0), Dd: (&a.1, &b.1), Tm: (&a.2, &b.2), Dx: (&a.3, &b.3),
         Raw: (&a.4, &b.4), Floor: (&a.7, &b.7), On: (&a.5, &b.5), Off: (&a.6, &b.6)],
        |x| {
            // A tuple of guards drops its first field first: the lock below goes first.
            let g = (black_box(x.0).lock(), black_box(x.1).lock());
            black_box(&g);
        }),
        row!("A→B, then A→C (a chain-cache hit)", 3, OPS / 2,
        [Peer: (&a.0, &b.0, &c.0), Dd: (&a.1, &b.1, &c.1), Tm: (&a.2, &b.2, &c.2),
         Dx: (&a.3, &b.3, &c.3), Raw: (&a.4, &b.4, &c.4), Floor: (&a.7, &b.7, &c.7),
         On: (&a.5, &b.5, &c.5), Off: (&a.6, &b.6, &c.6)],
        |x| {
            // B and C take turns in the slot above A: no memo holds, the chain cache answers.
            let mut ga = black_box(x.0).lock();
            *black_box(x.1).lock() += 1;
            *black_box(x.2).lock() += 1;
            *ga += 1;
        }),
        row!("8-deep nest", 8, OPS / 4,
        [Peer: &d_pl, Dd: &d_dd, Tm: &d_tm, Dx: &d_dx, Raw: &d_raw, Floor: &d_floor, On: &d_on,
         Off: &d_off],
        |x| nest_eight!(x)),
        row!("hand over hand down 8 locks", 8, OPS / 4,
        [Peer: &d_pl, Dd: &d_dd, Tm: &d_tm, Dx: &d_dx, Raw: &d_raw, Floor: &d_floor, On: &d_on,
         Off: &d_off],
        |x| hand_over_hand!(x)),
        row!("8 shards of one class", 8, OPS / 4,
        [Peer: &d_pl, Dd: &d_dd, Tm: &d_tm, Dx: &d_dx, Raw: &d_raw, On: &s_on, Off: &s_off],
        |x| nest_eight!(x)),
        row!("8 shards, released in the order taken", 8, OPS / 4,
        [Peer: &d_pl, Dd: &d_dd, Tm: &d_tm, Dx: &d_dx, Raw: &d_raw, On: &s_on, Off: &s_off],
        |x| nest_eight_in_order!(x)),
        row!("rwlock read", 1, OPS,
            [Peer: &l.0, Dd: &l.1, Tm: &l.2, Dx: &l.3, Raw: &l.4, On: &l.5, Off: &l.6],
            |x| black_box(*black_box(x).read())),
        row!("rwlock read_recursive", 1, OPS,
            [Peer: &l.0, Dd: &l.1, Tm: &l.2, Raw: &l.4, On: &l.5, Off: &l.6],
            |x| black_box(*black_box(x).read_recursive())),
        row!("rwlock upgradable_read", 1, OPS,
            [Peer: &l.0, Dd: &l.1, Tm: &l.2, Raw: &l.4, On: &l.5, Off: &l.6],
            |x| black_box(*black_box(x).upgradable_read())),
        row!("rwlock write", 1, OPS,
            [Peer: &l.0, Dd: &l.1, Tm: &l.2, Dx: &l.3, Raw: &l.4, On: &l.5, Off: &l.6],
            |x| *black_box(x).write() += 1),
        row!("rwlock try_read", 1, OPS,
            [Peer: &l.0, Dd: &l.1, Tm: &l.2, Dx: &l.3, Raw: &l.4, On: &l.5, Off: &l.6],
            |x| black_box(*black_box(x).try_read().unwrap())),
        row!("rwlock try_write", 1, OPS,
            [Peer: &l.0, Dd: &l.1, Tm: &l.2, Dx: &l.3, Raw: &l.4, On: &l.5, Off: &l.6],
            |x| *black_box(x).try_write().unwrap() += 1),
        row!("reentrant lock", 1, OPS,
            [Peer: &re.0, Dd: &re.1, Tm: &re.2, Raw: &re.3, On: &re.4, Off: &re.5],
            |x| black_box(*black_box(x).lock())),
        row!("condvar notify_one, no waiter (under the lock)", 1, OPS,
        [Peer: &cv.0, Dd: &cv.1, Raw: &cv.3, On: &cv.4, Off: &cv.5],
        |x| {
            let g = black_box(&x.0).lock();
            black_box(&x.1).notify_one();
            drop(g);
        }),
        row!("condvar wait_for(0): times out, relocks", 1, OPS / 4,
        [Peer: &cv.0, Dd: &cv.1, Raw: &cv.3, On: &cv.4, Off: &cv.5],
        |x| {
            let mut g = black_box(&x.0).lock();
            black_box(black_box(&x.1).wait_for(&mut g, Duration::ZERO));
        }),
        row!("std Mutex lock+unlock", 1, OPS, [Peer: &sm.0, On: &sm.1, Off: &sm.2],
            |x| *black_box(x).lock().unwrap() += 1),
        row!("std RwLock read", 1, OPS, [Peer: &sl.0, On: &sl.1, Off: &sl.2],
            |x| black_box(*black_box(x).read().unwrap())),
    ];
    let pp_ops = if bench { 700 } else { 10 };
    rows.push(Row {
        name: "condvar ping-pong (round trip)",
        locks: 2,
        ops: pp_ops,
        cells: vec![
            (
                Col::Peer,
                Box::new(|n: u64| ping_pong!(&cv.0 .0, &cv.0 .1, n)) as Run<'_>,
            ),
            (
                Col::Dd,
                Box::new(|n: u64| ping_pong!(&cv.1 .0, &cv.1 .1, n)),
            ),
            (
                Col::Dx,
                Box::new(|n: u64| ping_pong!(&cv.2 .0, &cv.2 .1, n)),
            ),
            (
                Col::Raw,
                Box::new(|n: u64| ping_pong!(&cv.3 .0, &cv.3 .1, n)),
            ),
            (
                Col::On,
                Box::new(|n: u64| ping_pong!(&cv.4 .0, &cv.4 .1, n)),
            ),
            (
                Col::Off,
                Box::new(|n: u64| ping_pong!(&cv.5 .0, &cv.5 .1, n)),
            ),
        ],
    });

    if !filters.is_empty() {
        rows.retain(|r| filters.iter().any(|f| r.name.contains(f.as_str())));
    }
    if let Ok(cols) = std::env::var("OVERHEAD_COLS") {
        let keep: Vec<String> = cols.split(',').map(str::to_lowercase).collect();
        for row in &mut rows {
            row.cells
                .retain(|(c, _)| keep.contains(&format!("{c:?}").to_lowercase()));
        }
    }

    // ns/op per row, cell, round.
    let mut ns: Vec<Vec<Vec<f64>>> = rows
        .iter()
        .map(|r| vec![Vec::new(); r.cells.len()])
        .collect();
    for round in 0..rounds {
        for (r, row) in rows.iter_mut().enumerate() {
            let n = if bench { row.ops } else { row.ops.min(100) };
            let k = row.cells.len();
            for j in 0..k {
                let c = (j + round) % k;
                let (col, run) = &mut row.cells[c];
                set_enabled(*col != Col::Off);
                let t0 = Instant::now();
                run(n);
                ns[r][c].push(t0.elapsed().as_secs_f64() * 1e9 / n as f64);
                set_enabled(true);
            }
        }
    }

    let mode = if cfg!(feature = "validate") {
        "validate on"
    } else {
        "validate feature OFF: `on` is the feature-off build"
    };
    let stat = if lock_stat { ", lock_stat on" } else { "" };
    println!("\noverhead ({mode}{stat}): {rounds} rounds, medians over rounds, ns per operation");
    println!(
        "| row | peer | dd | tm | dx | raw | floor | on | off | on/peer | per lock: on−raw | off−raw | floor−raw | dd−peer | tm−peer | dx−peer |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (row, cells) in rows.iter().zip(&ns) {
        let at = |col: Col| {
            row.cells
                .iter()
                .position(|(c, _)| *c == col)
                .map(|i| &cells[i])
        };
        let med = |col: Col| at(col).map(|v| median(&mut v.clone()));
        let per_round = |x: Col, y: Col, f: &dyn Fn(f64, f64) -> f64| -> Option<f64> {
            let (a, b) = (at(x)?, at(y)?);
            let mut v: Vec<f64> = a.iter().zip(b).map(|(a, b)| f(*a, *b)).collect();
            Some(median(&mut v))
        };
        let locks = f64::from(row.locks);
        let per_lock = |x: Col, y: Col| per_round(x, y, &|a, b| (a - b) / locks);
        let show = |v: Option<f64>, p: usize| v.map_or("–".to_string(), |v| format!("{v:.p$}"));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.name,
            show(med(Col::Peer), 1),
            show(med(Col::Dd), 1),
            show(med(Col::Tm), 1),
            show(med(Col::Dx), 1),
            show(med(Col::Raw), 1),
            show(med(Col::Floor), 1),
            show(med(Col::On), 1),
            show(med(Col::Off), 1),
            show(per_round(Col::On, Col::Peer, &|a, b| a / b), 2),
            show(per_lock(Col::On, Col::Raw), 1),
            show(per_lock(Col::Off, Col::Raw), 1),
            show(per_lock(Col::Floor, Col::Raw), 1),
            show(per_lock(Col::Dd, Col::Peer), 1),
            show(per_lock(Col::Tm, Col::Peer), 1),
            show(per_lock(Col::Dx, Col::Peer), 1),
        );
    }
    // Relaxed: read after every cell ran.
    let dx = DX_REPORTS.load(std::sync::atomic::Ordering::Relaxed);
    println!("deloxide reports during the run: {dx} (none expected)");
}
