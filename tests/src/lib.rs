//! Cross-crate integration, torture and model-checking tests live in `tests/tests/`.
