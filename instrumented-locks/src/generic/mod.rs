//! The validated locks, generic over `lock_api`'s raw-lock traits: one definition per lock
//! kind, as in lock_api (the raw lock apart from the data wrapper).
//!
//! | type | raw lock | what it adds to the lock_api type |
//! |---|---|---|
//! | [`Mutex<R, T>`] | `R: lock_api::RawMutex` | a [`LockMap`](lockdep::LockMap); guards carry one word of tracking |
//! | [`RwLock<R, T>`] | `R: lock_api::RawRwLock` | the same |
//! | [`ReentrantMutex<R, G, T>`] | `R: lock_api::RawMutex`, `G: lock_api::GetThreadId` | the same; only a thread's outermost lock is tracked |
//!
//! Every method of lock_api 0.4's `Mutex`, `RwLock`, `ReentrantMutex` and of their guards is
//! here with the same signature and meaning, each available under the same raw-trait bounds,
//! plus the validator's additions (`named`, `with_class`, `with_dynamic_key`, `lock_nested`,
//! `lock_nest_lock`, `assert_held`, ...). The crate root instantiates them with this crate's
//! raw locks, as parking_lot instantiates lock_api's:
//! `instrumented_locks::Mutex<T> = generic::Mutex<raw::RawMutex, T>`.
//!
//! # Layout
//!
//! Each lock is a [`lockdep::LockMap`] next to the lock_api type (`lock_api::Mutex<R, T>`, ...),
//! which owns the raw lock, the data cell and, for the re-entrant mutex, the owner and count.
//! Plain and `Arc` guards are a pointer to the lock plus one word ([`Track`]: held or not,
//! mode, subclass, nest lock), so a guard is two words and is returned in registers. Mapped
//! guards are lock_api's mapped guard plus the map's address and the word. Without the
//! `validate` feature the map and the word are zero-sized: every type has the size and the
//! code of its lock_api counterpart.
//!
//! [`Track`]: crate::dep

use std::panic::Location;

use lockdep::Mode;

use crate::dep::{Dep, Site, Track};

mod mutex;
mod remutex;
mod rwlock;
mod rwlock_guards;

pub use mutex::{MappedMutexGuard, Mutex, MutexGuard};
pub use remutex::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
pub use rwlock::RwLock;
pub use rwlock_guards::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};

#[cfg(feature = "arc_lock")]
pub use mutex::ArcMutexGuard;
#[cfg(feature = "arc_lock")]
pub use remutex::ArcReentrantMutexGuard;
#[cfg(feature = "arc_lock")]
pub use rwlock_guards::{ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard};

/// A guard whose track can be written after the guard owns the raw lock.
pub(crate) trait Tracked {
    fn track_mut(&mut self) -> &mut Track;
}

/// A try-lock: `locked` is the raw try's result; on success the guard `make` builds owns the
/// raw lock before lockdep records it, so a panicking policy still unlocks it.
#[inline(always)]
fn tried<G: Tracked>(
    locked: bool,
    dep: &Dep,
    mode: Mode,
    site: Site,
    make: impl FnOnce(Track) -> G,
) -> Option<G> {
    if !locked {
        return None;
    }
    let mut guard = make(Track::NONE);
    *guard.track_mut() = dep.acquired_try(mode, site);
    Some(guard)
}

/// A timed lock: validated as a blocking acquisition that may give up, then `try_lock` (the
/// raw timed call); a timeout is recorded as a release.
#[inline(always)]
fn timed(dep: &Dep, mode: Mode, site: Site, try_lock: impl FnOnce() -> bool) -> Option<Track> {
    let mut track = dep.acquire(mode, 0, None, site);
    if try_lock() {
        Some(track)
    } else {
        track.release(dep, site);
        None
    }
}

/// Runs `f` with the lock released (`unlocked`, `unlocked_fair`): releases the entry,
/// `unlock`s, runs `f`, validates the re-lock (blocking, before it can block, with the locks
/// held then) and `lock`s again. If `f` or a panicking policy unwinds, the lock is re-taken
/// anyway (the guard owns it again) and the guard tracks nothing.
#[inline]
fn unlocked<U>(
    track: &mut Track,
    dep: &Dep,
    site: Site,
    unlock: impl FnOnce(),
    lock: impl FnOnce(),
    f: impl FnOnce() -> U,
) -> U {
    let saved = track.suspend(dep, site);
    unlock();
    let _relock = Defer::new(lock);
    let r = f();
    track.resume(dep, saved, site);
    r
}

/// Runs a closure when dropped, on a normal exit or an unwind (a re-lock or a downgrade that
/// must happen whatever a user closure does).
pub(crate) struct Defer<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> Defer<F> {
    #[inline]
    pub(crate) fn new(f: F) -> Defer<F> {
        Defer(Some(f))
    }
}

impl<F: FnOnce()> Drop for Defer<F> {
    #[inline]
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// The site of a `#[track_caller]` method's caller.
#[inline(always)]
#[track_caller]
fn here() -> Site {
    Location::caller()
}

/// The surface every lock shares: the constructors that choose a class, `into_inner`,
/// `get_mut`, `data_ptr`, the validator's assertions, `Default`, `From`, `Debug` and the
/// serde impls. `$Lock<$P..., T>` wraps `lock_api::$Lock<$P..., T>` in a field `inner`,
/// next to a [`Dep`] in a field `dep`; `$kind` names the kind in reports; `$lock` is the
/// method that takes the lock to serialize it.
macro_rules! lock_surface {
    ($Lock:ident<$($P:ident: $Bound:path),+>, $kind:literal, $lock:ident) => {
        impl<$($P: $Bound),+, T> $Lock<$($P),+, T> {
            /// A new unlocked lock. Its lock class is the caller's source location and
            /// the type `T`; reports call it by that (`Kind<T>@file:line`) unless it is
            /// [named](Self::named). `const`, as parking_lot's: the class is found at the
            /// first acquisition.
            #[inline]
            #[track_caller]
            pub const fn new(val: T) -> Self {
                $Lock {
                    dep: $crate::dep::Dep::of_type::<T>($kind),
                    inner: lock_api::$Lock::new(val),
                }
            }


            /// A new unlocked lock of the caller's construction-site class (with `T`), named
            /// `name` in reports. `const`.
            #[inline]
            #[track_caller]
            pub const fn named(val: T, name: &'static str) -> Self {
                $Lock {
                    dep: $crate::dep::Dep::named_of_type::<T>($kind, name),
                    inner: lock_api::$Lock::new(val),
                }
            }

            /// A new unlocked lock whose class is the static `key` (the kernel's
            /// `lockdep_set_class()`): every lock made with one key is one class, wherever
            /// it is constructed. `const`.
            #[inline]
            pub const fn with_class(
                val: T,
                key: &'static lockdep::LockClassKey,
                name: &'static str,
            ) -> Self {
                $Lock {
                    dep: $crate::dep::Dep::with_class(key, name),
                    inner: lock_api::$Lock::new(val),
                }
            }

            /// A new unlocked lock whose class is the dynamic `key`. A key that is not
            /// registered (or is dropped while the lock is still used) is reported by
            /// lockdep, never a crash.
            #[inline]
            #[track_caller]
            pub fn with_dynamic_key(
                val: T,
                key: &lockdep::DynamicKey,
                name: &'static str,
            ) -> Self {
                $Lock {
                    dep: $crate::dep::Dep::with_dynamic_key(key, name),
                    inner: lock_api::$Lock::new(val),
                }
            }

            /// Consumes the lock and returns the data.
            #[inline]
            pub fn into_inner(self) -> T {
                self.inner.into_inner()
            }
        }

        impl<$($P: $Bound),+, T: ?Sized> $Lock<$($P),+, T> {
            /// A mutable reference to the data; no locking (`&mut self` is exclusive).
            #[inline]
            pub fn get_mut(&mut self) -> &mut T {
                self.inner.get_mut()
            }

            /// A raw pointer to the data; using it is up to the caller, as in lock_api.
            #[inline]
            pub fn data_ptr(&self) -> *mut T {
                self.inner.data_ptr()
            }

            /// Reports (through lockdep's policy) unless the calling thread holds this lock
            /// in some mode (the kernel's `lockdep_assert_held()`). Does nothing while
            /// validation is off.
            #[track_caller]
            pub fn assert_held(&self) {
                self.dep.assert_held();
            }

            /// Reports if the calling thread holds this lock (`lockdep_assert_not_held()`).
            #[track_caller]
            pub fn assert_not_held(&self) {
                self.dep.assert_not_held();
            }

            /// Whether lockdep has this lock on the calling thread's held-lock stack (false
            /// without validation).
            pub fn is_held_by_current_thread(&self) -> bool {
                self.dep.is_held()
            }

            /// The lock's lockdep map, for lockdep's own annotations (`lockdep::pin`,
            /// `might_lock`, ...); `None` without the `validate` feature.
            #[inline]
            pub fn lock_map(&self) -> Option<&lockdep::LockMap> {
                self.dep.map()
            }
        }

        impl<$($P: $Bound),+, T: Default> Default for $Lock<$($P),+, T> {
            /// A new lock of `T::default()`, whose class is the caller's location.
            #[inline]
            #[track_caller]
            fn default() -> Self {
                $Lock::new(T::default())
            }
        }

        impl<$($P: $Bound),+, T> From<T> for $Lock<$($P),+, T> {
            /// A new lock of `val`, whose class is the caller's location.
            #[inline]
            #[track_caller]
            fn from(val: T) -> Self {
                $Lock::new(val)
            }
        }

        impl<$($P: $Bound),+, T: ?Sized + std::fmt::Debug> std::fmt::Debug for $Lock<$($P),+, T> {
            /// lock_api's format: the data if a raw try-lock succeeds (not a lockdep
            /// acquisition: it cannot block), `<locked>` otherwise.
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.inner.fmt(f)
            }
        }

        #[cfg(feature = "serde")]
        impl<$($P: $Bound),+, T: ?Sized + serde::Serialize> serde::Serialize for $Lock<$($P),+, T> {
            /// Serializes the data under the lock (a validated acquisition).
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.$lock().serialize(serializer)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de, $($P: $Bound),+, T: serde::Deserialize<'de>> serde::Deserialize<'de>
            for $Lock<$($P),+, T>
        {
            /// A new lock of the deserialized data; its class is this impl's site and `T`.
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                // A closure, not `$Lock::new` as a function value: through a function pointer
                // `#[track_caller]` would see `Result::map` as the caller.
                #[allow(clippy::redundant_closure)]
                T::deserialize(deserializer).map(|val| $Lock::new(val))
            }
        }
    };
}
pub(crate) use lock_surface;

/// The trait impls every guard shares: `Deref`, `Debug`, `Display` and
/// [`HeldGuard`](crate::HeldGuard). `|$s| $data` gives a `*const T` or `*mut T` to the data,
/// `|$m| $map` the lock map. [`guard_mut`] adds `DerefMut`, [`guard_stable`] `StableAddress`.
macro_rules! guard_impls {
    (impl[$($g:tt)*] $Guard:ty; data: |$s:ident| $data:expr; map: |$m:ident| $map:expr;) => {
        impl<$($g)*> std::ops::Deref for $Guard {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                let $s = self;
                // SAFETY: the guard holds the lock (in a mode that allows shared access) for
                // as long as the reference lives.
                unsafe { &*$data }
            }
        }

        impl<$($g)*> std::fmt::Debug for $Guard
        where
            T: std::fmt::Debug,
        {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&**self, f)
            }
        }

        impl<$($g)*> std::fmt::Display for $Guard
        where
            T: std::fmt::Display,
        {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&**self, f)
            }
        }

        impl<$($g)*> $crate::dep::sealed::Sealed for $Guard {}

        impl<$($g)*> $crate::HeldGuard for $Guard {
            #[inline]
            fn lock_map(&self) -> Option<&lockdep::LockMap> {
                let $m = self;
                $map
            }
        }
    };
}
pub(crate) use guard_impls;

/// `DerefMut` for a guard of exclusive access (see [`guard_impls`]).
macro_rules! guard_mut {
    (impl[$($g:tt)*] $Guard:ty; data: |$s:ident| $data:expr;) => {
        impl<$($g)*> std::ops::DerefMut for $Guard {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                let $s = &*self;
                // SAFETY: the guard holds the lock exclusively for as long as the reference
                // lives.
                unsafe { &mut *$data }
            }
        }
    };
}
pub(crate) use guard_mut;

/// `owning_ref::StableAddress` for a guard (feature `owning_ref`), as lock_api gives every
/// guard that borrows its lock.
macro_rules! guard_stable {
    (impl[$($g:tt)*] $Guard:ty;) => {
        // SAFETY: the data's address comes from the lock (or a projection of it), not from
        // the guard, so moving the guard does not move what it derefs to.
        #[cfg(feature = "owning_ref")]
        unsafe impl<$($g)*> owning_ref::StableAddress for $Guard {}
    };
}
pub(crate) use guard_stable;

/// The acquiring methods of a lock, one line each: `blocking`, `try` or `timed`, for a
/// `plain` guard (borrowing the lock) or an `arc` one (owning an `Arc` of it), in lockdep
/// mode `$mode`, with the raw call `|r| $call`. Each lock implements the three helpers the
/// bodies call (`blocking_track`, `tried_guard`, `timed_track`), which apply lockdep's rule
/// for that kind of acquisition (validated before a blocking one, see [`tried`] and
/// [`timed`] for the others); every method is
/// `#[track_caller]`, so reports name the user's call.
macro_rules! acquisitions {
    ($(
        $(#[$m:meta])*
        $how:ident $flavour:ident $name:ident($($arg:ident: $argty:ty),*)
            -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr;
    )*) => {$(
        $crate::generic::acquisitions!(
            @fn $how $flavour [$(#[$m])*] $name($($arg: $argty),*) -> $G<$($gen),*>
            = $mode, |$r| $call
        );
    )*};
    (@fn blocking plain [$($attr:tt)*] $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr) => {
        $($attr)*
        #[inline]
        #[track_caller]
        pub fn $name(&self $(, $arg: $argty)*) -> $G<$($gen),*> {
            $G::new(self, self.blocking_track($mode, 0, None, |$r| $call))
        }
    };
    (@fn blocking arc [$($attr:tt)*] $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr) => {
        $($attr)*
        #[cfg(feature = "arc_lock")]
        #[inline]
        #[track_caller]
        pub fn $name(self: &std::sync::Arc<Self> $(, $arg: $argty)*) -> $G<$($gen),*> {
            let track = self.blocking_track($mode, 0, None, |$r| $call);
            $G::new(std::sync::Arc::clone(self), track)
        }
    };
    (@fn try plain [$($attr:tt)*] $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr) => {
        $($attr)*
        #[inline]
        #[track_caller]
        pub fn $name(&self $(, $arg: $argty)*) -> Option<$G<$($gen),*>> {
            self.tried_guard($mode, |$r| $call, |t| $G::new(self, t))
        }
    };
    (@fn try arc [$($attr:tt)*] $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr) => {
        $($attr)*
        #[cfg(feature = "arc_lock")]
        #[inline]
        #[track_caller]
        pub fn $name(self: &std::sync::Arc<Self> $(, $arg: $argty)*) -> Option<$G<$($gen),*>> {
            self.tried_guard($mode, |$r| $call, |t| $G::new(std::sync::Arc::clone(self), t))
        }
    };
    (@fn timed plain [$($attr:tt)*] $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr) => {
        $($attr)*
        #[inline]
        #[track_caller]
        pub fn $name(&self $(, $arg: $argty)*) -> Option<$G<$($gen),*>> {
            let track = self.timed_track($mode, |$r| $call)?;
            Some($G::new(self, track))
        }
    };
    (@fn timed arc [$($attr:tt)*] $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr) => {
        $($attr)*
        #[cfg(feature = "arc_lock")]
        #[inline]
        #[track_caller]
        pub fn $name(self: &std::sync::Arc<Self> $(, $arg: $argty)*) -> Option<$G<$($gen),*>> {
            let track = self.timed_track($mode, |$r| $call)?;
            Some($G::new(std::sync::Arc::clone(self), track))
        }
    };
}
pub(crate) use acquisitions;

/// `map`, `try_map` and `$or_err` (lock_api's `try_map_or_err`; `try_map_or_else` on the
/// mapped read guard) of a guard `Self<'a, $P.., T>` onto `$Mapped<'a, $P.., U>`, through
/// lock_api's projection of the same name on `lock_api::$Api`. `Self` provides `split` (the
/// lock pointer to come back to, the [`Held`](crate::dep) release, the lock_api guard) and
/// `join` (its inverse); `[mut]` for guards of exclusive access. The mutex stays held, and
/// tracked, by the projected guard; a panic in `f` releases it (lockdep, then the raw lock).
macro_rules! projections {
    ($Mapped:ident<$($P:ident),*>, $Api:ident, [$($mut:tt)?], $or_err:ident) => {
        /// Projects the guard onto a part of the data; the lock stays held (and tracked).
        #[inline]
        pub fn map<U: ?Sized, F>(s: Self, f: F) -> $Mapped<'a, $($P,)* U>
        where
            F: FnOnce(&$($mut)? T) -> &$($mut)? U,
        {
            let (_, held, raw) = Self::split(s);
            $Mapped::new(held, lock_api::$Api::map(raw, f))
        }

        /// Like `map`, but `f` may decline (`None`); then the guard comes back.
        #[inline]
        pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<$Mapped<'a, $($P,)* U>, Self>
        where
            F: FnOnce(&$($mut)? T) -> Option<&$($mut)? U>,
        {
            let (back, held, raw) = Self::split(s);
            match lock_api::$Api::try_map(raw, f) {
                Ok(mapped) => Ok($Mapped::new(held, mapped)),
                Err(raw) => Err(Self::join(back, held, raw)),
            }
        }

        /// Like `try_map`, with `f`'s error given back next to the guard.
        #[inline]
        pub fn $or_err<U: ?Sized, F, E>(
            s: Self,
            f: F,
        ) -> Result<$Mapped<'a, $($P,)* U>, (Self, E)>
        where
            F: FnOnce(&$($mut)? T) -> Result<&$($mut)? U, E>,
        {
            let (back, held, raw) = Self::split(s);
            match lock_api::$Api::$or_err(raw, f) {
                Ok(mapped) => Ok($Mapped::new(held, mapped)),
                Err((raw, e)) => Err((Self::join(back, held, raw), e)),
            }
        }
    };
}
pub(crate) use projections;

/// A mapped guard: lock_api's mapped guard `lock_api::$Api<'a, $P.., T>` behind a [`Held`]
/// (declared first, so lockdep hears of the release before the real unlock), with `new`,
/// `split`/`join` for [`projections`], `unlock_fair` (under the `fair` bounds), `Deref` (and `DerefMut`
/// with `[mut]`) and the shared guard impls.
///
/// [`Held`]: crate::dep
macro_rules! mapped_guard {
    (
        $(#[$m:meta])*
        $Mapped:ident<$($P:ident: $Bound:path),*>, $Api:ident,
        fair<$($FP:ident: $FBound:path),*>, [mut]
    ) => {
        $crate::generic::mapped_guard! {
            $(#[$m])*
            $Mapped<$($P: $Bound),*>, $Api, fair<$($FP: $FBound),*>, []
        }

        impl<'a, $($P: $Bound),*, T: ?Sized> std::ops::DerefMut for $Mapped<'a, $($P),*, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        }
    };
    (
        $(#[$m:meta])*
        $Mapped:ident<$($P:ident: $Bound:path),*>, $Api:ident,
        fair<$($FP:ident: $FBound:path),*>, []
    ) => {
        $(#[$m])*
        #[clippy::has_significant_drop]
        pub struct $Mapped<'a, $($P: $Bound),*, T: ?Sized> {
            held: $crate::dep::Held<'a>,
            inner: lock_api::$Api<'a, $($P),*, T>,
            marker: std::marker::PhantomData<$crate::dep::GuardMarker>,
        }

        impl<'a, $($P: $Bound),*, T: ?Sized> $Mapped<'a, $($P),*, T> {
            #[inline]
            fn new(held: $crate::dep::Held<'a>, inner: lock_api::$Api<'a, $($P),*, T>) -> Self {
                $Mapped {
                    held,
                    inner,
                    marker: std::marker::PhantomData,
                }
            }

            #[inline]
            fn split(s: Self) -> ((), $crate::dep::Held<'a>, lock_api::$Api<'a, $($P),*, T>) {
                let $Mapped { held, inner, .. } = s;
                ((), held, inner)
            }

            #[inline]
            fn join(
                _: (),
                held: $crate::dep::Held<'a>,
                inner: lock_api::$Api<'a, $($P),*, T>,
            ) -> Self {
                $Mapped::new(held, inner)
            }
        }

        impl<'a, $($FP: $FBound),*, T: ?Sized> $Mapped<'a, $($FP),*, T> {
            /// Unlocks with a fair hand-off to a waiting thread.
            #[inline]
            #[track_caller]
            pub fn unlock_fair(s: Self) {
                let $Mapped { mut held, inner, .. } = s;
                let dep = held.dep();
                held.track().release(dep, $crate::generic::here());
                lock_api::$Api::unlock_fair(inner);
            }
        }

        $crate::generic::guard_impls! {
            impl['a, $($P: $Bound),*, T: ?Sized] $Mapped<'a, $($P),*, T>;
            data: |s| std::ptr::from_ref(&*s.inner);
            map: |s| s.held.map();
        }
        $crate::generic::guard_stable!(impl['a, $($P: $Bound),*, T: ?Sized] $Mapped<'a, $($P),*, T>;);
    };
}
pub(crate) use mapped_guard;
