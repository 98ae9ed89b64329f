//! Address reuse (ABA) at the hazptr layer (real-world case "H30" of the project's
//! hazard-pointer case list: use the re-loaded pointer; synchronize by address stays
//! conservative):
//!
//! * `protect` hands out the pointer it loaded *after* publishing its slot, never an
//!   earlier load, and a `synchronize` on an address reused by a new object waits for the
//!   readers of the new object (case "H30 (a)"; the ordering is modelled in `loom.rs`,
//!   `synchronize_on_a_reused_address_waits_for_the_new_protection`);
//! * a single writer publishing objects with increasing versions from a LIFO free list
//!   (every freed object is the next one allocated, at the same address) never lets a
//!   reader see a version go backwards or a freed object (case "H30 (b)", bounded).
#![cfg(not(hazptr_loom))]

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};

const HANG: Duration = Duration::from_secs(60);

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG, "timed out waiting for {what}");
        thread::yield_now();
    }
}

/// An object with a version and a "freed" mark. Objects are never deallocated during a
/// run; freeing marks them and puts them on a free list, so a read after a free shows up
/// as the mark instead of as undefined behaviour.
#[derive(Default)]
struct Versioned {
    version: AtomicU64,
    freed: AtomicBool,
}

impl Versioned {
    /// (Re)initialize as a new object of `version` (before it is published).
    fn init(&self, version: u64) {
        // Relaxed: published by the Release store of the pointer that follows.
        self.version.store(version, Ordering::Relaxed);
        self.freed.store(false, Ordering::Relaxed);
    }
    /// Relaxed: a free comes after `synchronize`, which orders it after every protection.
    fn free(&self) {
        self.freed.store(true, Ordering::Relaxed);
    }
    /// Relaxed loads: the guard's ordering is what must keep them from seeing a free.
    fn read(&self) -> (u64, bool) {
        (
            self.version.load(Ordering::Relaxed),
            self.freed.load(Ordering::Relaxed),
        )
    }
}

/// Case "H30 (a)": reuse at validation.
#[test]
fn protect_returns_the_reloaded_pointer_and_synchronize_on_a_reused_address_waits() {
    let d: &'static Domain = Box::leak(Box::new(Domain::new(FenceMode::Symmetric)));
    let x: &'static Versioned = Box::leak(Box::default());
    let b: &'static Versioned = Box::leak(Box::default());
    let dd: &'static Versioned = Box::leak(Box::default());
    let ptr = |v: &'static Versioned| v as *const Versioned as *mut Versioned;
    x.init(1);
    let src: &'static AtomicPtr<Versioned> = Box::leak(Box::new(AtomicPtr::new(ptr(x))));

    // W: unpublish A@X; no slot holds X, so synchronize returns at once; free A.
    // Release: a reader that loads `b` sees its initialization.
    b.init(10);
    src.store(ptr(b), Ordering::Release);
    d.synchronize(ptr(x)).unwrap();
    x.free();
    assert_eq!(d.stats().synchronize_waits, 0);
    // W: a new object C lands at the same address X and is published.
    x.init(2);
    // Release: the reader sees C's initialization through the pointer it loads.
    src.store(ptr(x), Ordering::Release);

    // R: protect; the guard's pointer is the one loaded after publishing, C@X.
    let (protected_tx, protected_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let reader = thread::spawn(move || {
        let g = d.protect(src).expect("published");
        assert_eq!(g.as_ptr(), ptr(x));
        // SAFETY: objects stay allocated for the whole test (a free only marks them).
        let (version, freed) = unsafe { g.as_ref() }.read();
        assert_eq!(
            (version, freed),
            (2, false),
            "read the reused address's old object"
        );
        protected_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        // SAFETY: as above.
        assert_eq!(
            unsafe { g.as_ref() }.read(),
            (2, false),
            "C freed while protected"
        );
        drop(g);
    });
    protected_rx.recv().unwrap();

    // W: unpublish C@X and synchronize on X: must wait for R's protection of C.
    dd.init(3);
    // Release: as above.
    src.store(ptr(dd), Ordering::Release);
    let polls = d.stats().slot_polls;
    let writer = thread::spawn(move || {
        d.synchronize(ptr(x)).unwrap();
        x.free();
    });
    wait_until("synchronize(X) to wait for the reader of C", || {
        d.stats().slot_polls > polls
    });
    assert!(
        !writer.is_finished(),
        "synchronize on the reused address did not wait"
    );
    go_tx.send(()).unwrap();
    reader.join().unwrap();
    writer.join().unwrap();
    assert!(x.read().1);
}

/// Case "H30 (b)": monotonic versions through immediate address reuse, bounded.
fn versions_never_go_backwards(mode: FenceMode) {
    const UPDATES: u64 = 20_000;
    const READERS: usize = 2;
    let d = Arc::new(Domain::new(mode));
    // A LIFO free list: the object freed by one update is the one the next allocates.
    let pool: Arc<Vec<Versioned>> = Arc::new((0..4).map(|_| Versioned::default()).collect());
    pool[0].init(1);
    let src = Arc::new(AtomicPtr::new(
        &pool[0] as *const Versioned as *mut Versioned,
    ));
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(std::sync::Barrier::new(READERS + 1));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (d, src, done, start) = (d.clone(), src.clone(), done.clone(), start.clone());
            thread::spawn(move || {
                let (mut last, mut reads) = (0u64, 0u64);
                start.wait();
                loop {
                    let g = d.protect(&src).expect("always published");
                    // SAFETY: pool objects outlive the run (a free only marks them).
                    let (version, freed) = unsafe { g.as_ref() }.read();
                    assert!(!freed, "read a freed object (version {version})");
                    assert!(
                        version >= last,
                        "version went back from {last} to {version}"
                    );
                    last = version;
                    reads += 1;
                    drop(g);
                    // Relaxed: a stop flag with no data attached.
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                }
                reads
            })
        })
        .collect();
    let mut free: Vec<&Versioned> = pool[1..].iter().collect();
    start.wait();
    for version in 2..=UPDATES + 1 {
        let next = free.pop().expect("the free list is never empty");
        next.init(version);
        let old = src.swap(next as *const Versioned as *mut Versioned, Ordering::AcqRel);
        d.synchronize(old).unwrap();
        // SAFETY: pool objects outlive the run.
        let old = unsafe { &*old };
        old.free();
        free.push(old);
    }
    done.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads >= READERS as u64);
    let s = d.stats();
    eprintln!("{mode:?}: {reads} reads, {s:?}");
}

#[test]
fn versions_never_go_backwards_with_immediate_address_reuse_symmetric() {
    versions_never_go_backwards(FenceMode::Symmetric);
}

#[test]
fn versions_never_go_backwards_with_immediate_address_reuse_asymmetric() {
    versions_never_go_backwards(FenceMode::Asymmetric);
}
