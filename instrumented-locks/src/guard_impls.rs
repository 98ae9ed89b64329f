//! Trait impls shared by every guard type: `Deref`, `Debug`, `Display`, [`HeldGuard`].
//!
//! [`HeldGuard`]: crate::HeldGuard

/// Implements `Deref` (and `DerefMut` when asked), `Debug`, `Display` and `HeldGuard` for a
/// guard struct with fields `track: Track<'a>` and `inner` (a parking_lot guard).
macro_rules! guard_impls {
    ($guard:ident) => {
        impl<T: ?Sized> std::ops::Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&**self, f)
            }
        }

        impl<T: ?Sized + std::fmt::Display> std::fmt::Display for $guard<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&**self, f)
            }
        }

        impl<T: ?Sized> $crate::dep::sealed::Sealed for $guard<'_, T> {}

        impl<T: ?Sized> $crate::HeldGuard for $guard<'_, T> {
            fn lock_map(&self) -> Option<&lockdep::LockMap> {
                self.track.map()
            }
        }
    };
    ($guard:ident, mut) => {
        $crate::guard_impls::guard_impls!($guard);

        impl<T: ?Sized> std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        }
    };
}

pub(crate) use guard_impls;
