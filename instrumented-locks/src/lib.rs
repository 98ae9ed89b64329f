//! Drop-in lock wrappers over `parking_lot` that report lock-order problems through
//! [`lockdep`]. Not built yet: see the project's issue on instrumented locks.
