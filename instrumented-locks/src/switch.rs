//! The runtime switch: stop feeding lockdep without rebuilding.

use std::sync::atomic::{AtomicU8, Ordering};

const UNSET: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

/// The environment variable read once, at the first lock operation, when
/// [`set_enabled`] was not called: `0`, `off` or `false` turn validation off.
pub const ENV_VAR: &str = "INSTRUMENTED_LOCKS_VALIDATE";

/// The switch, alone on its cache line (every lock operation reads it): no write to a
/// neighbouring static (a counter, a seed) invalidates the line under every reader.
#[repr(align(128))]
struct Switch(AtomicU8);

static STATE: Switch = Switch(AtomicU8::new(UNSET));

/// Turns validation on or off for acquisitions made from now on, process-wide.
///
/// Off, the wrappers skip lockdep entirely (one relaxed atomic load per lock operation), so
/// nothing is reported and nothing is learned. A guard taken while validation was on still
/// releases its held-lock entry when it drops, and a guard taken while it was off releases
/// nothing, so switching never produces a false "bad unlock balance". Assertions
/// (`assert_held`, ...) are skipped while off.
///
/// To keep validating but stop *printing*, set a lockdep policy instead
/// (`lockdep::set_policy(lockdep::Policy::Callback(..))`). Without the `validate` feature
/// this switch has no effect. Thread-safe.
pub fn set_enabled(on: bool) {
    // Relaxed: the flag guards no other data; each guard records what it did itself.
    STATE.0.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether lock operations are being fed to lockdep: false without the `validate` feature,
/// otherwise the last [`set_enabled`] value, or (before any call) true unless [`ENV_VAR`]
/// says `0`, `off` or `false`.
#[cfg_attr(not(debug_assertions), inline)]
#[cfg_attr(debug_assertions, inline(never))]
pub fn is_enabled() -> bool {
    if !cfg!(feature = "validate") {
        return false;
    }
    // Relaxed: see `set_enabled`.
    match STATE.0.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => init_from_env(),
    }
}

#[cold]
fn init_from_env() -> bool {
    let off = std::env::var(ENV_VAR)
        .map(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "off" | "false"
            )
        })
        .unwrap_or(false);
    let v = if off { OFF } else { ON };
    // Relaxed: see `set_enabled`. A racing `set_enabled` wins (compare_exchange from UNSET).
    let _ = STATE
        .0
        .compare_exchange(UNSET, v, Ordering::Relaxed, Ordering::Relaxed);
    // Relaxed: as above.
    STATE.0.load(Ordering::Relaxed) == ON
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only unit test touching the switch, so the state starts unset.
    #[test]
    fn env_var_then_explicit_switch() {
        assert_eq!(STATE.0.load(Ordering::Relaxed), UNSET);
        std::env::set_var(ENV_VAR, " Off ");
        assert!(
            !is_enabled(),
            "the environment turned it off (or no feature)"
        );
        set_enabled(true);
        assert_eq!(is_enabled(), cfg!(feature = "validate"));
        set_enabled(false);
        assert!(!is_enabled());
        std::env::remove_var(ENV_VAR);
    }
}
