//! Retire and reclaim: protected objects are never freed, unprotected ones are freed
//! exactly once, memory stays bounded, deleters may retire, dropping the domain frees the
//! rest (cases "H21 (b)" and "H21 (c)" of the project's hazard-pointer case list:
//! retired objects that are still protected survive reclaim).
#![cfg(not(hazptr_loom))]

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;

use hazptr::{Domain, FenceMode};

/// An object that counts its drops in a shared counter.
struct Counted {
    drops: Arc<AtomicUsize>,
    value: u64,
}

impl Drop for Counted {
    fn drop(&mut self) {
        // Relaxed: a test counter; joins and the reclaim call order what we read.
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

fn counted(drops: &Arc<AtomicUsize>, value: u64) -> *mut Counted {
    Box::into_raw(Box::new(Counted {
        drops: drops.clone(),
        value,
    }))
}

#[test]
fn unprotected_objects_are_freed_once_by_reclaim() {
    let d = Domain::new(FenceMode::Symmetric);
    let drops = Arc::new(AtomicUsize::new(0));
    for i in 0..10 {
        // SAFETY: never published; freed only by the domain.
        unsafe { d.retire_box(counted(&drops, i)) };
    }
    assert_eq!(
        drops.load(Ordering::Relaxed),
        0,
        "below the threshold nothing is freed"
    );
    assert_eq!(d.reclaim(), 10);
    assert_eq!(drops.load(Ordering::Relaxed), 10);
    assert_eq!(d.reclaim(), 0);
    let s = d.stats();
    assert_eq!((s.retired, s.reclaimed), (10, 10));
}

/// Case "H21 (b)" (a protected retired object): a protected object survives reclaim and is freed, once, after the guard drops.
#[test]
fn protected_object_is_not_freed_until_its_guard_drops() {
    let d = Domain::new(FenceMode::Symmetric);
    let drops = Arc::new(AtomicUsize::new(0));
    let x = counted(&drops, 1);
    let src = AtomicPtr::new(x);
    let g = d.protect(&src).unwrap();
    let y = counted(&drops, 2);
    let old = src.swap(y, Ordering::AcqRel);
    // SAFETY: `old` is unpublished; the domain frees it.
    unsafe { d.retire_box(old) };
    assert_eq!(d.reclaim(), 0);
    // SAFETY: protected, so not freed.
    assert_eq!(unsafe { g.as_ref() }.value, 1);
    assert_eq!(drops.load(Ordering::Relaxed), 0);
    drop(g);
    assert_eq!(d.reclaim(), 1);
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    assert_eq!(d.reclaim(), 0);
    // SAFETY: `y` is still published and unprotected; freed once here.
    drop(unsafe { Box::from_raw(src.load(Ordering::Relaxed)) });
}

/// Case "H21 (c)" (one of two retired objects protected): of two retired objects, the one still protected stays, the other is freed.
#[test]
fn only_the_protected_one_of_two_survives() {
    let d = Domain::new(FenceMode::Symmetric);
    let drops = Arc::new(AtomicUsize::new(0));
    let (x, z) = (counted(&drops, 1), counted(&drops, 2));
    let (px, pz) = (AtomicPtr::new(x), AtomicPtr::new(z));
    let gx = d.protect(&px).unwrap();
    let gz = d.protect(&pz).unwrap();
    drop(gx);
    px.store(std::ptr::null_mut(), Ordering::Release);
    pz.store(std::ptr::null_mut(), Ordering::Release);
    // SAFETY: both unpublished.
    unsafe {
        d.retire_box(x);
        d.retire_box(z);
    }
    assert_eq!(d.reclaim(), 1);
    // SAFETY: z is protected by gz.
    assert_eq!(unsafe { gz.as_ref() }.value, 2);
    drop(gz);
    assert_eq!(d.reclaim(), 1);
    assert_eq!(drops.load(Ordering::Relaxed), 2);
}

#[test]
fn retiring_past_the_threshold_reclaims_and_keeps_memory_bounded() {
    let d = Domain::new(FenceMode::Symmetric);
    let drops = Arc::new(AtomicUsize::new(0));
    for i in 0..10_000 {
        // SAFETY: never published.
        unsafe { d.retire_box(counted(&drops, i)) };
        let s = d.stats();
        assert!(
            s.retired - s.reclaimed <= 64,
            "unreclaimed grew to {}",
            s.retired - s.reclaimed
        );
    }
    assert!(drops.load(Ordering::Relaxed) >= 10_000 - 64);
}

/// A deleter that retires another object: both are freed, nothing deadlocks.
#[test]
fn a_deleter_may_retire() {
    static DOMAIN: std::sync::OnceLock<Domain> = std::sync::OnceLock::new();
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let d = DOMAIN.get_or_init(|| Domain::new(FenceMode::Symmetric));
    unsafe fn chain(p: *mut u64) {
        // SAFETY: `p` came from Box::into_raw below.
        let v = *unsafe { Box::from_raw(p) };
        FREED.fetch_add(1, Ordering::Relaxed);
        if v > 0 {
            let next = Box::into_raw(Box::new(v - 1));
            // SAFETY: never published; `chain` frees it once.
            unsafe { DOMAIN.get().unwrap().retire(next, chain) };
        }
    }
    // SAFETY: never published.
    unsafe { d.retire(Box::into_raw(Box::new(3u64)), chain) };
    let mut rounds = 0;
    while d.reclaim() > 0 {
        rounds += 1;
    }
    assert_eq!(FREED.load(Ordering::Relaxed), 4);
    assert_eq!(rounds, 4);
}

#[test]
fn dropping_the_domain_frees_everything_retired() {
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let d = Domain::new(FenceMode::Asymmetric);
        for i in 0..5 {
            // SAFETY: never published.
            unsafe { d.retire_box(counted(&drops, i)) };
        }
        assert_eq!(drops.load(Ordering::Relaxed), 0);
    }
    assert_eq!(drops.load(Ordering::Relaxed), 5);
}
