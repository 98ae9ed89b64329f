//! The circular-dependency reports delivered so far (the first [`KEPT`]), so that a deadlock
//! that happens later can name the potential one the validator reported before it.

use std::sync::Mutex;

use super::types::Report;

/// How many circular-dependency reports are kept.
pub(crate) const KEPT: usize = 64;

static RECENT: Mutex<Vec<Report>> = Mutex::new(Vec::new());

/// Keeps `r` if it is a circular dependency not kept yet and there is room.
pub(crate) fn keep(r: &Report) {
    let Report::CircularDependency(c) = r else {
        return;
    };
    let mut v = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    let same =
        |k: &Report| matches!(k, Report::CircularDependency(k) if k.class_set == c.class_set);
    if v.len() < KEPT && !v.iter().any(same) {
        v.push(r.clone());
    }
}

/// The first kept report whose cycle's classes are all among `classes` (class names as
/// reports print them).
pub(crate) fn matching(classes: &[String]) -> Option<Report> {
    let v = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    v.iter()
        .find(|r| match r {
            Report::CircularDependency(c) => c
                .cycle
                .iter()
                .all(|d| classes.contains(&d.from) && classes.contains(&d.to)),
            _ => false,
        })
        .cloned()
}

/// Forgets every kept report (the validator's reset).
pub(crate) fn clear() {
    RECENT.lock().unwrap_or_else(|e| e.into_inner()).clear();
}
