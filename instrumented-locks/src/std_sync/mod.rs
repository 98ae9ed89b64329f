//! `std::sync`-flavoured wrappers: the same validated locks, with poisoning and
//! [`LockResult`], for code written against `std::sync::{Mutex, RwLock, Condvar}`.
//!
//! Adoption is a change of import (`use instrumented_locks::std_sync::{Mutex, Condvar};`).
//! Poisoning follows std: a guard dropped while its thread panics poisons the lock; every
//! later `lock`/`write`/`read` returns `Err(PoisonError)`, whose `into_inner()` gives a guard
//! that is a real, validated lock holding (lockdep tracks it like any other). Read guards do
//! not poison, as in std. `read` is lockdep's non-recursive `Read` (std gives no guarantee
//! against writer preference).
//!
//! Each lock is the crate's validated lock plus a poison flag; the flag's rules (set by a
//! guard dropped in a panic that began after it was made; reported with every result) are
//! written once here (a private `Flag` and `Poison`) for both locks and the condvar. `new` is `const`,
//! as std's. [`WaitTimeoutResult`] is this crate's (the same `timed_out()`).

use std::sync::atomic::{AtomicBool, Ordering};

pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

pub use crate::condvar::WaitTimeoutResult;

mod condvar;
mod mutex;
mod rwlock;

pub use condvar::Condvar;
pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A lock's poison flag.
#[derive(Debug, Default)]
pub(crate) struct Flag(AtomicBool);

impl Flag {
    pub(crate) const fn new() -> Flag {
        Flag(AtomicBool::new(false))
    }

    pub(crate) fn get(&self) -> bool {
        // Relaxed: the flag is set before the real unlock (Release) and read after the real
        // lock (Acquire), which order it; callers outside a lock only need a snapshot.
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn clear(&self) {
        // Relaxed: see `get`.
        self.0.store(false, Ordering::Relaxed);
    }

    /// A guard part that poisons the flag if it drops during a panic that began after the
    /// lock call: `panicking` is `std::thread::panicking()` as that call found it, read before
    /// the lock is taken (it cannot change in between: only this thread's own panics change
    /// it). Read there, its load stays off the path that follows the raw lock's locked
    /// instruction (measured on the std `Mutex` row: see BENCHMARKS.md).
    #[inline]
    pub(crate) fn guard(&self, panicking: bool) -> Poison<'_> {
        Poison {
            flag: self,
            panicking,
        }
    }

    /// `Ok(v)`, or `Err(PoisonError(v))` if the lock is poisoned: what every access returns.
    pub(crate) fn result<V>(&self, v: V) -> LockResult<V> {
        if self.get() {
            Err(PoisonError::new(v))
        } else {
            Ok(v)
        }
    }

    /// A try-lock's result: `WouldBlock` for `None`, else [`result`](Self::result).
    pub(crate) fn try_result<G>(&self, guard: Option<G>) -> TryLockResult<G> {
        let guard = guard.ok_or(TryLockError::WouldBlock)?;
        self.result(guard).map_err(TryLockError::Poisoned)
    }
}

/// Part of a guard: poisons the lock when dropped by a panicking thread. Declared before the
/// lock guard in each guard struct, so the flag is set before the real unlock.
#[derive(Debug)]
pub(crate) struct Poison<'a> {
    flag: &'a Flag,
    panicking: bool,
}

impl<'a> Poison<'a> {
    pub(crate) fn flag(&self) -> &'a Flag {
        self.flag
    }
}

impl Drop for Poison<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.panicking && std::thread::panicking() {
            // Relaxed: see `Flag::get`.
            self.flag.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Maps `Err(PoisonError(a))` to `Err(PoisonError(f(a)))`.
pub(crate) fn map_result<A, B>(r: LockResult<A>, f: impl FnOnce(A) -> B) -> LockResult<B> {
    match r {
        Ok(a) => Ok(f(a)),
        Err(e) => Err(PoisonError::new(f(e.into_inner()))),
    }
}

/// The surface std's `Mutex` and `RwLock` share, over the crate's lock `$Inner` in a field
/// `inner` next to a [`Flag`] in `poison`: `new` (`const`), `named`, `with_class`,
/// `into_inner`, `get_mut`, the poison queries, the assertions, `lock_map`, `Default`,
/// `From` and `Debug`.
macro_rules! poisoned_lock {
    ($Lock:ident, $Inner:ident, $name:literal, $try:ident, $locked:expr) => {
        impl<T> $Lock<T> {
            /// A new unlocked lock whose class is the caller's location and `T` (see
            /// [`crate::generic::Mutex::new`]). `const`, as std's.
            #[inline]
            #[track_caller]
            pub const fn new(val: T) -> Self {
                $Lock {
                    poison: super::Flag::new(),
                    inner: crate::$Inner::new(val),
                }
            }

            /// A new lock of the caller's construction-site class, named `name` in reports.
            #[inline]
            #[track_caller]
            pub const fn named(val: T, name: &'static str) -> Self {
                $Lock {
                    poison: super::Flag::new(),
                    inner: crate::$Inner::named(val, name),
                }
            }

            /// A new lock whose class is the static `key`.
            #[inline]
            pub const fn with_class(
                val: T,
                key: &'static lockdep::LockClassKey,
                name: &'static str,
            ) -> Self {
                $Lock {
                    poison: super::Flag::new(),
                    inner: crate::$Inner::with_class(val, key, name),
                }
            }

            /// Consumes the lock; `Err` (still with the data) if it is poisoned.
            pub fn into_inner(self) -> super::LockResult<T> {
                let poisoned = self.poison.get();
                let v = self.inner.into_inner();
                if poisoned {
                    Err(super::PoisonError::new(v))
                } else {
                    Ok(v)
                }
            }
        }

        impl<T: ?Sized> $Lock<T> {
            /// A mutable reference to the data; `Err` (still with it) if poisoned.
            pub fn get_mut(&mut self) -> super::LockResult<&mut T> {
                let poison = &self.poison;
                poison.result(self.inner.get_mut())
            }

            /// Whether a holder panicked (and nobody cleared the flag since).
            pub fn is_poisoned(&self) -> bool {
                self.poison.get()
            }

            /// Clears the poison flag.
            pub fn clear_poison(&self) {
                self.poison.clear();
            }

            crate::generic::validator_queries!(|s| s.inner.dep());
        }

        crate::generic::default_from!(impl[] $Lock<T>);

        impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for $Lock<T> {
            /// std's format (`Mutex { data: 1, poisoned: false, .. }`, the data's place
            /// taken by std's placeholder while the lock is held), the data read under the
            /// lock's own validated try-lock, as the crate's other locks do (a poisoned lock's
            /// data is shown too, as std shows it).
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut d = f.debug_struct($name);
                match self.inner.$try() {
                    Some(guard) => d.field("data", &&*guard),
                    None => d.field("data", &$locked),
                };
                d.field("poisoned", &self.poison.get());
                d.finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use poisoned_lock;

/// A std-flavoured guard over the crate's guard in its field `inner`: `Deref` (and `DerefMut`
/// with `mut`), `Debug`, `Display` and [`HeldGuard`](crate::HeldGuard), as std's.
macro_rules! poisoned_guard {
    ($Guard:ident $(, $mut:ident)?) => {
        impl<T: ?Sized> std::ops::Deref for $Guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        $(
            impl<T: ?Sized> std::ops::DerefMut for $Guard<'_, T> {
                #[inline]
                fn deref_mut(&mut self) -> &mut T {
                    let _ = stringify!($mut);
                    &mut self.inner
                }
            }
        )?

        impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for $Guard<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&**self, f)
            }
        }

        impl<T: ?Sized + std::fmt::Display> std::fmt::Display for $Guard<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&**self, f)
            }
        }

        impl<T: ?Sized> crate::dep::sealed::Sealed for $Guard<'_, T> {}

        impl<T: ?Sized> crate::HeldGuard for $Guard<'_, T> {
            fn lock_map(&self) -> Option<&lockdep::LockMap> {
                crate::HeldGuard::lock_map(&self.inner)
            }
        }
    };
}
pub(crate) use poisoned_guard;
