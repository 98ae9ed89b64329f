//! Empty: the program is in `tests/`.
