//! Reports as a new user meets them: each names the user's site and says what it is about.

mod common;

use std::panic::Location;

use common::*;
use lockdep::{DynamicKey, KeyMisuse, LockMap, MisuseSubject, Report};

/// Dropping a key while a lock of it is held names "(key drop)" and the key's registration
/// site, never a line of lockdep's own `Drop`; the later use of the lock map is labelled as
/// the lock's, not the key's.
#[test]
fn key_drop_while_held_names_the_key_drop_and_registration() {
    let _h = start();
    let registered = Location::caller();
    let key = DynamicKey::new("k");
    let map: &'static LockMap = Box::leak(Box::new(LockMap::with_dynamic_key("dyn", &key)));
    lock(map);
    drop(key);
    let r = assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::UnregisterWhileHeld,
        subject: MisuseSubject::Key,
        ..
    });
    let Report::KeyMisuse {
        site,
        registered_at,
        key,
        ..
    } = &r[0]
    else {
        unreachable!()
    };
    assert!(lockdep::is_key_drop(site), "site {site}");
    assert_eq!(key, "k");
    let reg = registered_at.expect("registration site");
    assert_eq!((reg.file(), reg.line()), (file!(), registered.line() + 1));
    let text = r[0].to_string();
    assert!(text.contains("key (k) at (key drop)"), "{text}");
    assert!(
        text.contains(&format!("the key was registered at {reg}")),
        "{text}"
    );
    assert!(!text.contains("keys/dynamic.rs"), "{text}");
    unlock(map);
    take();
    // A use of the map after its key is gone names the lock.
    lock(map);
    let r = assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::NotRegistered,
        subject: MisuseSubject::Lock,
        ..
    });
    let text = r[0].to_string();
    assert!(text.contains("lock (dyn) at "), "{text}");
    unlock(map);
    take();
}

/// An explicit `unregister` names its caller.
#[test]
fn explicit_unregister_while_held_names_the_caller() {
    let _h = start();
    let key = DynamicKey::new("k2");
    let map: &'static LockMap = Box::leak(Box::new(LockMap::with_dynamic_key("dyn2", &key)));
    lock(map);
    let here = Location::caller();
    key.unregister();
    let r = assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::UnregisterWhileHeld,
        ..
    });
    let Report::KeyMisuse { site, .. } = &r[0] else {
        unreachable!()
    };
    assert_eq!((site.file(), site.line()), (file!(), here.line() + 1));
    unlock(map);
    drop(key);
    take();
}

/// `a.lock(); b.lock_nested(1); a.lock_nested(1)`: the instance being acquired is itself
/// held (under subclass 0), which is recursive locking of `a`, not a missing annotation
/// between `b` and `a`; under either nesting rule.
#[test]
fn relocking_a_held_instance_under_another_subclass_is_recursive_locking() {
    for nesting in [lockdep::Nesting::Strict, lockdep::Nesting::InstanceOrder] {
        let _h = start();
        lockdep::set_nesting(nesting);
        let (a, b) = two_of_one_class();
        lock(a);
        lock_nested(b, 1);
        lock_nested(a, 1);
        let r = assert_reports!(Report::RecursiveLocking(_));
        let Report::RecursiveLocking(s) = &r[0] else {
            unreachable!()
        };
        assert_eq!(s.holding.instance, s.acquiring.instance, "{nesting:?}");
        assert_eq!(s.holding.name, Some("a"));
        let text = r[0].to_string();
        assert!(!text.contains("missing lock nesting"), "{text}");
        assert!(text.contains("that held lock itself"), "{text}");
        assert!(text.contains("  lock(a);\n  lock(a);\n"), "{text}");
        unlock(a);
        unlock(b);
        unlock(a);
        take();
    }
}

/// Asserts that the reports made are one recursive locking of a held instance by itself.
fn assert_relocks_a_held_instance() {
    let r = assert_reports!(Report::RecursiveLocking(_));
    let Report::RecursiveLocking(s) = &r[0] else {
        unreachable!()
    };
    assert_eq!(s.holding.instance, s.acquiring.instance);
}

/// The same re-lock of a held instance under another subclass, after its chain ("the class,
/// then the class under subclass 1") was validated and cached with *another* instance on top:
/// the cache must not answer for it. Also for a lock still held from before its dynamic key
/// was unregistered and registered again (its entry has the old, dead class; the lock taken
/// again gets the new one): reported, after the same chain with another instance was cached.
#[test]
fn a_cached_chain_does_not_hide_a_held_instance_under_another_class() {
    let _h = start();
    let (a, b) = two_of_one_class();
    for _ in 0..3 {
        lock(a);
        lock_nested(b, 1);
        unlock(b);
        unlock(a);
    }
    assert_reports!();
    lock(a);
    lock_nested(a, 1);
    assert_relocks_a_held_instance();
    unlock(a);
    unlock(a);
    assert!(lockdep::held_locks().is_empty());
    take();

    let key: &'static DynamicKey = Box::leak(Box::new(DynamicKey::new("churned")));
    let leak = |m: LockMap| -> &'static LockMap { Box::leak(Box::new(m)) };
    let (c, d) = (
        leak(LockMap::with_dynamic_key("c", key)),
        leak(LockMap::with_dynamic_key("d", key)),
    );
    let x = new_lock("x");
    lock(c);
    key.unregister();
    key.register();
    take();
    lock(x);
    for _ in 0..3 {
        lock(d);
        unlock(d);
    }
    assert_reports!();
    lock(c);
    assert_relocks_a_held_instance();
    unlock(c);
    unlock(x);
    unlock(c);
    assert!(lockdep::held_locks().is_empty());
    take();
}

/// Two named maps of one class (one construction line, one key).
fn two_of_one_class() -> (&'static LockMap, &'static LockMap) {
    static KEY: lockdep::LockClassKey = lockdep::LockClassKey::new();
    let make = |name| &*Box::leak(Box::new(LockMap::with_key(name, &KEY)));
    (make("a"), make("b"))
}

/// A cycle of more than 16 links prints the first 8 and the last 8, and a count of the rest;
/// the report keeps them all.
#[test]
fn a_long_cycle_prints_its_ends_and_counts_the_middle() {
    let _h = start();
    let locks: Vec<&'static LockMap> = (0..40)
        .map(|i| new_lock(Box::leak(format!("c{i}").into_boxed_str())))
        .collect();
    for w in locks.windows(2) {
        pair(w[0], w[1]);
    }
    lock(locks[39]);
    lock(locks[0]);
    let r = assert_reports!(Report::CircularDependency(_));
    let Report::CircularDependency(c) = &r[0] else {
        unreachable!()
    };
    let n = c.cycle.len();
    assert!(n > 16, "{n} links");
    let text = r[0].to_string();
    let links = text.lines().filter(|l| l.starts_with("-> #")).count();
    assert_eq!(links, 16, "{text}");
    assert!(
        text.contains(&format!("... {} more links ...", n - 16)),
        "{text}"
    );
    assert!(text.contains(&format!("-> #{} (", n - 1)), "{text}");
    assert!(text.contains("-> #0 ("), "{text}");
    assert!(!text.contains(&format!("-> #{} (", n - 9)), "{text}");
    unlock(locks[0]);
    unlock(locks[39]);
    // A short one prints every link.
    let (a, b) = (new_lock("short a"), new_lock("short b"));
    pair(a, b);
    lock(b);
    lock(a);
    let r = assert_reports!(Report::CircularDependency(_));
    let text = r[0].to_string();
    assert!(!text.contains("more links"), "{text}");
    unlock(a);
    unlock(b);
}

/// With condvar tracking, a notification after taking a lock a waiter held is a cycle whose
/// text says what happened: the thread notifies the condvar while holding the lock (it does
/// not "hold" the condvar nor "acquire" the lock it holds).
#[test]
fn a_notification_cycle_says_notifying_while_holding() {
    let _h = start();
    let prev = lockdep::set_condvar_tracking(true);
    let (other, m) = (new_lock("other"), new_lock("flag"));
    let cv: &'static lockdep::CondvarMap = Box::leak(Box::new(lockdep::CondvarMap::named("cv")));
    // The waiter: holds `other`, waits on cv under `flag`.
    lock(other);
    lock(m);
    unlock(m);
    lockdep::condvar_wait(cv, Location::caller());
    lock(m);
    unlock(m);
    unlock(other);
    assert_reports!();
    // The notifier: takes `other`, then notifies.
    lock(other);
    let here = Location::caller();
    lockdep::condvar_notify(cv, here);
    let r = assert_reports!(Report::CircularDependency(c) if c.notify);
    let text = r[0].to_string();
    assert!(text.contains("is notifying condition variable:"), "{text}");
    assert!(text.contains("while holding lock:"), "{text}");
    assert!(!text.contains("already holding lock"), "{text}");
    assert!(!text.contains("trying to acquire"), "{text}");
    assert!(text.contains(&format!("(cv), at: {here}")), "{text}");
    assert!(text.contains(&format!("cv notified at {here}")), "{text}");
    assert!(text.contains("notify(cv);"), "{text}");
    unlock(other);
    lockdep::set_condvar_tracking(prev);
}
