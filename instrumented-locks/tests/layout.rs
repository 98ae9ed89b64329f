//! Layout: what validation adds to each lock and guard, and that without the `validate`
//! feature every type is exactly its lock_api counterpart over the raw locks (the same size,
//! so the same code).

use std::mem::size_of;

use instrumented_locks::raw::{self, RawFairMutex, RawMutex, RawRwLock, RawThreadId};
use instrumented_locks::{
    Condvar, FairMutex, FairMutexGuard, MappedMutexGuard, MappedReentrantMutexGuard,
    MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard, ReentrantMutex,
    ReentrantMutexGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard,
};

type Plain<T> = lock_api::Mutex<RawMutex, T>;
type PlainRw<T> = lock_api::RwLock<RawRwLock, T>;
type PlainRe<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;

/// What a lock adds: its lock map (nothing without validation).
const LOCK_EXTRA: usize = if cfg!(feature = "validate") {
    size_of::<lockdep::LockMap>()
} else {
    0
};

/// A guard's track: three bits of the lock's address, or with `send_guard` a word, the
/// acquiring thread's holding and the acquisition's subclass and nest lock (nothing without
/// validation).
const TRACK: usize = if !cfg!(feature = "validate") {
    0
} else if cfg!(feature = "send_guard") {
    size_of::<usize>() + size_of::<Option<lockdep::Holder>>() + size_of::<lockdep::Relock>()
} else {
    0
};

/// What a plain guard adds to lock_api's: its track.
const GUARD_EXTRA: usize = TRACK;

/// What an `Arc` guard adds to lock_api's: its track, a word of its own where the track has no
/// word (the `Arc` is kept as it is, for the accessor that lends it).
const ARC_EXTRA: usize = if cfg!(all(feature = "validate", not(feature = "send_guard"))) {
    size_of::<usize>()
} else {
    TRACK
};

/// What a mapped guard adds to lock_api's: the lock map's address and the track (a word of its
/// own: a mapped guard holds no lock address to keep it in).
const MAPPED_EXTRA: usize = if cfg!(feature = "validate") {
    size_of::<usize>() + ARC_EXTRA
} else {
    0
};

/// `size` rounded up to a multiple of the lock map's alignment (with validation, the whole
/// lock has that alignment).
const fn padded(size: usize) -> usize {
    let align = if cfg!(feature = "validate") {
        std::mem::align_of::<lockdep::LockMap>()
    } else {
        1
    };
    size.div_ceil(align) * align
}

/// A lock is its lock_api type plus a lock map (the sum padded to the map's alignment).
#[test]
fn locks_are_lock_api_plus_a_lock_map() {
    assert_eq!(
        size_of::<Mutex<u64>>(),
        size_of::<Plain<u64>>() + LOCK_EXTRA
    );
    assert_eq!(
        size_of::<Mutex<u8>>(),
        padded(size_of::<Plain<u8>>() + LOCK_EXTRA)
    );
    assert_eq!(
        size_of::<FairMutex<u64>>(),
        size_of::<lock_api::Mutex<RawFairMutex, u64>>() + LOCK_EXTRA
    );
    assert_eq!(
        size_of::<RwLock<u64>>(),
        size_of::<PlainRw<u64>>() + LOCK_EXTRA
    );
    assert_eq!(
        size_of::<ReentrantMutex<u64>>(),
        size_of::<PlainRe<u64>>() + LOCK_EXTRA
    );
}

#[test]
fn guards_are_lock_api_plus_the_track() {
    assert_eq!(
        size_of::<MutexGuard<'_, u64>>(),
        size_of::<lock_api::MutexGuard<'_, RawMutex, u64>>() + GUARD_EXTRA
    );
    assert_eq!(
        size_of::<FairMutexGuard<'_, u64>>(),
        size_of::<lock_api::MutexGuard<'_, RawFairMutex, u64>>() + GUARD_EXTRA
    );
    assert_eq!(
        size_of::<RwLockReadGuard<'_, u64>>(),
        size_of::<lock_api::RwLockReadGuard<'_, RawRwLock, u64>>() + GUARD_EXTRA
    );
    assert_eq!(
        size_of::<RwLockWriteGuard<'_, u64>>(),
        size_of::<lock_api::RwLockWriteGuard<'_, RawRwLock, u64>>() + GUARD_EXTRA
    );
    assert_eq!(
        size_of::<RwLockUpgradableReadGuard<'_, u64>>(),
        size_of::<lock_api::RwLockUpgradableReadGuard<'_, RawRwLock, u64>>() + GUARD_EXTRA
    );
    assert_eq!(
        size_of::<ReentrantMutexGuard<'_, u64>>(),
        size_of::<lock_api::ReentrantMutexGuard<'_, RawMutex, RawThreadId, u64>>() + GUARD_EXTRA
    );
    // One word without `send_guard`, as parking_lot's guards: moved in a register, and
    // `Option` of one too (the address is never 0).
    if !cfg!(feature = "send_guard") {
        assert_eq!(size_of::<MutexGuard<'_, u64>>(), size_of::<usize>());
        assert_eq!(size_of::<RwLockReadGuard<'_, u64>>(), size_of::<usize>());
        assert_eq!(size_of::<Option<MutexGuard<'_, u64>>>(), size_of::<usize>());
        assert_eq!(
            size_of::<Option<RwLockUpgradableReadGuard<'_, u64>>>(),
            size_of::<usize>()
        );
    }
}

#[test]
fn mapped_guards_are_lock_api_plus_the_map_and_the_track() {
    assert_eq!(
        size_of::<MappedMutexGuard<'_, u64>>(),
        size_of::<lock_api::MappedMutexGuard<'_, RawMutex, u64>>() + MAPPED_EXTRA
    );
    assert_eq!(
        size_of::<MappedRwLockReadGuard<'_, u64>>(),
        size_of::<lock_api::MappedRwLockReadGuard<'_, RawRwLock, u64>>() + MAPPED_EXTRA
    );
    assert_eq!(
        size_of::<MappedRwLockWriteGuard<'_, u64>>(),
        size_of::<lock_api::MappedRwLockWriteGuard<'_, RawRwLock, u64>>() + MAPPED_EXTRA
    );
    assert_eq!(
        size_of::<MappedReentrantMutexGuard<'_, u64>>(),
        size_of::<lock_api::MappedReentrantMutexGuard<'_, RawMutex, RawThreadId, u64>>()
            + MAPPED_EXTRA
    );
}

#[cfg(feature = "arc_lock")]
#[test]
fn arc_guards_are_lock_api_plus_the_track() {
    use instrumented_locks::{ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard};
    assert_eq!(
        size_of::<ArcMutexGuard<RawMutex, u64>>(),
        size_of::<lock_api::ArcMutexGuard<RawMutex, u64>>() + ARC_EXTRA
    );
    assert_eq!(
        size_of::<ArcRwLockReadGuard<RawRwLock, u64>>(),
        size_of::<lock_api::ArcRwLockReadGuard<RawRwLock, u64>>() + ARC_EXTRA
    );
    assert_eq!(
        size_of::<ArcReentrantMutexGuard<RawMutex, RawThreadId, u64>>(),
        size_of::<lock_api::ArcReentrantMutexGuard<RawMutex, RawThreadId, u64>>() + ARC_EXTRA
    );
}

/// The condvar is the raw one plus its pseudo-lock map (for lockdep's condvar tracking).
#[test]
fn condvar_is_the_raw_one_plus_a_map() {
    let extra = if cfg!(feature = "validate") {
        size_of::<lockdep::CondvarMap>()
    } else {
        0
    };
    assert_eq!(size_of::<Condvar>(), size_of::<raw::Condvar>() + extra);
    assert_eq!(size_of::<raw::Condvar>(), size_of::<usize>());
}

/// The std-flavoured types add a poison flag to the lock (one byte, padded) and to the guard.
#[test]
fn std_flavoured_locks_add_a_poison_flag() {
    use instrumented_locks::std_sync;
    assert!(size_of::<std_sync::Mutex<u64>>() <= size_of::<Mutex<u64>>() + size_of::<usize>());
    assert!(size_of::<std_sync::RwLock<u64>>() <= size_of::<RwLock<u64>>() + size_of::<usize>());
}
