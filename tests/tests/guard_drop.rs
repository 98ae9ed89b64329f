//! A guard of the instrumented locks released by its drop: a report about that release names
//! "(guard drop)" and the user's acquisition site, never a line of the lock wrapper (a
//! `Drop::drop` cannot be `#[track_caller]`).

use std::sync::{Arc, Mutex};

use lockdep::{Policy, Report};

#[test]
fn a_pinned_lock_released_by_guard_drop_names_its_acquisition_site() {
    let got: Arc<Mutex<Vec<Report>>> = Arc::default();
    let g = got.clone();
    lockdep::set_policy(Policy::Callback(Arc::new(move |r: &Report| {
        g.lock().unwrap().push(r.clone());
    })));
    let m = instrumented_locks::Mutex::named(0u32, "pinned");
    let acquired = line!() + 1;
    let guard = m.lock();
    lockdep::pin(m.lock_map().expect("validation is on"));
    drop(guard); // released while pinned, by the guard's drop
    let r = std::mem::take(&mut *got.lock().unwrap());
    assert_eq!(r.len(), 1, "{r:#?}");
    let text = r[0].to_string();
    let site = format!("tests/tests/guard_drop.rs:{acquired}:");
    assert!(
        text.contains("at (guard drop) of the lock acquired at ") && text.contains(&site),
        "{text}"
    );
    assert!(!text.contains("instrumented-locks/src"), "{text}");
}
