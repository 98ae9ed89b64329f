//! The lock-order validator. Being built: see the lockdep issue.
