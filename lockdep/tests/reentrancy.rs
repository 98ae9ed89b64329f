//! Report delivery is re-entrancy safe: a report handler may lock (the lock operations are
//! tracked, and a report they make is handed to the handler after it returns, never from
//! inside it), panic, allocate, log and call back into lockdep, and the validator stays
//! exact. Then the re-entrancy of logging and tracing callbacks (scenarios after tokio-rs/
//! tracing #2635, #3269, delta-io/delta-kernel-rs #2547): a small tracing-like dispatcher
//! whose layers call user code while holding their own instrumented locks.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use lockdep::{LockMap, Mode, Policy, Report};

/// A report collector shared with a handler.
#[derive(Clone, Default)]
struct Got(Arc<Mutex<Vec<Report>>>);

impl Got {
    fn push(&self, r: &Report) {
        self.0.lock().unwrap().push(r.clone());
    }
    fn take(&self) -> Vec<Report> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn set_handler(f: impl Fn(&Report) + Send + Sync + 'static) {
    lockdep::set_policy(Policy::Callback(Arc::new(f)));
}

fn recursive_on(r: &Report, name: &str) -> bool {
    matches!(r, Report::RecursiveLocking(s) if s.acquiring.class_name == name)
}

/// The handler takes a lock its thread already holds: the handler's acquisition is itself a
/// report. Before, that report called the handler again, without end, until the stack
/// overflowed (the process aborted). Now it is handed to the handler once, after it returned,
/// and the held stack stays exact.
#[test]
fn a_handler_that_takes_a_lock_the_reporting_thread_holds() {
    let _h = start();
    let (log, x) = (new_lock("Log"), new_lock("X"));
    let got = Got::default();
    let g = got.clone();
    set_handler(move |r| {
        lock(log);
        g.push(r);
        unlock(log);
    });
    lock(log); // the reporting thread holds the handler's lock
    lock(x);
    lock(x); // reported; the handler re-takes Log
    assert_eq!(lockdep::held_count(), 3, "Log, X, X");
    let r = got.take();
    assert_eq!(r.len(), 2, "{r:#?}");
    assert!(recursive_on(&r[0], "X"));
    assert!(
        recursive_on(&r[1], "Log"),
        "the handler's own lock is validated"
    );
    unlock(x);
    unlock(x);
    unlock(log);
    assert_eq!(lockdep::held_count(), 0);
    assert_reports!();
}

/// A handler that keeps causing new deliveries (every repeat asked for) ends: at most 64
/// handler-caused reports per delivery, the rest counted.
#[test]
fn a_handler_that_keeps_causing_reports_is_bounded() {
    let _h = start();
    let (log, x) = (new_lock("Log"), new_lock("X"));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    set_handler(move |_| {
        c.fetch_add(1, Ordering::Relaxed);
        lock(log);
        unlock(log);
    });
    lockdep::set_report_repeats(true);
    let dropped = lockdep::stats().reports_dropped;
    lock(log);
    lock(x);
    lock(x);
    lockdep::set_report_repeats(false);
    assert_eq!(calls.load(Ordering::Relaxed), 1 + 64);
    assert_eq!(lockdep::stats().reports_dropped - dropped, 1);
    assert_eq!(lockdep::held_count(), 3);
    unlock(x);
    unlock(x);
    unlock(log);
}

/// A handler that panics: the panic comes out of the lock operation that made the report
/// (which does not take effect), after the reports its own lock operations made were
/// delivered; the thread is not left "delivering", and later reports are delivered.
#[test]
fn a_panicking_handler_does_not_lose_the_validator() {
    let _h = start();
    let (log, x, y) = (new_lock("Log"), new_lock("X"), new_lock("Y"));
    let got = Got::default();
    let g = got.clone();
    let first = Arc::new(AtomicUsize::new(0));
    set_handler(move |r| {
        g.push(r);
        if first.fetch_add(1, Ordering::Relaxed) == 0 {
            lock(log); // Log is held: a report, queued
            unlock(log);
            panic!("handler panic");
        }
    });
    lock(log);
    lock(x);
    let r = catch_unwind(|| lock(x));
    let msg = r.expect_err("the handler's panic propagates");
    assert_eq!(msg.downcast_ref::<&str>(), Some(&"handler panic"));
    assert_eq!(
        lockdep::held_count(),
        2,
        "the reported acquisition did not take effect"
    );
    let r = got.take();
    assert_eq!(r.len(), 2, "{r:#?}");
    assert!(recursive_on(&r[0], "X"));
    assert!(recursive_on(&r[1], "Log"), "the queued report was not lost");
    // The next report on this thread is delivered, from a normal (not nested) delivery.
    lock(y);
    lock(y);
    assert!(recursive_on(&got.take()[0], "Y"));
    // No lock of the validator is poisoned: everything still works.
    let _ = lockdep::stats();
    let _ = lockdep::dependencies();
    for _ in 0..3 {
        unlock(y);
    }
    unlock(x);
    unlock(log);
    assert_eq!(lockdep::held_count(), 0);
    assert_eq!(got.take().len(), 1, "the third unlock of Y");
}

/// A handler may allocate, log, and call back into lockdep, including the slow paths that
/// take the graph lock and the key table (it runs with no validator lock held).
#[test]
fn a_handler_may_allocate_log_and_call_into_lockdep() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    let seen = Got::default();
    let s = seen.clone();
    set_handler(move |r| {
        let text = format!("{r}");
        eprintln!("handler saw a report of {} bytes", text.len());
        let held = lockdep::held_locks();
        assert_eq!(held.len(), 1, "the reporting thread's held lock, B");
        let stats = lockdep::stats();
        assert!(stats.classes >= 2);
        assert!(!lockdep::dependencies().is_empty());
        assert!(lockdep::dot().contains("digraph"));
        // Register and unregister a key: graph lock and a hazard-pointer grace period.
        let key = lockdep::DynamicKey::new("handler key");
        let m = LockMap::with_dynamic_key("handler lock", &key);
        lock(&m);
        unlock(&m);
        drop(m);
        drop(key);
        let _ = lockdep::summary();
        s.push(r);
    });
    pair(a, b);
    lock(b);
    lock(a);
    unlock(a);
    unlock(b);
    let r = seen.take();
    assert!(
        matches!(r.as_slice(), [Report::CircularDependency(_)]),
        "{r:#?}"
    );
}

/// Deliveries are per thread: while one thread's handler runs, another thread's reports are
/// delivered normally (to the handler, on that thread).
#[test]
fn another_threads_report_is_delivered_while_a_handler_runs() {
    let _h = start();
    let (x, y) = (new_lock("X"), new_lock("Y"));
    let got = Got::default();
    let g = got.clone();
    set_handler(move |r| {
        g.push(r);
        if recursive_on(r, "X") {
            on_thread(move || {
                lock(y);
                lock(y);
            });
        }
    });
    lock(x);
    lock(x);
    let r = got.take();
    assert!(recursive_on(&r[0], "X"));
    assert!(recursive_on(&r[1], "Y"), "{r:#?}");
    assert!(matches!(r[2], Report::LockHeldAtExit { .. }));
    unlock(x);
    unlock(x);
}

// ------------------------------------------------------------------------------------------
// Re-entrancy through logging and tracing callbacks: a small tracing-like dispatcher.

/// A mutex instrumented the way a lock wrapper does it: validated before it may block.
struct TMutex<T> {
    map: LockMap,
    inner: Mutex<T>,
}

struct TGuard<'a, T> {
    map: &'a LockMap,
    inner: std::sync::MutexGuard<'a, T>,
}

impl<T> TMutex<T> {
    #[track_caller]
    fn new(name: &'static str, v: T) -> Self {
        TMutex {
            map: LockMap::new(name),
            inner: Mutex::new(v),
        }
    }

    #[track_caller]
    fn lock(&self) -> TGuard<'_, T> {
        let site = Location::caller();
        lockdep::acquire(&self.map, 0, Mode::Exclusive, false, None, site);
        TGuard {
            map: &self.map,
            inner: self.inner.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl<T> Drop for TGuard<'_, T> {
    fn drop(&mut self) {
        lockdep::release_guard(self.map);
    }
}

/// A reader-writer lock instrumented the same way (`read` may queue behind a writer).
struct TRwLock<T> {
    map: LockMap,
    inner: std::sync::RwLock<T>,
}

impl<T> TRwLock<T> {
    #[track_caller]
    fn new(name: &'static str, v: T) -> Self {
        TRwLock {
            map: LockMap::new(name),
            inner: std::sync::RwLock::new(v),
        }
    }

    #[track_caller]
    fn write(&self) -> (Held<'_>, std::sync::RwLockWriteGuard<'_, T>) {
        lockdep::acquire(
            &self.map,
            0,
            Mode::Exclusive,
            false,
            None,
            Location::caller(),
        );
        let h = Held(&self.map);
        (h, self.inner.write().unwrap_or_else(|e| e.into_inner()))
    }

    #[track_caller]
    fn read(&self) -> (Held<'_>, std::sync::RwLockReadGuard<'_, T>) {
        self.read_as(Mode::Read, Location::caller())
    }

    /// A reader that does not queue behind a waiting writer (parking_lot's
    /// `read_recursive`): it may nest on one thread.
    #[track_caller]
    fn read_recursive(&self) -> (Held<'_>, std::sync::RwLockReadGuard<'_, T>) {
        self.read_as(Mode::RecursiveRead, Location::caller())
    }

    fn read_as(
        &self,
        mode: Mode,
        site: &'static Location<'static>,
    ) -> (Held<'_>, std::sync::RwLockReadGuard<'_, T>) {
        lockdep::acquire(&self.map, 0, mode, false, None, site);
        let h = Held(&self.map);
        (h, self.inner.read().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Releases in lockdep when it drops (declared first, so it drops after the real guard).
struct Held<'a>(&'a LockMap);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        lockdep::release_guard(self.0);
    }
}

/// An event's field: its `Debug` is user code that may log.
type Field = Box<dyn Fn(&Dispatch) -> String + Send + Sync>;

/// A layer of the dispatcher: called for every event.
trait Layer: Send + Sync {
    fn on_event(&self, d: &Dispatch, msg: &str, fields: &[Field]);
}

/// The dispatcher: its layers (D) and the span extensions (X) they share.
struct Dispatch {
    layers: TRwLock<Vec<Box<dyn Layer>>>,
    extensions: TRwLock<Vec<String>>,
    /// A recursion guard, as `tracing`'s scoped dispatcher has: a nested event is dropped.
    guarded: bool,
}

thread_local! {
    static IN_EVENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Dispatch {
    fn new(guarded: bool) -> Dispatch {
        Dispatch {
            layers: TRwLock::new("dispatcher list", Vec::new()),
            extensions: TRwLock::new("span extensions", Vec::new()),
            guarded,
        }
    }

    /// `event!`: every layer sees the event.
    fn event(&self, msg: &str, fields: &[Field]) {
        if self.guarded && IN_EVENT.with(|f| f.replace(true)) {
            return; // the nested event is dropped
        }
        {
            // Events nest (a layer's user code logs), so the list is read recursively.
            let (_held, layers) = self.layers.read_recursive();
            for l in layers.iter() {
                l.on_event(self, msg, fields);
            }
        }
        if self.guarded {
            IN_EVENT.with(|f| f.set(false));
        }
    }

    /// `rebuild_interest`-style update of the layer list: old layers are dropped under the
    /// write lock.
    fn replace_layers(&self, new: Vec<Box<dyn Layer>>) {
        let (_held, mut layers) = self.layers.write();
        *layers = new; // drops the old layers here
    }
}

/// A formatting layer with a buffer lock (B), as `tracing-tree` has.
struct Fmt {
    bufs: TMutex<String>,
}

impl Layer for Fmt {
    fn on_event(&self, d: &Dispatch, msg: &str, fields: &[Field]) {
        let mut buf = self.bufs.lock();
        buf.inner.push_str(msg);
        for f in fields {
            let s = f(d); // user code, under the buffer lock
            buf.inner.push_str(&s);
        }
    }
}

/// A layer that records into the span extensions with a visitor.
struct Ext;

impl Layer for Ext {
    fn on_event(&self, d: &Dispatch, msg: &str, fields: &[Field]) {
        if msg == "nested" {
            // The nested event needs a read of the extensions.
            let (_held, ext) = d.extensions.read();
            let _ = ext.len();
            return;
        }
        let (_held, mut ext) = d.extensions.write();
        for f in fields {
            let s = f(d); // the visitor: user code, under the write lock
            ext.push(s);
        }
    }
}

/// A layer whose `Drop` logs.
struct LogsOnDrop;

impl Layer for LogsOnDrop {
    fn on_event(&self, _: &Dispatch, _: &str, _: &[Field]) {}
}

/// Runs `f` in a test scope (so the first report panics before a real lock can block) and
/// returns the reports the harness collected.
fn scenario(f: impl FnOnce()) -> Vec<Report> {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let scope = lockdep::test_scope();
        f();
        scope.take_reports();
    }));
    let reports = take();
    if !reports.is_empty() {
        assert!(r.is_err(), "a report in a test scope panics");
    }
    reports
}

fn one_recursive(r: &[Report], name: &str) -> (u32, u32) {
    match r {
        [Report::RecursiveLocking(s)] if s.acquiring.class_name == name => {
            assert_eq!(s.holding.instance, s.acquiring.instance);
            (s.holding.site.line(), s.acquiring.site.line())
        }
        _ => panic!("expected one recursive locking of {name}, got {r:#?}"),
    }
}

/// (a) on_event holds the buffer lock B and formats a field whose `Debug` logs: the nested
/// event locks B again. Reported before blocking, naming the outer and the nested site
/// (both in `on_event`).
#[test]
fn reentrancy_a_a_field_debug_impl_logs_under_the_layer_buffer_lock() {
    let _h = start();
    let d = Dispatch::new(false);
    d.replace_layers(vec![Box::new(Fmt {
        bufs: TMutex::new("layer buffers", String::new()),
    })]);
    let r = scenario(|| {
        let logs: Field = Box::new(|d: &Dispatch| {
            d.event("nested", &[]);
            String::from("field")
        });
        d.event("outer", &[logs]);
    });
    let (outer, nested) = one_recursive(&r, "layer buffers");
    assert_eq!(outer, nested, "both acquisitions are the lock in on_event");
}

/// (b) the extensions layer holds X for writing and runs a visitor that logs; the nested
/// event reads X: write then read on one thread.
#[test]
fn reentrancy_b_a_visitor_logs_under_the_span_extensions_write_lock() {
    let _h = start();
    let d = Dispatch::new(false);
    d.replace_layers(vec![Box::new(Ext)]);
    let r = scenario(|| {
        let visitor: Field = Box::new(|d: &Dispatch| {
            d.event("nested", &[]);
            String::from("visited")
        });
        d.event("outer", &[visitor]);
    });
    let r = r.as_slice();
    one_recursive(r, "span extensions");
    let Report::RecursiveLocking(s) = &r[0] else {
        unreachable!()
    };
    assert_eq!(
        (s.holding.mode, s.acquiring.mode),
        (Mode::Exclusive, Mode::Read)
    );
}

/// (c) the layer list D is write-locked while old layers are dropped; a layer's `Drop` logs,
/// and the event reads D.
#[test]
fn reentrancy_c_a_layer_logs_in_drop_under_the_dispatcher_list_write_lock() {
    let _h = start();
    let d = Arc::new(Dispatch::new(false));
    struct Logging(Arc<Dispatch>);
    impl Drop for Logging {
        fn drop(&mut self) {
            self.0.event("layer dropped", &[]);
        }
    }
    impl Layer for Logging {
        fn on_event(&self, _: &Dispatch, _: &str, _: &[Field]) {}
    }
    d.replace_layers(vec![Box::new(Logging(d.clone()))]);
    let r = scenario(|| d.replace_layers(vec![Box::new(LogsOnDrop)]));
    one_recursive(&r, "dispatcher list");
    let Report::RecursiveLocking(s) = &r[0] else {
        unreachable!()
    };
    assert_eq!(
        (s.holding.mode, s.acquiring.mode),
        (Mode::Exclusive, Mode::RecursiveRead)
    );
    // The layer whose drop was interrupted is gone; break the Arc cycle of the test.
    d.replace_layers(Vec::new());
}

/// (d) as (b), but the dispatcher's recursion guard drops the nested event: nothing is
/// acquired twice, nothing is reported.
#[test]
fn reentrancy_d_a_recursion_guard_drops_the_nested_event() {
    let _h = start();
    let d = Dispatch::new(true);
    d.replace_layers(vec![Box::new(Ext)]);
    let r = scenario(|| {
        let visitor: Field = Box::new(|d: &Dispatch| {
            d.event("nested", &[]);
            String::from("visited")
        });
        d.event("outer", &[visitor]);
    });
    assert!(r.is_empty(), "{r:#?}");
    assert_eq!(lockdep::held_count(), 0);
}

/// (e) a cycle report whose handler logs through an instrumented logger (lock L; unlock L):
/// delivered exactly once, no crash, no hang; L is validated normally (the dependency from
/// the held B to L is recorded) and never re-enters reporting.
#[test]
fn reentrancy_e_a_report_handler_logs_through_an_instrumented_logger() {
    let _h = start();
    let logger = Arc::new(TMutex::new("logger", Vec::<String>::new()));
    let got = Got::default();
    let (g, l) = (got.clone(), logger.clone());
    set_handler(move |r| {
        l.lock().inner.push(r.to_string());
        g.push(r);
    });
    let (a, b) = (TMutex::new("A", ()), TMutex::new("B", ()));
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    {
        let _gb = b.lock();
        let _ga = a.lock(); // the cycle
    }
    let r = got.take();
    assert!(
        matches!(r.as_slice(), [Report::CircularDependency(_)]),
        "{r:#?}"
    );
    assert_eq!(logger.lock().inner.len(), 1);
    assert!(lockdep::dependencies()
        .iter()
        .any(|d| d.from == "B" && d.to == "logger"));
    assert_eq!(lockdep::held_count(), 0);
}
