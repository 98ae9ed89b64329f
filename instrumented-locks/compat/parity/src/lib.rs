//! Empty library: this crate exists for its tests (see README.md).
