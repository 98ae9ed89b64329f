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
