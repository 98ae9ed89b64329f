//! The surface every lock kind shares (constructors, accessors, assertions, `Default`,
//! `From`, `Debug`, serde), written once as a macro.

/// The surface every lock shares: the constructors that choose a class, `into_inner`,
/// `get_mut`, `data_ptr`, the validator's assertions, `Default`, `From`, `Debug` and the
/// serde impls. `$Lock<$P..., T>` wraps `lock_api::$Lock<$P..., T>` (or, given `inner
/// $Inner`, a type `$Inner<$P..., T>` of the crate with the same methods) in a field `inner`,
/// next to a [`Dep`](crate::dep::Dep) in a field `dep`; `$kind` names the kind in reports and in
/// `Debug`; `$lock` is the method that takes the lock to serialize it, `$try` the try-lock
/// that `Debug` formats the data under.
macro_rules! lock_surface {
    (
        $Lock:ident<$($P:ident: $Bound:path),+>, $kind:literal, $lock:ident, $try:ident
        $(, inner $Inner:ident)?
    ) => {
        // SAFETY: the lock's first field is its `Dep` (sized), so its alignment is at least
        // the `Dep`'s, a lock map's with `validate`.
        unsafe impl<$($P: $Bound),+, T: ?Sized> $crate::dep::Locked for $Lock<$($P),+, T> {}

        impl<$($P: $Bound),+, T> $Lock<$($P),+, T> {
            /// A new unlocked lock. Its lock class is the caller's source location and
            /// the type `T`; reports call it by that (`Kind<T>@file:line`) unless it is
            /// [named](Self::named). `const`, as parking_lot's: the class is found at the
            /// first acquisition.
            #[inline]
            #[track_caller]
            pub const fn new(val: T) -> Self {
                Self::from_dep($crate::dep::Dep::of_type::<T>($kind), val)
            }


            /// A new unlocked lock of the caller's construction-site class (with `T`), named
            /// `name` in reports. `const`.
            #[inline]
            #[track_caller]
            pub const fn named(val: T, name: &'static str) -> Self {
                Self::from_dep($crate::dep::Dep::named_of_type::<T>($kind, name), val)
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
                Self::from_dep($crate::dep::Dep::with_class(key, name), val)
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
                Self::from_dep($crate::dep::Dep::with_dynamic_key(key, name), val)
            }

            /// The lock with the lock map `dep` around lock_api's lock of `val`.
            #[inline]
            const fn from_dep(dep: $crate::dep::Dep, val: T) -> Self {
                $Lock {
                    dep,
                    inner: $crate::generic::lock_surface!(@new val, $Lock $(, $Inner)?),
                }
            }

            /// Consumes the lock and returns the data. If the lock is still locked (a
            /// forgotten guard), lockdep reports it destroyed while held by the threads
            /// whose held stacks have it, as on drop. An entry that a guard forgotten on
            /// *this* thread left is not found here (the lock moved into this call: see the
            /// crate's Limits on moving a lock whose guard was forgotten); it is reported when
            /// the thread exits.
            #[inline]
            pub fn into_inner(self) -> T {
                let me = std::mem::ManuallyDrop::new(self);
                me.dep.check_freed(|| me.inner.is_locked());
                // `_dep` drops at the end: the map's own check of this thread's entries.
                // SAFETY: `me` is never used or dropped again, so each field is moved out
                // exactly once (the `Drop` of the lock, which only checks, is skipped).
                let (_dep, inner) = unsafe { (std::ptr::read(&me.dep), std::ptr::read(&me.inner)) };
                inner.into_inner()
            }
        }

        /// Destroying a lock whose raw lock is still locked (its guard was forgotten, here or
        /// on another thread) is reported by lockdep for every thread that holds it. With
        /// validation switched on, an unlocked lock costs one load of the raw lock's state
        /// here; switched off or without the `validate` feature, nothing.
        impl<$($P: $Bound),+, T: ?Sized> Drop for $Lock<$($P),+, T> {
            #[inline]
            fn drop(&mut self) {
                self.dep.check_freed(|| self.inner.is_locked());
            }
        }

        impl<$($P: $Bound),+, T: ?Sized> $Lock<$($P),+, T> {
            /// A mutable reference to the data; no locking (`&mut self` is exclusive).
            #[inline]
            pub fn get_mut(&mut self) -> &mut T {
                self.inner.get_mut()
            }

            /// Whether any thread holds the lock in any mode (a snapshot).
            #[inline]
            pub fn is_locked(&self) -> bool {
                self.inner.is_locked()
            }

            /// The raw lock (lock_api's `raw`). Locking or unlocking through it is not seen
            /// by lockdep.
            ///
            /// # Safety
            ///
            /// As lock_api's `raw`: unlocking it while a guard exists is undefined behaviour.
            #[inline]
            pub unsafe fn raw(&self) -> &R {
                // SAFETY: the caller takes over lock_api's contract.
                unsafe { self.inner.raw() }
            }

            /// A raw pointer to the data; using it is up to the caller, as in lock_api.
            #[inline]
            pub fn data_ptr(&self) -> *mut T {
                self.inner.data_ptr()
            }

            $crate::generic::validator_queries!(|s| s.dep);

            /// The lock's lockdep side, for the std-flavoured wrappers.
            #[inline]
            #[allow(dead_code)] // not every kind has a std-flavoured wrapper
            pub(crate) fn dep(&self) -> &$crate::dep::Dep {
                &self.dep
            }
        }

        $crate::generic::default_from!(impl[$($P: $Bound,)+] $Lock<$($P),+, T>);

        impl<$($P: $Bound),+, T: ?Sized + std::fmt::Debug> std::fmt::Debug for $Lock<$($P),+, T> {
            /// lock_api's format: the data if a try-lock succeeds, `<locked>` otherwise. The
            /// try-lock is this lock's own, validated (lockdep's trylock rule: it depends on
            /// nothing): the data's `Debug` runs under it, and a lock that `Debug` takes
            /// depends on this one, as it does under any guard (a thread formatting this lock
            /// while another holds that lock and waits for this one is a deadlock).
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut d = f.debug_struct($kind);
                match self.$try() {
                    Some(guard) => d.field("data", &&*guard),
                    None => d.field("data", &format_args!("<locked>")),
                };
                d.finish()
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
    (@new $val:ident, $Lock:ident) => {
        lock_api::$Lock::new($val)
    };
    (@new $val:ident, $Lock:ident, $Inner:ident) => {
        $Inner::new($val)
    };
}
pub(crate) use lock_surface;

/// `into_inner_with_raw` (lock_api 0.5's, which parking_lot 0.13 users call) for a lock
/// `Self { dep, inner: lock_api::$Lock<R, T> }` with one raw lock `R`, inside an
/// `impl<R, T> $Lock<R, T>` block.
macro_rules! into_inner_with_raw {
    ($Lock:ident) => {
        /// Consumes the lock and returns its raw lock and the data (lock_api 0.5's
        /// `into_inner_with_raw`). If the lock is still locked (a forgotten guard), lockdep
        /// reports it destroyed while held, as [`into_inner`](Self::into_inner) does, and the
        /// raw lock comes back locked.
        #[inline]
        pub fn into_inner_with_raw(self) -> (R, T) {
            let me = std::mem::ManuallyDrop::new(self);
            me.dep.check_freed(|| me.inner.is_locked());
            // SAFETY: `me` is never used or dropped again, so each field is moved out
            // exactly once (the `Drop` of the lock, which only checks, is skipped).
            let (_dep, inner) = unsafe { (std::ptr::read(&me.dep), std::ptr::read(&me.inner)) };
            let inner = std::mem::ManuallyDrop::new(inner);
            // SAFETY: lock_api's lock has no `Drop` of its own and owns exactly the raw lock
            // and the data cell; `inner` is never dropped, so reading each out moves it once.
            // Nothing else can reach `inner` (we own it), so no guard is broken.
            unsafe {
                (
                    std::ptr::read(inner.raw()),
                    std::ptr::read(inner.data_ptr()),
                )
            }
        }
    };
}
pub(crate) use into_inner_with_raw;

/// `Default` and `From<T>` through `Self::new`, `#[track_caller]` so that the class is the
/// caller's site. `impl[..]` lists the generic parameters other than `T`, each with a
/// trailing comma.
macro_rules! default_from {
    (impl[$($g:tt)*] $Ty:ty) => {
        impl<$($g)* T: Default> Default for $Ty {
            /// A new lock of `T::default()`, whose class is the caller's location.
            #[inline]
            #[track_caller]
            fn default() -> Self {
                Self::new(T::default())
            }
        }

        impl<$($g)* T> From<T> for $Ty {
            /// A new lock of `val`, whose class is the caller's location.
            #[inline]
            #[track_caller]
            fn from(val: T) -> Self {
                Self::new(val)
            }
        }
    };
}
pub(crate) use default_from;

/// The validator's queries on a lock whose [`Dep`](crate::dep) is `|$s| $dep`:
/// `assert_held`, `assert_not_held`, `is_held_by_current_thread`, `lock_map`.
macro_rules! validator_queries {
    (|$s:ident| $dep:expr) => {
        /// Reports (through lockdep's policy) unless the calling thread holds this lock in
        /// some mode (the kernel's `lockdep_assert_held()`). Does nothing while validation is
        /// off.
        #[track_caller]
        pub fn assert_held(&self) {
            let $s = self;
            $dep.assert_held();
        }

        /// Reports if the calling thread holds this lock (`lockdep_assert_not_held()`).
        #[track_caller]
        pub fn assert_not_held(&self) {
            let $s = self;
            $dep.assert_not_held();
        }

        /// Whether lockdep has this lock on the calling thread's held-lock stack (false
        /// without validation).
        pub fn is_held_by_current_thread(&self) -> bool {
            let $s = self;
            $dep.is_held()
        }

        /// The lock's lockdep map, for lockdep's own annotations (`lockdep::pin`,
        /// `might_lock`, ...); `None` without the `validate` feature.
        #[inline]
        pub fn lock_map(&self) -> Option<&lockdep::LockMap> {
            let $s = self;
            $dep.map()
        }
    };
}
pub(crate) use validator_queries;

/// `force_unlock*` methods: release the held-lock entry a forgotten guard left (on this
/// thread or the one that forgot it), then lock_api's method of the same name. A lock that is
/// not locked at all is reported as a bad unlock balance at the caller and left alone.
/// A method marked `@read` releases the entry of a forgotten read guard (`Dep::force_release`
/// with `read`).
macro_rules! force_unlocks {
    ($($(#[$m:meta])* $(@$read:ident)? $name:ident;)*) => {$(
        $(#[$m])*
        ///
        /// # Safety
        ///
        /// As lock_api's method of the same name: the lock must be held in that mode, by a
        /// forgotten guard (or on the caller's behalf), and no live guard may own the holding.
        #[inline]
        #[track_caller]
        pub unsafe fn $name(&self) {
            let locked = self.inner.is_locked();
            let read = $crate::generic::force_unlocks!(@read $($read)?);
            if self.dep.force_release(locked, $crate::generic::here(), read) {
                // SAFETY: the caller takes over lock_api's contract.
                unsafe { self.inner.$name() }
            }
        }
    )*};
    (@read) => {
        false
    };
    (@read read) => {
        true
    };
}
pub(crate) use force_unlocks;
