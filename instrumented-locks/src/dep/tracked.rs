//! Where a guard keeps its lock and its [`Track`]: [`TrackedRef`] for a guard that borrows
//! the lock, `TrackedArc` (feature `arc_lock`) for one that owns an `Arc` of it.
//!
//! A plain guard is one word, as parking_lot's is: the lock's address, with the track in its
//! three low bits (a lock embeds a [`Dep`](super::Dep), a lock map, 8-aligned, so an address
//! of a lock has them clear); the usual guard, held exclusively, has them all zero. A guard of
//! two words (the address, then the track) was returned in two registers, but moved into a
//! tuple or a struct of guards (locks released in the order taken) it was written as two
//! 8-byte stores and read back as one 16-byte load, which the CPU cannot forward from the
//! stores: about 2.7 ns a lock on such a pair on a Zen 4, with validation switched on or off
//! (see BENCHMARKS.md). One word moves in a register.
//!
//! With `send_guard`, a track is more than three bits (the holding thread, the acquisition's
//! subclass and nest lock), and the guard keeps it next to the reference. Without `validate`,
//! the track is zero-sized and so is what is kept of it.
//!
//! Every access goes through the same methods in every layout: [`get`](TrackedRef::get) (or
//! `Deref`) for the lock, [`track`](TrackedRef::track) and
//! [`set_track`](TrackedRef::set_track) for the track, and
//! [`track_mut`](TrackedRef::track_mut), a handle that derefs to the track and writes it back
//! when it goes (also on an unwind, as a `&mut Track` into the guard would have kept the last
//! value written).

use std::ops::{Deref, DerefMut};
#[cfg(feature = "arc_lock")]
use std::sync::Arc;

use super::Track;

/// A lock type that embeds a [`Dep`](super::Dep), so that its alignment is at least a lock
/// map's (8): the low bits of its address are free for a track.
///
/// # Safety
///
/// The type's alignment is at least `align_of::<lockdep::LockMap>()`: it has a `Dep` field
/// (for an unsized type, a sized `Dep` field before the unsized tail).
pub(crate) unsafe trait Locked {}

/// What a guard's storage does with its track (see [`TrackMut`]).
pub(crate) trait TrackStore {
    fn load(&self) -> Track;
    fn store(&mut self, track: Track);
}

/// The track of a guard, borrowed for change: derefs to it, and writes it back to the guard
/// when dropped (on an unwind too).
pub(crate) struct TrackMut<'s, S: TrackStore + ?Sized> {
    to: &'s mut S,
    track: Track,
}

impl<'s, S: TrackStore + ?Sized> TrackMut<'s, S> {
    #[inline]
    fn new(to: &'s mut S) -> TrackMut<'s, S> {
        TrackMut {
            track: to.load(),
            to,
        }
    }
}

impl<S: TrackStore + ?Sized> Deref for TrackMut<'_, S> {
    type Target = Track;
    #[inline]
    fn deref(&self) -> &Track {
        &self.track
    }
}

impl<S: TrackStore + ?Sized> DerefMut for TrackMut<'_, S> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Track {
        &mut self.track
    }
}

impl<S: TrackStore + ?Sized> Drop for TrackMut<'_, S> {
    #[inline]
    fn drop(&mut self) {
        self.to.store(self.track);
    }
}

/// A guard's borrow of its lock, with the guard's track: one word with `validate` (and not
/// `send_guard`), the address with the track in its low bits. See the module docs.
#[cfg(all(feature = "validate", not(feature = "send_guard")))]
pub(crate) struct TrackedRef<'a, L: ?Sized> {
    /// The lock's address, with the track's bits (`Track::tag`) in the low bits.
    word: std::ptr::NonNull<L>,
    lock: std::marker::PhantomData<&'a L>,
}

#[cfg(all(feature = "validate", not(feature = "send_guard")))]
impl<'a, L: ?Sized + Locked> TrackedRef<'a, L> {
    const _ALIGNED: () = assert!(std::mem::align_of::<lockdep::LockMap>() > Track::TAGS);

    /// The lock `lock`, with the track `track`.
    #[inline]
    pub(crate) fn new(lock: &'a L, track: Track) -> Self {
        let () = Self::_ALIGNED;
        let word = std::ptr::NonNull::from(lock);
        debug_assert_eq!(word.addr().get() & Track::TAGS, 0);
        TrackedRef {
            word: word.map_addr(|a| a | track.tag()),
            lock: std::marker::PhantomData,
        }
    }

    /// The lock, for as long as the guard's borrow.
    #[inline]
    pub(crate) fn get(&self) -> &'a L {
        let lock = self.word.map_addr(|a| {
            // SAFETY: the bits cleared are the tag's; what is left is the reference's
            // address, which is not 0.
            unsafe { std::num::NonZero::new_unchecked(a.get() & !Track::TAGS) }
        });
        // SAFETY: the address and metadata are those of the `&'a L` given to `new`, and the
        // pointer keeps its provenance (only the tag bits changed).
        unsafe { lock.as_ref() }
    }

    /// The track.
    #[inline]
    pub(crate) fn track(&self) -> Track {
        Track::from_tag(self.word.addr().get() & Track::TAGS)
    }

    /// Sets the track.
    #[inline]
    pub(crate) fn set_track(&mut self, track: Track) {
        self.word = self.word.map_addr(|a| {
            // SAFETY: the address without its tag is the reference's, not 0, so the new one
            // is not 0 either.
            unsafe { std::num::NonZero::new_unchecked((a.get() & !Track::TAGS) | track.tag()) }
        });
    }
}

#[cfg(all(feature = "validate", not(feature = "send_guard")))]
impl<L: ?Sized + Locked> TrackStore for TrackedRef<'_, L> {
    #[inline]
    fn load(&self) -> Track {
        self.track()
    }
    #[inline]
    fn store(&mut self, track: Track) {
        self.set_track(track);
    }
}

/// A guard's pointer to its lock (`P`: a reference or an `Arc`), with the guard's track next
/// to it: [`TrackedRef`] where the track does not fit in the address, and `TrackedArc`.
#[cfg(any(
    not(all(feature = "validate", not(feature = "send_guard"))),
    feature = "arc_lock"
))]
pub(crate) struct Beside<P> {
    lock: P,
    track: Track,
}

#[cfg(any(
    not(all(feature = "validate", not(feature = "send_guard"))),
    feature = "arc_lock"
))]
impl<P> Beside<P> {
    /// The track.
    #[inline]
    pub(crate) fn track(&self) -> Track {
        self.track
    }

    /// Sets the track.
    #[inline]
    pub(crate) fn set_track(&mut self, track: Track) {
        self.track = track;
    }
}

#[cfg(any(
    not(all(feature = "validate", not(feature = "send_guard"))),
    feature = "arc_lock"
))]
impl<P> TrackStore for Beside<P> {
    #[inline]
    fn load(&self) -> Track {
        self.track
    }
    #[inline]
    fn store(&mut self, track: Track) {
        self.track = track;
    }
}

/// A guard's borrow of its lock, with the guard's track next to it (with `send_guard`, a
/// track of more than a few bits; without `validate`, a zero-sized one: then one word).
#[cfg(not(all(feature = "validate", not(feature = "send_guard"))))]
pub(crate) type TrackedRef<'a, L> = Beside<&'a L>;

#[cfg(not(all(feature = "validate", not(feature = "send_guard"))))]
impl<'a, L: ?Sized + Locked> Beside<&'a L> {
    /// The lock `lock`, with the track `track`.
    #[inline]
    pub(crate) fn new(lock: &'a L, track: Track) -> Self {
        Beside { lock, track }
    }

    /// The lock, for as long as the guard's borrow.
    #[inline]
    pub(crate) fn get(&self) -> &'a L {
        self.lock
    }
}

impl<'a, L: ?Sized + Locked> TrackedRef<'a, L> {
    /// The lock and the track.
    #[inline]
    pub(crate) fn into_parts(self) -> (&'a L, Track) {
        (self.get(), self.track())
    }

    /// The track, borrowed for change (written back when the handle goes).
    #[inline]
    pub(crate) fn track_mut(&mut self) -> TrackMut<'_, Self> {
        TrackMut::new(self)
    }

    /// Runs `f` on the track, borrowed for change, and the lock.
    #[inline]
    pub(crate) fn with_track<U>(&mut self, f: impl FnOnce(&mut Track, &'a L) -> U) -> U {
        let lock = self.get();
        f(&mut self.track_mut(), lock)
    }
}

impl<L: ?Sized + Locked> Deref for TrackedRef<'_, L> {
    type Target = L;
    #[inline]
    fn deref(&self) -> &L {
        self.get()
    }
}

/// A guard's `Arc` of its lock, with the guard's track next to it (two words: the accessor
/// lends the `Arc` itself, so it is kept as it is).
#[cfg(feature = "arc_lock")]
pub(crate) type TrackedArc<L> = Beside<Arc<L>>;

#[cfg(feature = "arc_lock")]
impl<L: ?Sized + Locked> Beside<Arc<L>> {
    /// The lock `lock`, with the track `track`.
    #[inline]
    pub(crate) fn new(lock: Arc<L>, track: Track) -> Self {
        Beside { lock, track }
    }

    /// The `Arc`.
    #[inline]
    pub(crate) fn arc(&self) -> &Arc<L> {
        &self.lock
    }

    /// The `Arc` and the track.
    #[inline]
    pub(crate) fn into_parts(self) -> (Arc<L>, Track) {
        (self.lock, self.track)
    }

    /// Runs `f` on the track, borrowed for change, and the lock.
    #[inline]
    pub(crate) fn with_track<U>(&mut self, f: impl FnOnce(&mut Track, &L) -> U) -> U {
        f(&mut self.track, &self.lock)
    }
}

#[cfg(feature = "arc_lock")]
impl<L: ?Sized + Locked> Deref for Beside<Arc<L>> {
    type Target = L;
    #[inline]
    fn deref(&self) -> &L {
        &self.lock
    }
}
