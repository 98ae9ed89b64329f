//! Classes made of a construction site *and* a protected type, built by `const` lock maps, and
//! the names of locks that have none.
//!
//! The case behind it: a library that constructs every one of its mutexes inside one generic
//! adapter (one `Mutex::new` line, monomorphized per protected type) got one class per
//! adapter line under per-site classes, so every fixed-order nesting of two of its different
//! mutexes read as "possible recursive locking", named after whichever mutex came first.

mod common;

use std::marker::PhantomData;
use std::panic::Location;

use common::*;
use lockdep::{LockMap, Mode, Nesting, Report};

/// A lock wrapper as a crate would write it: a `const fn new` that takes its class from its
/// caller and the protected type.
struct Wrapper<T: ?Sized> {
    map: LockMap,
    _data: PhantomData<T>,
}

impl<T: ?Sized> Wrapper<T> {
    #[track_caller]
    const fn new() -> Wrapper<T> {
        Wrapper {
            map: LockMap::of_type::<T>("Mutex"),
            _data: PhantomData,
        }
    }

    #[track_caller]
    fn lock(&self) -> WrapperGuard<'_> {
        lockdep::acquire(
            &self.map,
            0,
            Mode::Exclusive,
            false,
            None,
            Location::caller(),
        );
        WrapperGuard(&self.map)
    }
}

struct WrapperGuard<'a>(&'a LockMap);

impl Drop for WrapperGuard<'_> {
    fn drop(&mut self) {
        lockdep::release(self.0, Location::caller());
    }
}

/// A generic adapter with one construction line for every lock it makes (not
/// `#[track_caller]`: the site is this line, as in the library).
struct Adapter<T>(Wrapper<T>);

/// The line of `Adapter::new`'s construction.
const ADAPTER_LINE: u32 = line!() + 4;

impl<T> Adapter<T> {
    fn new() -> Adapter<T> {
        Adapter(Wrapper::new())
    }
}

// A `static` and a user `const fn` compile: the class is found at the first acquisition.
const GLOBAL_LINE: u32 = line!() + 1;
static GLOBAL: Wrapper<u64> = Wrapper::new();

const MADE_LINE: u32 = line!() + 2;
const fn make() -> Wrapper<[u8; 4]> {
    Wrapper::new()
}

static MADE: Wrapper<[u8; 4]> = make();

#[test]
fn a_generic_adapter_gives_each_protected_type_its_own_class() {
    let _h = start();
    // Under the strict rule, so that two instances of one class would be reported: the
    // adapter's two types are two classes, and nesting them is silent.
    lockdep::set_nesting(Nesting::Strict);
    let (bytes, names) = (Adapter::<u8>::new(), Adapter::<String>::new());
    {
        let _b = bytes.0.lock();
        let _n = names.0.lock();
    }
    assert_reports!();
    fn held<T>(w: &Wrapper<T>) -> lockdep::LockDesc {
        let _g = w.lock();
        lockdep::held_locks()[0].clone()
    }
    let (b, n) = (held(&bytes.0), held(&names.0));
    assert_ne!(b.class, n.class);
    let file = file!();
    assert_eq!(b.class_name, format!("Mutex<u8>@{file}:{ADAPTER_LINE}"));
    assert_eq!(n.class_name, format!("Mutex<String>@{file}:{ADAPTER_LINE}"));
    // One type through the adapter is one class: the strict rule still sees its nesting.
    let more = Adapter::<u8>::new();
    {
        let _b = bytes.0.lock();
        let _m = more.0.lock();
    }
    let r = assert_reports!(Report::MissingNestingAnnotation(_));
    assert!(r[0].to_string().contains(&b.class_name));
    lockdep::set_nesting(Nesting::InstanceOrder);
}

#[test]
fn static_and_const_fn_locks_get_their_class_at_first_use() {
    let _h = start();
    {
        let _g = GLOBAL.lock();
        let _m = MADE.lock();
    }
    assert_reports!();
    let names: Vec<String> = lockdep::dependencies()
        .into_iter()
        .flat_map(|d| [d.from, d.to])
        .collect();
    let file = file!();
    assert!(
        names.contains(&format!("Mutex<u64>@{file}:{GLOBAL_LINE}")),
        "{names:?}"
    );
    assert!(
        names.contains(&format!("Mutex<[u8; 4]>@{file}:{MADE_LINE}")),
        "{names:?}"
    );
}

#[test]
fn unnamed_locks_read_as_kind_type_and_site_in_reports() {
    let _h = start();
    let line = line!() + 1;
    let accounts: Vec<LockMap> = (0..2).map(|_| LockMap::of_type::<u64>("Mutex")).collect();
    let want = format!("Mutex<u64>@{}:{line}", file!());
    assert_eq!(accounts[0].class_name(), want);
    assert!(!accounts[0].is_named());
    assert_eq!(accounts[0].name(), "Mutex");
    lock(&accounts[0]);
    lock(&accounts[0]);
    let r = assert_reports!(Report::RecursiveLocking(_));
    let text = r[0].to_string();
    assert!(text.contains(&format!("({want})")), "{text}");
    assert!(text.contains(&format!("lock({want});")), "{text}");
    unlock(&accounts[0]);
    unlock(&accounts[0]);

    // Long paths are shortened; a named map names its class and its instance.
    let line = line!() + 1;
    let queue = LockMap::of_type::<Vec<std::collections::HashMap<u8, String>>>("RwLock");
    assert_eq!(
        queue.class_name(),
        format!("RwLock<Vec<HashMap<u8, String>>>@{}:{line}", file!())
    );
    let named = LockMap::named_of_type::<u64>("Mutex", "savings");
    assert_eq!(
        (named.class_name(), named.is_named()),
        ("savings".into(), true)
    );
    let empty = LockMap::named_of_type::<u64>("Mutex", "");
    assert_eq!(empty.name(), "Mutex", "an empty name is no name");
    lock(&named);
    let held = lockdep::held_locks();
    assert_eq!(
        (held[0].class_name.as_str(), held[0].name),
        ("savings", Some("savings"))
    );
    unlock(&named);
}

#[test]
fn named_and_unnamed_maps_of_one_site_and_type_share_a_class() {
    let _h = start();
    let maps: Vec<LockMap> = ["a", ""]
        .iter()
        .map(|n| LockMap::named_of_type::<u32>("Mutex", n))
        .collect();
    let class = |m: &LockMap| {
        lock(m);
        let c = lockdep::held_locks()[0].class;
        unlock(m);
        c
    };
    assert_eq!(class(&maps[0]), class(&maps[1]));
    // The class is named after the map that created it.
    lock(&maps[1]);
    let held = lockdep::held_locks();
    assert_eq!((held[0].class_name.as_str(), held[0].name), ("a", None));
    unlock(&maps[1]);
    assert_reports!();
}

/// A key change keeps a map's label what it was, a name or a kind: an unnamed map stays
/// unnamed (reports read it by its kind and class), a named one keeps its name.
#[test]
fn a_key_change_keeps_a_map_named_or_unnamed() {
    let _h = start();
    static KEY: lockdep::LockClassKey = lockdep::LockClassKey::new();
    let mut unnamed = LockMap::of_type::<u64>("Mutex");
    assert!(!unnamed.is_named());
    unnamed.set_key(&KEY);
    assert!(!unnamed.is_named(), "a kind is not a name");
    assert_eq!(unnamed.name(), "Mutex");
    let key = lockdep::DynamicKey::new("dynamic");
    unnamed.set_dynamic_key(&key);
    assert!(!unnamed.is_named());
    let mut named = LockMap::new("N");
    named.set_key(&KEY);
    assert!(named.is_named());
    assert_eq!(named.name(), "N");
    named.set_dynamic_key(&key);
    assert!(named.is_named());
    assert_reports!();
}

/// Maps with neither a name nor a construction site read as their key in reports, never as
/// an empty name: two such classes are told apart.
#[test]
fn a_class_with_no_name_and_no_site_reads_as_its_key() {
    let _h = start();
    static K1: lockdep::LockClassKey = lockdep::LockClassKey::new();
    static K2: lockdep::LockClassKey = lockdep::LockClassKey::new();
    let (a, b) = (LockMap::with_key("", &K1), LockMap::with_key("", &K2));
    let (a, b): (&'static LockMap, &'static LockMap) =
        (Box::leak(Box::new(a)), Box::leak(Box::new(b)));
    pair(a, b);
    pair(b, a);
    let r = take();
    assert_eq!(r.len(), 1, "{r:#?}");
    let text = r[0].to_string();
    assert!(text.contains(&format!("key@{:p}", &K1)), "{text}");
    assert!(text.contains(&format!("key@{:p}", &K2)), "{text}");
    assert!(!text.contains("()"), "{text}");
}

/// Reports about a map itself (an assertion, a release of a lock not held) name an unnamed
/// map as its class reads (`kind<type>@file:line`), not by its bare kind, which every unnamed
/// lock of that kind shares.
#[test]
fn reports_about_an_unnamed_map_name_it_as_its_class() {
    let _h = start();
    let m = LockMap::of_type::<u64>("Mutex");
    lockdep::assert_held(&m);
    let line = line!() - 2;
    let expect = format!("Mutex<u64>@lockdep/tests/classes.rs:{line}");
    let r = take();
    assert!(
        matches!(&r[..], [Report::AssertionFailed { lock, .. }] if *lock == expect),
        "{r:#?}"
    );
    unlock(&m);
    let r = take();
    assert!(
        matches!(&r[..], [Report::BadUnlockBalance { releasing, .. }] if releasing.class_name == expect),
        "{r:#?}"
    );
    assert_reports!();
}
