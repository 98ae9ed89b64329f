//! Reports a reader can act on: a release by guard drop names "(guard drop)" and the site
//! that acquired the lock, never a line of the lock wrapper; a cycle's chain explains its
//! dependency tags; every capacity-exhaustion episode is reported, rate limited.

mod common;

use std::panic::Location;

use common::*;
use lockdep::{Capacity, DynamicKey, LockClassKey, LockMap, Report};

#[test]
fn a_guard_drop_release_shows_guard_drop_and_the_acquisition_site() {
    let _h = start();
    let a = new_lock("A");
    // Not held: a bad unlock whose site is unknown.
    lockdep::release_guard(a);
    let r = assert_reports!(Report::BadUnlockBalance { .. });
    let text = r[0].to_string();
    assert!(text.contains("at:\n(guard drop)\n"), "{text}");
    assert!(!text.contains("site.rs"), "{text}");
    let Report::BadUnlockBalance { releasing, .. } = &r[0] else {
        unreachable!()
    };
    assert!(lockdep::is_guard_drop(releasing.site));
    // Held and pinned: the report names the site that acquired it.
    let acquired = Location::caller();
    lockdep::acquire(a, 0, lockdep::Mode::Exclusive, false, None, acquired);
    lockdep::pin(a);
    lockdep::release(a, lockdep::guard_drop_site());
    let r = assert_reports!(Report::AssertionFailed { .. });
    let text = r[0].to_string();
    assert!(
        text.contains(&format!(
            "ReleasedWhilePinned for lock (A) at (guard drop) of the lock acquired at {acquired}"
        )),
        "{text}"
    );
    // A release with a real site still names it.
    lockdep::release(a, Location::caller());
    let r = assert_reports!(Report::BadUnlockBalance { .. });
    assert!(!lockdep::is_guard_drop(Location::caller()));
    assert!(r[0].to_string().contains("tests/readable.rs"));
}

#[test]
fn a_cycle_report_explains_its_dependency_tags() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    lock(b);
    lock(a);
    unlock(a);
    unlock(b);
    let text = assert_one_cycle(&["A", "B"]).to_string();
    let legend = "([XY]: X = how the earlier lock was held: E exclusive, S reader, U upgradable \
                  read; Y = how the later one was taken: N writer or plain reader, R recursive \
                  reader, U upgradable read)";
    assert!(
        text.contains(&format!(
            "dependency chain (in reverse order) is:\n{legend}\n"
        )),
        "{text}"
    );
    assert!(text.contains("[EN]"));
    assert_eq!(text.matches("[XY]").count(), 1, "one legend: {text}");
}

/// A cycle whose locks are all held as readers says what it needs to deadlock (a writer on
/// each lock), and its scenario shows each lock held as it was: `rlock`, not `lock`. A cycle
/// with a lock held exclusively says nothing of the kind.
#[test]
fn a_cycle_of_readers_says_it_needs_writers_and_shows_read_holds() {
    let _h = start();
    let (a, b) = (new_lock("RA"), new_lock("RB"));
    read(a);
    read(b);
    unlock(b);
    unlock(a);
    read(b);
    read(a);
    unlock(a);
    unlock(b);
    let text = assert_one_cycle(&["RA", "RB"]).to_string();
    assert!(text.contains("[SN]"), "{text}");
    let cpu1 = " ".repeat(31);
    let scenario = format!("  rlock(RB);\n{cpu1}rlock(RA);\n{cpu1}rlock(RB);\n  rlock(RA);\n");
    assert!(text.contains(&scenario), "{text}");
    assert!(
        text.contains(" Every lock of this cycle is held as a reader: it deadlocks only if"),
        "{text}"
    );

    // One lock held exclusively: the cycle needs no writer from outside.
    let (c, d) = (new_lock("XC"), new_lock("XD"));
    lock(c);
    read(d);
    unlock(d);
    unlock(c);
    read(d);
    read(c);
    unlock(c);
    unlock(d);
    let text = assert_one_cycle(&["XC", "XD"]).to_string();
    assert!(
        text.contains("                               lock(XC);"),
        "{text}"
    );
    assert!(!text.contains("Every lock of this cycle"), "{text}");
}

/// Each crossing of the depth limit is an episode; episodes 1, 2, 4, 8, 16 of 20 are
/// delivered, the others counted.
#[test]
fn every_depth_limit_episode_is_reported_rate_limited() {
    let _h = start();
    lockdep::set_max_depth(4);
    let locks: Vec<&'static LockMap> = (0..5)
        .map(|i| {
            let k: &'static LockClassKey = Box::leak(Box::new(LockClassKey::new()));
            let name: &'static str = Box::leak(format!("L{i}").into_boxed_str());
            &*Box::leak(Box::new(LockMap::with_key(name, k)))
        })
        .collect();
    let suppressed = lockdep::stats().repeats_suppressed;
    for &l in &locks[..4] {
        lock(l);
    }
    for _ in 0..20 {
        lock(locks[4]); // the fifth lock: past the limit
        unlock(locks[4]);
    }
    for &l in locks[..4].iter().rev() {
        unlock(l);
    }
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
    let r = take();
    let episodes: Vec<u64> = r
        .iter()
        .map(|r| match r {
            Report::CapacityExhausted {
                what: Capacity::HeldLocks,
                limit: 4,
                episode,
                ..
            } => *episode,
            other => panic!("{other:#?}"),
        })
        .collect();
    assert_eq!(episodes, [1, 2, 4, 8, 16]);
    assert!(
        !r[0].to_string().contains("This is episode"),
        "the first reads as before"
    );
    assert!(r[1].to_string().contains("This is episode 2 of this limit"));
    assert_eq!(lockdep::stats().repeats_suppressed - suppressed, 15);
}

/// Running out of classes, making room (a key unregistered) and running out again is two
/// episodes, each reported.
#[test]
fn a_second_class_exhaustion_is_reported() {
    let _h = start();
    let key = DynamicKey::new("room");
    let dynamic = LockMap::with_dynamic_key("dynamic", &key);
    lock(&dynamic);
    unlock(&dynamic);
    let mut m = LockMap::new("many");
    let new_class = |m: &mut LockMap| {
        let k: &'static LockClassKey = Box::leak(Box::new(LockClassKey::new()));
        m.set_key(k);
        lock(m);
        unlock(m);
    };
    for _ in lockdep::stats().classes..lockdep::MAX_CLASSES {
        new_class(&mut m);
    }
    assert_eq!(lockdep::stats().classes, lockdep::MAX_CLASSES);
    for _ in 0..3 {
        new_class(&mut m); // episode 1 (one report)
    }
    drop(dynamic);
    drop(key); // frees a class
    new_class(&mut m); // fits: the episode ends
    for _ in 0..3 {
        new_class(&mut m); // episode 2
    }
    let r = take();
    let episodes: Vec<u64> = r
        .iter()
        .map(|r| match r {
            Report::CapacityExhausted {
                what: Capacity::Classes,
                episode,
                ..
            } => *episode,
            other => panic!("{other:#?}"),
        })
        .collect();
    assert_eq!(episodes, [1, 2]);
    lockdep::reset();
    drop(m);
}

/// Of two shortest cycles that a new dependency closes, the report names the same one every
/// time the same program runs: the search visits a class's dependencies in the order of the
/// classes' slots, not in the order of the hash map that holds them (which changes with
/// every map), and a reset hands the slots out again in the order of a fresh table.
#[test]
fn of_two_shortest_cycles_the_same_one_is_reported_every_time() {
    let _h = start();
    let (a, b, c, d) = (new_lock("a"), new_lock("b"), new_lock("c"), new_lock("d"));
    let mut seen = Vec::new();
    for _ in 0..24 {
        // Each round on a fresh graph: new class table, new hash maps.
        lockdep::reset();
        take();
        pair(a, b);
        pair(a, c);
        pair(b, d);
        pair(c, d);
        pair(d, a); // closes a -> b -> d -> a and a -> c -> d -> a
        let r = assert_reports!(Report::CircularDependency(_));
        seen.push(r[0].cycle_classes());
    }
    assert_eq!(seen[0].len(), 4, "a cycle of three: {:?}", seen[0]);
    assert!(
        seen.iter().all(|s| *s == seen[0]),
        "the reported cycle changed between runs: {seen:?}"
    );
}
