//! Constructors: every lock is `const` to build (statics, `const fn` constructors, the
//! `const_*` functions), and a lock built in a constant still gets its class from its
//! construction site and type, looked up at the first acquisition.

mod common;

use common::{assert_reports, start};
use instrumented_locks::raw::{RawFairMutex, RawMutex, RawRwLock, RawThreadId};
use instrumented_locks::{
    const_fair_mutex, const_mutex, const_reentrant_mutex, const_rwlock, std_sync, Condvar,
    FairMutex, Mutex, ReentrantMutex, RwLock,
};
use lock_api::{GetThreadId, RawMutex as _, RawRwLock as _};
#[cfg(feature = "validate")]
use lockdep::Report;

static M: Mutex<u32> = Mutex::new(1);
static F: FairMutex<u32> = const_fair_mutex(2);
static L: RwLock<u32> = const_rwlock(3);
static R: ReentrantMutex<u32> = const_reentrant_mutex(4);
static CV: Condvar = Condvar::new();
static STD: std_sync::Mutex<u32> = std_sync::Mutex::new(5);
static STD_RW: std_sync::RwLock<u32> = std_sync::RwLock::new(6);
static STD_CV: std_sync::Condvar = std_sync::Condvar::new();
static NAMED: Mutex<u32> = Mutex::named(7, "named static");

/// A user type with a `const fn` constructor, as in code written for parking_lot.
struct Registry {
    first: Mutex<u32>,
    second: Mutex<u32>,
    raw_built: RwLock<u32>,
    fair: FairMutex<u32>,
    reentrant: ReentrantMutex<u32>,
}

impl Registry {
    const fn new() -> Registry {
        Registry {
            first: const_mutex(0),
            second: Mutex::new(0),
            raw_built: RwLock::from_raw(RawRwLock::INIT, 0),
            fair: FairMutex::const_new(RawFairMutex::INIT, 0),
            reentrant: ReentrantMutex::const_new(RawMutex::INIT, RawThreadId::INIT, 0),
        }
    }
}

static REGISTRY: Registry = Registry::new();

#[test]
fn statics_work() {
    let _h = start();
    assert_eq!(
        (*M.lock(), *F.lock(), *L.read(), *R.lock(), *NAMED.lock()),
        (1, 2, 3, 4, 7)
    );
    assert_eq!(*STD.lock().unwrap() + *STD_RW.read().unwrap(), 11);
    assert_eq!((CV.notify_all(), STD_CV.notify_one()), (0, ()));
    let local = Registry::new();
    assert_eq!(
        *local.raw_built.write() + *local.fair.lock() + *local.reentrant.lock(),
        0
    );
    assert_eq!(*REGISTRY.first.lock() + *REGISTRY.second.lock(), 0);
    assert!(RawThreadId.nonzero_thread_id().get() != 0);
    assert_reports!();
}

/// The statics' classes are real: taking two of them in both orders is a cycle.
#[cfg(feature = "validate")]
#[test]
fn statics_are_validated() {
    let _h = start();
    {
        let _m = M.lock();
        let _f = F.lock();
    }
    {
        let _f = F.lock();
        let _m = M.lock();
    }
    let r = assert_reports!(Report::CircularDependency(_));
    let classes = r[0].cycle_classes().join(" ");
    assert!(
        classes.contains("Mutex<u32>@") && classes.contains("constructors.rs:"),
        "unnamed statics read as kind, type and site: {classes}"
    );
}

/// Two locks built on two lines of one `const fn` are two classes (two sites), so nesting
/// them in both orders is a cycle, not same-class nesting; the class is the `const fn`'s
/// line, the same for every `Registry`.
#[cfg(feature = "validate")]
#[test]
fn const_fn_constructors_give_each_line_a_class() {
    let _h = start();
    {
        let _a = REGISTRY.first.lock();
        let _b = REGISTRY.second.lock();
    }
    {
        let _b = REGISTRY.second.lock();
        let _a = REGISTRY.first.lock();
    }
    assert_reports!(Report::CircularDependency(_));
    let local = Registry::new();
    {
        let _a = local.second.lock();
        let _b = REGISTRY.first.lock();
    }
    // The same classes: `local`'s locks were built on the same lines.
    assert_reports!();
    assert_eq!(
        *local.raw_built.write() + *local.fair.lock() + *local.reentrant.lock(),
        0
    );
    assert!(RawThreadId.nonzero_thread_id().get() != 0);
}

/// A constructor passed as a function value gets std's call as its site (`#[track_caller]`
/// stops there): every lock of the type made that way is one class, and a report about it
/// says so and how to give the site a class of its own. A closure's call has a site of its
/// own.
#[cfg(feature = "validate")]
#[test]
fn constructors_passed_as_function_values_are_one_class_and_reports_say_why() {
    let _h = start();
    let class_of = |m: &Mutex<u32>| {
        let _g = m.lock();
        lockdep::held_locks().pop().expect("held").class_name
    };
    let shards: Vec<Mutex<u32>> = [1, 2].into_iter().map(Mutex::new).collect();
    let elsewhere: Vec<Mutex<u32>> = [3].into_iter().map(Mutex::new).collect();
    assert_eq!(class_of(&shards[0]), class_of(&elsewhere[0]));
    assert!(class_of(&shards[0]).starts_with("Mutex<u32>@library/core/src/"));
    // Two instances of the one class in both orders: the default nesting rule's cycle.
    for (a, b) in [(0, 1), (1, 0)] {
        let _a = shards[a].lock();
        let _b = shards[b].lock();
    }
    let r = assert_reports!(Report::CircularDependency(_));
    let text = r[0].to_string();
    assert!(
        text.contains("Mutex<u32>@library/core/src/")
            && text.contains("has its construction site in the\n standard library"),
        "{text}"
    );
    assert!(text.contains("`.map(|v| Mutex::new(v))`"), "{text}");
    // Closures: each closure's line is a site, so a class, of its own.
    let by_closure: Vec<Mutex<u32>> = [1].into_iter().map(|v| Mutex::new(v)).collect();
    let other_closure: Vec<Mutex<u32>> = [2].into_iter().map(|v| Mutex::new(v)).collect();
    let (c1, c2) = (class_of(&by_closure[0]), class_of(&other_closure[0]));
    assert_ne!(c1, c2);
    assert!(c1.contains("tests/constructors.rs:"), "{c1}");
    assert_reports!();
}
