//! The dynamic-key table's strategy hook: lookups and unregister go through the strategy in
//! force, and switching back and forth keeps keys working.

use std::sync::atomic::{AtomicUsize, Ordering};

use lockdep::{set_key_table_sync, DynamicKey, KeySyncStrategy, KeyTableSync};

/// Counts read sections and waits; a reader-writer lock gives the actual exclusion.
struct Counting {
    lock: parking_lot::RwLock<()>,
    enters: AtomicUsize,
    exits: AtomicUsize,
    syncs: AtomicUsize,
}

impl KeySyncStrategy for Counting {
    fn read_enter(&self, _bucket: usize) -> usize {
        // A plain read lock, held until read_exit on the same thread.
        std::mem::forget(self.lock.read());
        // Relaxed: test counters.
        self.enters.fetch_add(1, Ordering::Relaxed);
        0
    }
    fn read_exit(&self, _token: usize) {
        // Relaxed: test counters.
        self.exits.fetch_add(1, Ordering::Relaxed);
        // SAFETY: read_enter forgot a read guard of this lock on this thread.
        unsafe { self.lock.force_unlock_read() };
    }
    fn synchronize(&self, _bucket: usize) {
        // Relaxed: test counters.
        self.syncs.fetch_add(1, Ordering::Relaxed);
        drop(self.lock.write());
    }
    fn synchronize_all(&self) {
        drop(self.lock.write());
    }
}

/// One test: the strategy is process-wide, so the two parts must not run in parallel.
#[test]
fn strategy_hook() {
    switching_strategies_keeps_keys_working();
    lookups_race_with_switches();
}

fn switching_strategies_keeps_keys_working() {
    let s: &'static Counting = Box::leak(Box::new(Counting {
        lock: parking_lot::RwLock::new(()),
        enters: AtomicUsize::new(0),
        exits: AtomicUsize::new(0),
        syncs: AtomicUsize::new(0),
    }));
    let a = DynamicKey::new("a");
    assert!(a.is_registered());

    let old = set_key_table_sync(KeyTableSync::External(s));
    assert!(matches!(old, KeyTableSync::Hazptr));
    assert!(a.is_registered());
    let h = a.handle();
    drop(a);
    assert!(!h.is_registered());
    assert!(s.enters.load(Ordering::Relaxed) >= 2);
    assert_eq!(
        s.enters.load(Ordering::Relaxed),
        s.exits.load(Ordering::Relaxed)
    );
    assert_eq!(s.syncs.load(Ordering::Relaxed), 1);

    let old = set_key_table_sync(KeyTableSync::HazptrDirect);
    assert!(matches!(old, KeyTableSync::External(_)));
    let before = s.enters.load(Ordering::Relaxed);
    let b = DynamicKey::new("b");
    assert!(b.is_registered());
    let calls = hazptr::Domain::global().stats().synchronize_calls;
    drop(b);
    assert!(hazptr::Domain::global().stats().synchronize_calls > calls);
    assert_eq!(s.enters.load(Ordering::Relaxed), before);

    assert!(matches!(
        set_key_table_sync(KeyTableSync::Hazptr),
        KeyTableSync::HazptrDirect
    ));
    assert!(matches!(lockdep::key_table_sync(), KeyTableSync::Hazptr));
}

fn lookups_race_with_switches() {
    static S: std::sync::OnceLock<&'static Counting> = std::sync::OnceLock::new();
    let s = *S.get_or_init(|| {
        Box::leak(Box::new(Counting {
            lock: parking_lot::RwLock::new(()),
            enters: AtomicUsize::new(0),
            exits: AtomicUsize::new(0),
            syncs: AtomicUsize::new(0),
        }))
    });
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    let k = DynamicKey::new("churn");
                    assert!(k.is_registered());
                    drop(k);
                }
            });
        }
        for i in 0..6 {
            let next = match i % 3 {
                0 => KeyTableSync::External(s),
                1 => KeyTableSync::HazptrDirect,
                _ => KeyTableSync::Hazptr,
            };
            set_key_table_sync(next);
        }
        // Relaxed: a stop flag.
        stop.store(true, Ordering::Relaxed);
    });
}
