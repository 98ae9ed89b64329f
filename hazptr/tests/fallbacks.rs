//! The slow and fallback protection paths protect for real (real-world case "H29" of the
//! project's hazard-pointer case list: slow paths must have the fast path's ordering; the
//! ordering itself is modelled in `loom.rs`, `forced_slow_path_*`):
//!
//! * a thread that has every primary slot busy and protects again inside its own retire
//!   path (a deleter that protects and synchronizes) falls back to backup slots, and
//!   nothing is freed early and nothing hangs (case "H29 (b)", slot exhaustion by nesting
//!   inside one's own update);
//! * a protection made from a thread-local destructor after this crate's own per-thread
//!   state is gone takes a backup slot and still makes `synchronize` wait (case
//!   "H29 (c)").
//!
//! Interleavings are forced with channels and by watching the domain's counters, never by
//! sleeping; every wait is bounded so that a hang fails the test.
#![cfg(not(hazptr_loom))]

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode, PRIMARY_SLOTS};

const HANG: Duration = Duration::from_secs(60);

/// Spin until `cond` holds; fail the test (instead of hanging) after `HANG`.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG, "timed out waiting for {what}");
        thread::yield_now();
    }
}

const ALIVE: u64 = 0x600d;
const POISON: u64 = 0xdead;

/// An object whose canary a free poisons (the objects themselves stay allocated, so a
/// read after the "free" shows up as poison instead of undefined behaviour).
struct Canary(std::sync::atomic::AtomicU64);

impl Canary {
    fn alive() -> Canary {
        Canary(std::sync::atomic::AtomicU64::new(ALIVE))
    }
    fn is_alive(&self) -> bool {
        // Relaxed: the guard's ordering, not this load, forbids seeing the poison.
        self.0.load(Ordering::Relaxed) == ALIVE
    }
    fn poison(&self) {
        // Relaxed: ordered after every protection of the object by `synchronize`.
        self.0.store(POISON, Ordering::Relaxed);
    }
}

/// State the deleter below reaches (a deleter is a plain function).
struct NestingCase {
    domain: Domain,
    /// The object the concurrent reader protects; the deleter synchronizes on it.
    x: &'static Canary,
    /// Something else to protect from inside the deleter (the fifth, nested guard).
    q: &'static u64,
    /// Addresses the deleter synchronized on, and the slow-path count it saw.
    deleted: AtomicUsize,
    nested_slow_path: AtomicBool,
    /// Tells the reader that the deleter's synchronize is about to start.
    in_deleter: Mutex<Option<mpsc::Sender<()>>>,
}

static NESTING: OnceLock<NestingCase> = OnceLock::new();

/// The deleter: runs inside the writer's `reclaim`, while the writer still holds a guard
/// in every primary slot. It protects once more (a backup slot), then synchronizes on `x`,
/// which the reader protects, then poisons `x` (the "free").
unsafe fn nested_deleter(p: *mut u64) {
    let case = NESTING.get().expect("set up before retire");
    let before = case.domain.stats().slow_path_acquires;
    let g = case.domain.protect_addr(case.q as *const u64);
    case.nested_slow_path.store(
        case.domain.stats().slow_path_acquires > before,
        Ordering::Relaxed,
    );
    if let Some(tx) = case.in_deleter.lock().unwrap().take() {
        tx.send(()).unwrap();
    }
    case.domain
        .synchronize(case.x as *const Canary)
        .expect("the writer does not protect x");
    case.x.poison();
    drop(g);
    // SAFETY: `p` came from `Box::into_raw` in the test and is deleted once, here.
    drop(unsafe { Box::from_raw(p) });
    case.deleted.fetch_add(1, Ordering::Relaxed);
}

/// Case "H29 (b)": slot exhaustion by nesting protects inside one's own retire path.
#[test]
fn nesting_inside_ones_own_retire_path_falls_back_and_neither_frees_early_nor_hangs() {
    let (entered_tx, entered_rx) = mpsc::channel();
    let case = NESTING.get_or_init(|| NestingCase {
        domain: Domain::new(FenceMode::Symmetric),
        x: Box::leak(Box::new(Canary::alive())),
        q: Box::leak(Box::new(0u64)),
        deleted: AtomicUsize::new(0),
        nested_slow_path: AtomicBool::new(false),
        in_deleter: Mutex::new(Some(entered_tx)),
    });
    let d = &case.domain;
    let src: &'static AtomicPtr<Canary> = Box::leak(Box::new(AtomicPtr::new(
        case.x as *const Canary as *mut Canary,
    )));

    // The reader: protects x through `src`, holds it until the writer's nested
    // synchronize is seen waiting, reads it, lets go.
    let (protected_tx, protected_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let reader = thread::spawn(move || {
        let d = &NESTING.get().unwrap().domain;
        let g = d.protect(src).expect("x is published");
        protected_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        // SAFETY: x stays allocated for the whole test (a "free" only poisons it).
        assert!(
            unsafe { g.as_ref() }.is_alive(),
            "x was freed while protected"
        );
        drop(g);
    });
    protected_rx.recv().unwrap();

    // The writer: every primary slot busy, unpublish x, then retire an object whose
    // deleter nests a fifth protect and synchronizes on x.
    let writer = thread::spawn(move || {
        let case = NESTING.get().unwrap();
        let d = &case.domain;
        let words: Vec<u64> = vec![0; PRIMARY_SLOTS];
        let held: Vec<_> = words
            .iter()
            .map(|w| d.protect_addr(w as *const u64))
            .collect();
        assert_eq!(
            d.stats().slow_path_acquires,
            0,
            "the primary slots sufficed so far"
        );
        let other = Box::leak(Box::new(Canary::alive()));
        // Release: a reader that loads the new object sees its initialization.
        src.store(other, Ordering::Release);
        // SAFETY: never published; the deleter frees it once.
        unsafe { d.retire(Box::into_raw(Box::new(7u64)), nested_deleter) };
        // The deleter runs here, on this thread, with every primary slot still held.
        assert_eq!(d.reclaim(), 1);
        drop(held);
    });

    entered_rx
        .recv_timeout(HANG)
        .expect("the deleter never ran");
    let polls = d.stats().slot_polls;
    wait_until("the nested synchronize to wait for the reader", || {
        d.stats().slot_polls > polls
    });
    assert!(!writer.is_finished(), "the nested synchronize did not wait");
    go_tx.send(()).unwrap();
    reader.join().unwrap();
    writer.join().expect("the writer hung or panicked");

    let s = d.stats();
    assert_eq!(case.deleted.load(Ordering::Relaxed), 1);
    assert!(!case.x.is_alive(), "x is freed after its synchronize");
    assert!(
        case.nested_slow_path.load(Ordering::Relaxed),
        "the nested protect did not take the slow path: {s:?}"
    );
    assert!(s.slow_path_acquires >= 1 && s.backup_slots >= 1, "{s:?}");
}

/// Case "H29 (c)": protection from a thread-local destructor after this crate's own
/// per-thread state is gone.
///
/// The thread first touches `LATE_READER` (so its destructor is registered first), then
/// protects once (which registers this crate's per-thread state second). Thread-local
/// destructors run in reverse order of registration, so this crate's state is torn down
/// first and `LATE_READER`'s destructor protects without it: the protection must fall
/// back to a backup slot (the test checks that it did) and still hold up a `synchronize`.
#[test]
fn protection_from_a_thread_local_destructor_is_real_after_hazptr_state_is_gone() {
    static DOMAIN: OnceLock<Domain> = OnceLock::new();
    static BUCKET: u64 = 0;
    static PROTECTED: Mutex<Option<mpsc::Sender<u64>>> = Mutex::new(None);
    static GO: Mutex<Option<mpsc::Receiver<()>>> = Mutex::new(None);

    struct LateReader;
    impl Drop for LateReader {
        fn drop(&mut self) {
            let d = DOMAIN.get().unwrap();
            let before = d.stats().slow_path_acquires;
            let g = d.protect_addr(&BUCKET as *const u64);
            let slow = d.stats().slow_path_acquires - before;
            PROTECTED
                .lock()
                .unwrap()
                .take()
                .unwrap()
                .send(slow)
                .unwrap();
            let go = GO.lock().unwrap().take().unwrap();
            go.recv().unwrap();
            drop(g);
        }
    }
    thread_local! {
        static LATE_READER: Cell<Option<LateReader>> = const { Cell::new(None) };
    }

    let d = DOMAIN.get_or_init(|| Domain::new(FenceMode::Symmetric));
    let (protected_tx, protected_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel();
    *PROTECTED.lock().unwrap() = Some(protected_tx);
    *GO.lock().unwrap() = Some(go_rx);

    let exiting = thread::spawn(move || {
        LATE_READER.with(|r| r.set(Some(LateReader)));
        // Registers this crate's per-thread state (after LATE_READER's destructor).
        drop(d.protect_addr(&BUCKET as *const u64));
    });
    let slow = protected_rx
        .recv_timeout(HANG)
        .expect("the destructor never protected");
    assert_eq!(
        slow, 1,
        "the protection in the destructor did not take a backup slot"
    );

    let polls = d.stats().slot_polls;
    let writer = thread::spawn(move || d.synchronize(&BUCKET as *const u64).unwrap());
    wait_until(
        "synchronize to wait for the destructor's protection",
        || d.stats().slot_polls > polls,
    );
    assert!(!writer.is_finished(), "synchronize did not wait");
    go_tx.send(()).unwrap();
    exiting.join().expect("the exiting thread crashed");
    writer.join().unwrap();
}
