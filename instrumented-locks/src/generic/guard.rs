//! What every guard shares, written once: the trait impls, the projections onto mapped
//! guards, and the mapped guards themselves.

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

/// The plain and `Arc` guards of one lock kind in one mode, with everything they share:
/// the structs (the lock pointer, the [`Track`](crate::dep) word, a marker), construction,
/// `Drop`, `unlocked`, the fair unlocks and `bump` (under the `fair` bounds), the lock
/// accessor (`mutex()`, `rwlock()`, ...), the `Arc` guard's `into_arc` and `into_arc_fair`,
/// and the trait impls of [`guard_impls`].
///
/// `release` (and `release_fair`) gives lockdep the release of the track `$t` and unlocks the
/// lock `$l` (a `&Lock`) for good; with a track that is not held it is the raw unlock alone.
/// `relock` takes the raw lock again, `bump` is the raw bump. Lockdep's side of every
/// operation is here, or in the lock's [`Relocks`](crate::generic::Relocks) for `unlocked`
/// and `bump`: a release before the raw unlock, a validated re-lock before the raw one.
macro_rules! guard_core {
    (
        $Lock:ident<$($P:ident),*>: impl[$($g:tt)*] fair[$($fg:tt)*];
        $(#[$pm:meta])* plain $Plain:ident, $accessor:ident, marker $PMarker:ty;
        $(#[$am:meta])* arc $Arc:ident, marker $AMarker:ty;
        release: |$l1:ident, $t1:ident, $s1:ident| $release:expr;
        release_fair: |$l2:ident, $t2:ident, $s2:ident| $release_fair:expr;
        relock: |$l3:ident| $relock:expr;
        bump: |$l4:ident| $bump:expr;
    ) => {
        $(#[$pm])*
        #[clippy::has_significant_drop]
        pub struct $Plain<'a, $($g)*> {
            lock: $crate::dep::TrackedRef<'a, $Lock<$($P),*>>,
            marker: std::marker::PhantomData<$PMarker>,
        }

        $(#[$am])*
        #[cfg(feature = "arc_lock")]
        #[clippy::has_significant_drop]
        pub struct $Arc<$($g)*> {
            lock: $crate::dep::TrackedArc<$Lock<$($P),*>>,
            marker: std::marker::PhantomData<$AMarker>,
        }

        $crate::generic::guard_core!(@flavour
            ['a] [$($g)*] [$($fg)*] $Plain<'a, $($P),*>, &'a $Lock<$($P),*>, $Lock<$($P),*>,
            $crate::dep::TrackedRef<'a, $Lock<$($P),*>>;
            release: |$l1, $t1, $s1| $release;
            release_fair: |$l2, $t2, $s2| $release_fair;
            relock: |$l3| $relock;
            bump: |$l4| $bump;
        );
        #[cfg(feature = "arc_lock")]
        $crate::generic::guard_core!(@flavour
            [] [$($g)*] [$($fg)*] $Arc<$($P),*>, std::sync::Arc<$Lock<$($P),*>>, $Lock<$($P),*>,
            $crate::dep::TrackedArc<$Lock<$($P),*>>;
            release: |$l1, $t1, $s1| $release;
            release_fair: |$l2, $t2, $s2| $release_fair;
            relock: |$l3| $relock;
            bump: |$l4| $bump;
        );

        impl<'a, $($g)*> $Plain<'a, $($P),*> {
            /// The lock this guard holds.
            #[inline]
            pub fn $accessor(s: &Self) -> &'a $Lock<$($P),*> {
                s.lock.get()
            }
        }

        #[cfg(feature = "arc_lock")]
        impl<$($g)*> $Arc<$($P),*> {
            /// The `Arc` of the lock this guard holds.
            #[inline]
            pub fn $accessor(s: &Self) -> &std::sync::Arc<$Lock<$($P),*>> {
                s.lock.arc()
            }

            $crate::generic::guard_core!(@into_arc into_arc, $Lock<$($P),*>,
                |$l1, $t1, $s1| $release; "Unlocks and returns the `Arc` the guard held.");
        }

        #[cfg(feature = "arc_lock")]
        impl<$($fg)*> $Arc<$($P),*> {
            $crate::generic::guard_core!(@into_arc into_arc_fair, $Lock<$($P),*>,
                |$l2, $t2, $s2| $release_fair;
                "[`into_arc`](Self::into_arc) with a fair unlock.");
        }
    };
    (@flavour
        [$($lt:lifetime)?] [$($g:tt)*] [$($fg:tt)*] $Ty:ty, $LockPtr:ty, $Target:ty, $Store:ty;
        release: |$l1:ident, $t1:ident, $s1:ident| $release:expr;
        release_fair: |$l2:ident, $t2:ident, $s2:ident| $release_fair:expr;
        relock: |$l3:ident| $relock:expr;
        bump: |$l4:ident| $bump:expr;
    ) => {
        impl<$($lt,)? $($g)*> $Ty {
            #[inline]
            pub(super) fn new(lock: $LockPtr, track: $crate::dep::Track) -> Self {
                Self {
                    lock: <$Store>::new(lock, track),
                    marker: std::marker::PhantomData,
                }
            }

            /// The lock pointer and the track, with the guard gone but the lock still held.
            #[inline]
            fn take(s: Self) -> ($LockPtr, $crate::dep::Track) {
                let s = std::mem::ManuallyDrop::new(s);
                // SAFETY: `s` is never dropped, so its lock pointer moves out exactly once.
                unsafe { std::ptr::read(&s.lock) }.into_parts()
            }

            $crate::generic::guard_core!(@unlocked unlocked, $Target, |$l1, $t1, $s1| $release;
                "Unlocks, runs `f`, and locks again in the same mode (lock_api's `unlocked`). \
                 The re-lock is validated before it can block, with the locks held then.");

            /// `unlocked` with the raw unlock `unlock`.
            #[inline]
            fn unlocked_with<U>(
                s: &mut Self,
                site: $crate::dep::Site,
                unlock: impl FnOnce(&$Target, &mut $crate::dep::Track),
                f: impl FnOnce() -> U,
            ) -> U {
                s.lock.with_track(|track, lock| {
                    let relock = |$l3: &$Target| {
                        $relock;
                    };
                    $crate::generic::Relocks::unlocked_track(lock, track, site, unlock, relock, f)
                })
            }
        }

        impl<$($lt,)? $($fg)*> $Ty {
            /// Unlocks with a fair hand-off to waiting threads.
            #[inline]
            #[track_caller]
            pub fn unlock_fair(s: Self) {
                let (lock, track) = Self::take(s);
                let $l2 = &*lock;
                #[allow(unused_mut)]
                let mut $t2 = track;
                let $s2 = $crate::generic::here();
                $release_fair;
            }

            $crate::generic::guard_core!(@unlocked unlocked_fair, $Target,
                |$l2, $t2, $s2| $release_fair;
                "[`unlocked`](Self::unlocked) with a fair unlock.");

            /// Lets waiting threads take the lock, if there are any, and takes it again in the
            /// same mode. Lockdep sees a release and a re-lock, validated before it can block.
            #[inline]
            #[track_caller]
            pub fn bump(s: &mut Self) {
                let site = $crate::generic::here();
                let bump = |$l4: &$Target| {
                    $bump;
                };
                let unlock_fair = |$l2: &$Target, track: &mut $crate::dep::Track| {
                    #[allow(unused_mut)]
                    let mut $t2 = *track;
                    let $s2 = site;
                    $release_fair;
                    *track = $t2;
                };
                let relock = |$l3: &$Target| {
                    $relock;
                };
                s.lock.with_track(|track, lock| {
                    $crate::generic::Relocks::bump_track(
                        lock, track, site, bump, unlock_fair, relock,
                    )
                });
            }
        }

        impl<$($lt,)? $($g)*> Drop for $Ty {
            #[inline]
            fn drop(&mut self) {
                #[allow(unused_mut)]
                let mut $t1 = self.lock.track();
                let $l1 = &*self.lock;
                let $s1 = $crate::dep::drop_site();
                $release;
            }
        }

        impl<$($lt,)? $($g)*> $crate::generic::Tracked for $Ty {
            fn set_track(&mut self, track: $crate::dep::Track) {
                self.lock.set_track(track);
            }
        }

        $crate::generic::guard_impls! {
            impl[$($lt,)? $($g)*] $Ty;
            data: |s| s.lock.data_ptr();
            map: |s| s.lock.dep.map();
        }
    };
    (@unlocked $name:ident, $Target:ty, |$l:ident, $t:ident, $s:ident| $release:expr; $doc:expr) => {
        #[doc = $doc]
        #[inline]
        #[track_caller]
        pub fn $name<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
            let site = $crate::generic::here();
            let unlock = |$l: &$Target, track: &mut $crate::dep::Track| {
                #[allow(unused_mut)]
                let mut $t = *track;
                let $s = site;
                $release;
                *track = $t;
            };
            Self::unlocked_with(s, site, unlock, f)
        }
    };
    (@into_arc $name:ident, $Target:ty, |$l:ident, $t:ident, $s:ident| $release:expr;
        $doc:expr) => {
        #[doc = $doc]
        #[inline]
        #[track_caller]
        pub fn $name(s: Self) -> std::sync::Arc<$Target> {
            let (lock, track) = Self::take(s);
            {
                let $l = &*lock;
                #[allow(unused_mut)]
                let mut $t = track;
                let $s = $crate::generic::here();
                $release;
            }
            lock
        }
    };
}
pub(crate) use guard_core;
