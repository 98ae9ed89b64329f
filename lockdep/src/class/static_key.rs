//! Static lock class keys.

use crate::nesting::Nesting;

/// A static lock class key: every lock map created with the same key (and subclass) belongs to
/// the same lock class.
///
/// This is the kernel's `struct lock_class_key` in static storage, as used by
/// `lockdep_set_class()`. The key is identified by its address, so it must live in a `static`.
/// It needs no registration. For keys created and destroyed at run time, use
/// [`DynamicKey`](crate::DynamicKey).
///
/// ```
/// static REQUEST_QUEUE: lockdep::LockClassKey = lockdep::LockClassKey::new();
/// let map = lockdep::LockMap::with_key("request_queue", &REQUEST_QUEUE);
/// # let _ = map;
/// ```
#[derive(Debug)]
pub struct LockClassKey {
    /// How two instances of this key's classes may nest; `None` follows
    /// [`set_nesting`](crate::set_nesting). Also keeps the key non-zero-sized, so that two
    /// keys in one static array have distinct addresses.
    nesting: Option<Nesting>,
    /// The reasons given for the report kinds suppressed on this key's classes, by
    /// [`KeyMark`] index; `None` where a kind is not suppressed.
    suppressed: [Option<&'static str>; KeyMark::COUNT],
}

/// The report kinds a [`LockClassKey`] can suppress on its own classes, as indexes into the
/// key's reasons: each is a report about one class (or only about classes of one key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyMark {
    /// `Report::RecursiveLocking`.
    Recursive,
    /// `Report::MissingNestingAnnotation`.
    Nesting,
    /// `Report::CircularDependency` among this key's classes only.
    Circular,
}

impl KeyMark {
    pub(crate) const COUNT: usize = 3;
    pub(crate) const ALL: [KeyMark; KeyMark::COUNT] =
        [KeyMark::Recursive, KeyMark::Nesting, KeyMark::Circular];
}

impl LockClassKey {
    /// A new key; put it in a `static`. Nesting of its instances follows the global
    /// [`set_nesting`](crate::set_nesting).
    pub const fn new() -> LockClassKey {
        LockClassKey {
            nesting: None,
            suppressed: [None; KeyMark::COUNT],
        }
    }

    /// A new key whose classes always use `nesting` for two of their instances taken nested,
    /// whatever [`set_nesting`](crate::set_nesting) says; e.g. [`Nesting::Strict`] for a class
    /// whose instances must never nest without an annotation, as in the kernel.
    ///
    /// ```
    /// use lockdep::{LockClassKey, Nesting};
    /// static INODE: LockClassKey = LockClassKey::with_nesting(Nesting::Strict);
    /// # let _ = &INODE;
    /// ```
    pub const fn with_nesting(nesting: Nesting) -> LockClassKey {
        LockClassKey {
            nesting: Some(nesting),
            suppressed: [None; KeyMark::COUNT],
        }
    }

    /// The nesting mode this key fixes, if any.
    pub fn nesting(&self) -> Option<Nesting> {
        self.nesting
    }

    /// This key, marked so that [`Report::RecursiveLocking`](crate::Report::RecursiveLocking)
    /// on its classes is suppressed, with the `reason` (shown by
    /// [`suppressions`](crate::suppressions)). A suppression declared on the key itself, in
    /// its `static`: it is registered when the first class of the key is created, counts its
    /// hits, and is listed as stale if it never matched, like any other (see the crate docs,
    /// "Suppressions"). Marking the key again for the same kind replaces the reason.
    ///
    /// ```
    /// use lockdep::LockClassKey;
    /// static CACHE: LockClassKey =
    ///     LockClassKey::new().suppress_recursive("re-entered only by try_lock, see cache.rs");
    /// # let _ = &CACHE;
    /// ```
    pub const fn suppress_recursive(self, reason: &'static str) -> LockClassKey {
        self.mark(KeyMark::Recursive, reason)
    }

    /// This key, marked so that
    /// [`Report::MissingNestingAnnotation`](crate::Report::MissingNestingAnnotation) on its
    /// classes (two instances nested under [`Nesting::Strict`]) is suppressed, with the
    /// `reason`; see [`suppress_recursive`](Self::suppress_recursive). Where the instances are
    /// always taken in one order, [`Nesting::InstanceOrder`] checks that order instead of
    /// trusting it, and is the better choice.
    pub const fn suppress_nesting(self, reason: &'static str) -> LockClassKey {
        self.mark(KeyMark::Nesting, reason)
    }

    /// This key, marked so that a [`Report::CircularDependency`](crate::Report) among this
    /// key's classes only (instances of one class taken in both orders, or a cycle through
    /// its subclasses) is suppressed, with the `reason`; a cycle that also goes through a
    /// class of another key is still reported. See
    /// [`suppress_recursive`](Self::suppress_recursive).
    pub const fn suppress_cycles(self, reason: &'static str) -> LockClassKey {
        self.mark(KeyMark::Circular, reason)
    }

    const fn mark(mut self, mark: KeyMark, reason: &'static str) -> LockClassKey {
        self.suppressed[mark as usize] = Some(reason);
        self
    }

    /// The reason of each kind this key suppresses, by [`KeyMark`] index.
    pub(crate) fn suppressed(&self) -> &[Option<&'static str>; KeyMark::COUNT] {
        &self.suppressed
    }

    /// True if the key suppresses any kind.
    pub(crate) fn has_suppressions(&self) -> bool {
        self.suppressed.iter().any(Option::is_some)
    }
}

impl Default for LockClassKey {
    fn default() -> Self {
        LockClassKey::new()
    }
}
