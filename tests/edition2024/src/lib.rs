//! No code: this package exists for its tests (`tests/`), which must be compiled as edition
//! 2024, where the temporaries of an `if let` scrutinee are dropped before the `else` block.
