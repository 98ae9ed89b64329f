//! A userspace lock-order validator: a port of the Linux kernel's lockdep.
//!
//! Lockdep reports *possible* deadlocks the first time the pieces of one are seen, without the
//! deadlock having to happen: it learns the order in which lock **classes** are taken
//! ("held-before" dependencies) and reports an acquisition that would close a cycle, locks
//! taken recursively, and misuse of the locking API.
//!
//! # The contract for lock wrappers
//!
//! A lock embeds a [`LockMap`] and calls, for every lock operation:
//!
//! | operation | call |
//! |---|---|
//! | blocking lock / write / read | [`acquire`]`(map, subclass, mode, false, nest_lock, site)` **before** it may block, then the real lock |
//! | successful try-lock | the real try-lock, then, only if it succeeded, [`acquire`]`(.., trylock = true, ..)` |
//! | a blocking lock that gave up (timeout, error) | [`release`]`(map, site)` |
//! | unlock by an explicit call | [`release`]`(map, site)`, in any order |
//! | unlock by guard drop | [`release_guard`]`(map)` (or [`release`] with [`guard_drop_site`]), in any order; a guard that knows its mode: [`release_mode`]`(map, mode, guard_drop_site())` |
//! | condvar wait | [`release`] before waiting, [`acquire`] (not trylock) before re-locking; with condvar tracking, [`condvar_wait`] in between and [`condvar_notify`] on notify; [`condvar_sleep`] just before parking and [`condvar_woken`] once the mutex is re-locked without waiting (a re-lock that waits: [`lock_contended`], [`lock_acquired`]), so that other threads see the sleeper as not holding the mutex |
//! | write guard downgraded to read (or to upgradable) | [`set_held_mode`]`(map, Mode::Read)` (`Mode::Upgradable`); a guard that knows its mode: [`change_held_mode`]`(map, from, to)` |
//! | blocking upgrade of an upgradable read | [`upgrade`]`(map, site)` **before** it may block |
//! | successful `try_upgrade` | [`set_held_mode`]`(map, Mode::Exclusive)` |
//! | a lock the validator must not check | [`LockMap::novalidate`] |
//! | a guard moved to another thread | [`detach`] on the old thread, [`DetachedLock::attach`] on the new one |
//! | lock destroyed or re-initialised | automatic when the [`LockMap`] drops; [`LockMap::reinit`]; if the raw lock is still locked, [`check_held_lock_freed`] first (other threads' holders) |
//! | a blocking acquisition that must wait (the raw try failed) | [`lock_contended`] before blocking, [`lock_acquired`] after |
//! | a guard released on another thread than its acquirer | [`current_holder`] when acquiring, [`release_from`] (a guard that knows its mode: [`release_from_mode`]) when releasing; [`set_guards_movable`] |
//! | force-unlock of a forgotten guard's lock (any thread) | [`force_release`] while the raw lock is locked, [`release`] (a bad unlock balance) if it is not |
//! | async lock (a future that may wait) | [`task_acquire`] before the lock's future is first polled, [`task_release`] with its token on release or cancellation, [`task_set_held_mode`] for a downgrade |
//! | a poll of a task (an executor's, or an instrumented future's) | [`TaskContext::enter`] before, [`PollScope::exit`]`(pending)` after |
//!
//! `mode` is [`Mode::Exclusive`] for `Mutex::lock` and `RwLock::write`, [`Mode::Read`] for a
//! reader that may queue behind a waiting writer (`RwLock::read`),
//! [`Mode::RecursiveRead`] for `read_recursive`, and [`Mode::Upgradable`] for
//! `upgradable_read`. Build the map with a `const` constructor in the lock's `const fn new`:
//! [`LockMap::of_type`]`::<T>("Mutex")` (unnamed) or [`LockMap::named_of_type`], both
//! `#[track_caller]`, so the class is the user's construction site and the protected type. `subclass` (0..[`MAX_SUBCLASSES`]) and
//! `nest_lock` are the kernel's `*_lock_nested()` and `*_lock_nest_lock()` annotations.
//! `site` is the source location a report names for the operation; it is only displayed. Pass
//! `Location::caller()` from `#[track_caller]` wrapper methods, so that it is the user's call
//! (`lock()`, an explicit `unlock()`). A guard's `Drop::drop` cannot be `#[track_caller]`, so
//! the place where a guard went out of scope is unknown: release it with [`release_guard`],
//! and reports show "(guard drop)" and the site that acquired the lock, never a line of the
//! wrapper.
//!
//! A report is delivered before `acquire` returns, i.e. before the real lock can block, so a
//! self-deadlock is reported instead of hanging. With [`Policy::Panic`] the panic happens
//! before the lock is marked held.
//!
//! # Reports and the policy
//!
//! The [`Policy`] says where a [`Report`] goes: printed to standard error ([`Policy::Stderr`],
//! the default), a panic of the thread that made it ([`Policy::Panic`]), or a callback
//! ([`Policy::Callback`]).
//!
//! - **Deduplicated**: each distinct report (its kind, and the classes, sites and modes it is
//!   about; for a cycle, its set of classes) is printed or handed to the callback once; a
//!   repeat is counted ([`Stats::repeats_suppressed`], per kind), and when repeats were
//!   suppressed the process prints a [`summary`] line at exit ("3 distinct reports, 99,997
//!   repeats suppressed"; [`print_summary`] prints it on request).
//!   [`set_report_repeats`]`(true)` delivers every occurrence. Deduplication is about output:
//!   [`Policy::Panic`] and a [`test_scope`] panic at every occurrence.
//! - **A repeat costs little**: a thread that takes a reported order again and again (a
//!   true positive not fixed yet, or a suppressed one), or a task that keeps holding a
//!   blocking lock across an `.await`, validates it twice; from then on it
//!   counts each occurrence exactly as the validation would, without the graph lock, while
//!   nothing the verdict depends on changed (a dependency recorded or zapped anywhere, a
//!   suppression declared, a reset, the policy, a test scope, the repeats switch). Measured on
//!   an Intel Xeon: 0.11 µs an occurrence where the whole validation took 0.75 µs (1.9 µs with
//!   two threads queueing on the graph lock, 0.33 µs now).
//! - **Visible under `cargo test`**: [`Policy::Stderr`] writes to the standard-error
//!   descriptor directly, one write per report, so the test harness (which captures
//!   `eprintln!`) does not hide reports of passing tests, and two reports never interleave.
//! - **Re-entrancy safe**: a callback runs with no validator lock held and may lock (its lock
//!   operations are tracked and validated), allocate, log, call back into lockdep or panic. A
//!   report its own lock operations make is printed at once and handed to it after it
//!   returned, never from inside it; a panicking callback leaves the validator as it was.
//! - **Suppressible, narrowly**: a report that a declared suppression matches is counted and
//!   goes no further (see below).
//!
//! # Suppressions
//!
//! A suppression silences one proven-safe pattern without turning the validator off: reports
//! about *exactly* the lock classes it names, optionally only of one kind and only where the
//! classes were acquired at given sites. Prefer the annotations that let the validator check
//! the claim instead (a subclass, a nest_lock, [`Nesting::InstanceOrder`], a class of its own
//! per lock); suppress what only a proof outside the program makes safe, with that proof as
//! its reason. (Suppression files are the sanitizers' idea, e.g. ThreadSanitizer's; these
//! match reports by what they are about, never by a pattern.)
//!
//! **Declared** in code, [`suppress`]`(`[`Suppression`]`::pair("accounts", "ledger")
//! .kind(ReportKind::CircularDependency).reason("…"))`, with classes named by a [`ClassRef`]:
//! by class name exactly as reports print it ([`ClassRef::name`], or a `&str`), by static
//! key ([`ClassRef::key`], or a `&'static LockClassKey`), by dynamic key
//! (`ClassRef::from(&key)`, matched by the key's identity), or by construction site
//! ([`ClassRef::constructed_at`]: every class of locks built on that line), each optionally
//! [`acquired_at`](ClassRef::acquired_at) a site; on a static key itself, in its `static`
//! ([`LockClassKey::suppress_nesting`], [`suppress_recursive`](LockClassKey::suppress_recursive),
//! [`suppress_cycles`](LockClassKey::suppress_cycles), for reports about that key's classes
//! only); or in a file, [`load_suppressions`]`(path)` or the one named by the environment
//! variable [`SUPPRESSIONS_ENV`] (`LOCKDEP_SUPPRESSIONS=lockdep.supp`), read once, before the
//! first report is checked:
//!
//! ```text
//! # accounts and the ledger: ledger -> accounts runs only in the start-up audit, before any
//! # worker thread exists (the reason is this comment block, or a comment after the line).
//! circular: accounts -> ledger
//! nesting: Mutex<Node>@src/tree.rs:12 at src/tree.rs:40   # parent before child
//! circular: @src/pool.rs:20 at src/pool.rs:57 -> registry
//! any: "fn() -> u8" -> stats
//! await: config at src/config.rs:31   # read once at start-up, on a current-thread runtime
//! ```
//!
//! One suppression a line, `<kind>: <class> [-> <class> ...]`, with `#` comments and blank
//! lines. `<kind>` is `circular` ([`Report::CircularDependency`]), `recursive`
//! ([`Report::RecursiveLocking`]), `nesting` ([`Report::MissingNestingAnnotation`]),
//! `await` ([`Report::HeldAcrossAwait`], one class: the blocking lock held across the
//! `.await`) or `any` (any of those, for a line of two classes or more). A `<class>` is a
//! class name as reports print it (`accounts`, `Mutex<u64>@src/bank.rs:12`, `tree/1` for
//! subclass 1; in double quotes, with `\"` and `\\`, if it contains `->`, ` at `, `#` or a
//! quote, or starts with `@`), or `@file:line` for the classes of locks constructed there,
//! named or not, of any type (classes of keys have no construction site);
//! ` at file:line[:column]` restricts it to where it was acquired. The file of a site
//! matches a recorded path that equals it or ends with `/file` (`src/bank.rs`, or a registry
//! crate's `tokio-1.54.1/src/x.rs` as reports show it). A `*` in a longer name is compared
//! literally (`Mutex<*const u8>@…`); a name `*` is refused. A bad line is an error naming
//! the file and the line number ([`SuppressionFileError`]; for the environment's file,
//! printed once to standard error) and is skipped; the other lines count.
//!
//! **Matching** is by what the report is about, its *ends*: for a cycle, both classes of every
//! dependency on it, each with the site where it was acquired; for recursive locking and a
//! missing nesting annotation, the held lock and the one being acquired; for a blocking lock
//! held across an `.await`, that lock where it was acquired. A suppression
//! matches when its kind (if any) is the report's, every end's class is one of its classes,
//! and each of its classes is an end (at its site, if it names one). So `circular: a -> b`
//! does not match a cycle `a -> b -> c`, and a suppression at one site does not hide the
//! same classes nested at another. A cycle's classes are compared as a set (the arrows are
//! for reading), as cycles are deduplicated by their set of classes.
//!
//! **Never broad**: there are no wildcards. A suppression names at least two classes, or one
//! class and a kind ([`SuppressionError`] otherwise: no class, a `*`, one class without a
//! kind, or a kind that is a misuse of the API or a limit, such as a bad unlock, which no
//! proof makes safe). A pattern that matches "everything in this module" hides the next real
//! deadlock there too.
//!
//! **Counted, and listed when stale**: a matched report is made ([`Stats::reports`]) and
//! counted for every suppression it matches ([`Stats::hits_by_suppression`],
//! [`suppressions`]), and not delivered: not printed, not handed to the callback, not a
//! distinct report nor a repeat for deduplication (the summary says "12 reports matched a
//! suppression"), not recorded by a [`test_scope`] and no panic with [`Policy::Panic`]. A
//! suppression that matched nothing ([`stale_suppressions`]) is one whose code was fixed or
//! whose classes were renamed; with [`SUPPRESSIONS_ENV`] set, they are listed at process exit
//! (`lockdep: 1 suppression never matched: line 3 of lockdep.supp: circular: a -> b`).
//! Suppressions are process-wide and stay for the life of the process, [`reset`] included.
//!
//! # The life of an acquisition
//!
//! `validate::acquire` takes the lock's data through these modules, in this order (their
//! imports point the other way: from `validate` down to plain values, see the module list in
//! `lib.rs`):
//!
//! 1. **Lock map → class** (`resolve`, `class`): the [`LockMap`] caches the class id of its
//!    subclass (`class::cached`); one load of the class's generation word
//!    (`class::generation`) says the id is still live. Otherwise the class is looked up under
//!    the graph lock (`graph_lock`) in the class table (`graph::table`), and created there if
//!    new. A [`DynamicKey`]'s registration is checked first, lock-free, by the hazard-pointer
//!    protected bucket walk of `keys::lookup`.
//! 2. **Held stack** (`thread`, `held`): the thread's held-lock stack, in a thread-local; the
//!    new entry's chain key extends the stack's (`held::entry`).
//! 3. **Chain cache** (`chain`): a chain validated before is in the thread's four-way
//!    cache, or in the global lock-free table; then the entry is pushed and `acquire` returns,
//!    with no lock taken and no shared write. The usual case (a live cached class, room on
//!    the stack, a chain head, a trylock or a hit in the thread's cache) is the fast path,
//!    `validate::acquire_fast`: inlined, with no call at all (everything else is a tail call
//!    to the general path), through a thread-local with no destructor (`thread::local`). A
//!    lock re-taken at the same depth, site and mode over the same chain below (a loop) costs
//!    less still: its slot already holds the entry, with a memo that its chain over the key
//!    below was found valid (`held::slot`'s `holds_memo`; at the bottom of the stack the
//!    entry's shown words suffice, `holds_head`), so the push stores only the depth and
//!    neither the chain key nor the cache is needed.
//! 4. **Validation** (`validate::slow` and `validate::new_chain`), under the graph lock (the
//!    section of step 1, if the class needed one: a new lock's first acquisition takes the
//!    graph lock once, see [`graph_lock_sections`]): `check_deadlock` (is the class already
//!    held? then, by the class's [`Nesting`] rule, either a report or instance pairs checked
//!    against the class's instance graph, `graph::instances`), then `check_prevs_add`: for
//!    each new dependency `prev -> next`, the strong-path search (`graph::search`) looks for
//!    a path `next ->* prev`; if there is none the dependency is recorded (`graph::table`)
//!    and the chain cached (marked if it nests a class in itself, or if a held lock may be
//!    the new lock's own instance under another class: a hit on a marked chain still looks
//!    at the held instances; the checked pairs go to the thread's `pair_cache`). A key
//!    unregistered while a lock of it is held makes the chains over that lock stale: they
//!    are forgotten (the kernel's `zap_class()` removes a zapped class's chains).
//! 5. **Report** (`report`): a problem is built into a [`Report`] (`report::build`) while the
//!    graph lock is held, and delivered (`report::delivery`: suppressions, test scope,
//!    deduplication, then the [`Policy`]) after it is released, before the entry is pushed.
//!
//! [`release`] is the reverse of step 2 (`thread::release`): the entry leaves the stack and
//! the chain keys above it are recomputed. Its fast path (`thread::release_fast`, no call)
//! pops the top entry when nothing on the stack is pinned, paired or nest-covered, and in the
//! same conditions cuts out the entry just below the top (a tuple or struct of guards drops
//! its first field first), the top moving down with its new chain key. Freed lock memory and
//! thread exit are checked in `thread` too.
//!
//! # Rules (from the kernel, and where they differ)
//!
//! - **Classes**: a lock's class comes from its construction site *and its protected type*
//!   ([`LockMap::of_type`], what wrappers use), its site alone ([`LockMap::new`]), a static
//!   [`LockClassKey`], a [`DynamicKey`], or the instance itself ([`LockMap::per_instance`],
//!   opt-in), plus the subclass. The graph is over classes, so AB/BA between *different*
//!   instances of two classes is found. The kernel's class is the init site; the type is
//!   added because Rust code often constructs every lock of a library in one generic adapter
//!   (`fn new(t: T) -> Mutex<T>` on one line): per site, all of them would be one class, and
//!   every nesting of two of them would look like recursion. The adapter is monomorphized per
//!   `T`, and so is the class. Every constructor but [`LockMap::with_dynamic_key`] and
//!   [`LockMap::per_instance`] is `const` (`static M: Mutex<_> = Mutex::new(..)`): the class
//!   is found at the first acquisition.
//! - **Names**: a named lock names its class (the first map that creates it) and itself in
//!   reports ([`LockDesc::name`]). An unnamed lock's class reads as its kind, type and site,
//!   `Mutex<u64>@src/bank.rs:12`, with type paths cut to their last segment
//!   (`Vec<Notified>`) and registry paths to the crate's directory (`tokio-1.54.1/src/x.rs`).
//!   The name is built once, when the class is created, and freed with it; a map holds only
//!   `&'static` pieces.
//! - **Two instances of one class** ([`Nesting`]): the kernel reports any nesting of two
//!   instances of a class unless it is annotated (a subclass, a nest_lock), which nobody can
//!   do inside third-party code. The default here, [`Nesting::InstanceOrder`], accepts any
//!   fixed order and reports two instances ever taken in both orders (more generally a cycle
//!   among a class's instances), by any threads, at any time, as a
//!   [`Report::CircularDependency`] naming the instances and every site. Memory is bounded:
//!   a freed lock forgets its pairs, and at most [`MAX_INSTANCE_PAIRS`] are kept (reported as
//!   a capacity exhaustion). The kernel's rule is [`Nesting::Strict`], globally
//!   ([`set_nesting`]) or per key ([`LockClassKey::with_nesting`],
//!   [`DynamicKey::with_nesting`]). The same instance taken again is always reported, also
//!   under another subclass. Many instances of a class held at once in one order (every
//!   shard of a table) cost one pair each, not one per held instance: while every held
//!   instance has a path of exclusive pairs to the most recent one (an *ordered run*), a new
//!   instance is checked against that one only, and a lock freed from the middle of such a
//!   path leaves a pair across it. Limitation: instance pairs are kept only within a class; a nesting like `A1 -> B -> A2`
//!   still makes the class dependencies `A -> B -> A`, a cycle.
//! - **Dependencies**: acquiring `next` adds `prev -> next` for the top held lock and for every
//!   trylock directly above the first non-trylock (`check_prevs_add()`). A trylock acquisition
//!   gets no dependency into itself but, once held, gives dependencies to later acquisitions.
//!   Unlike the kernel's walk, this one also goes on past a held recursive read: in `A -> B
//!   (recursive read) -> C`, the path from A through B is not strong (B's acquisition waits
//!   for no reader), so A would not reach C through it, and `A -> C` is added directly.
//! - **Readers**: which holding blocks which acquisition of one lock is one table (an
//!   upgradable read held blocks only writers and upgradable reads; acquired, it waits for
//!   every holder, readers included, through a writer queued behind them):
//!
//!   | acquired \ held | Exclusive | Read, RecursiveRead | Upgradable |
//!   |---|---|---|---|
//!   | Exclusive, Upgradable (and an upgrade) | waits | waits | waits |
//!   | Read | waits | waits (behind a queued writer) | no |
//!   | RecursiveRead | waits | no | no |
//!
//!   Dependencies are named [`DepKind`]s: EN/SN/ER/SR as in the kernel, plus UN, UR, EU, SU,
//!   UU for upgradable reads. Only a *strong* cycle is reported: at every lock on it, the
//!   acquisition that ends one dependency must be able to wait for the holding that starts
//!   the next (for the kernel's kinds: no `-(*R)->` followed by `-(S*)->`), so recursive
//!   readers, and plain readers of an upgradable holder, give no false positives. An
//!   [`upgrade`] is an exclusive acquisition of the lock under the other held locks (not its
//!   own upgradable entry), so "read R; upgradable R; upgrade R" is recursive locking, and
//!   "B; upgradable A; upgrade A" orders B before a *write* of A. Upgradable reads follow
//!   parking_lot's `RawRwLock`; the kernel has none.
//! - **Same class**: the same instance taken again in a mode that waits for its holding is
//!   [`Report::RecursiveLocking`] (a recursive read after any read, or a read under an
//!   upgradable read, is fine); another instance follows the class's [`Nesting`] rule
//!   ([`Report::MissingNestingAnnotation`] under the strict one unless a `nest_lock` is held).
//! - **Chain cache**: an acquisition whose held-lock chain (classes, modes, try flags) was
//!   validated before costs a per-thread cache probe (then a read-only global table probe) and
//!   takes no lock. A chain that nests a class in itself is cached with a mark, and a hit on
//!   it also checks the pairs of instances against a per-thread cache of checked pairs (which
//!   a freed lock with pairs invalidates), so a cached chain never hides a new instance pair.
//! - **Cycle reports** name, for every dependency, the instances on which it was first seen
//!   ([`Dependency::from_instance`]), so a cycle that closes only across two pools of locks
//!   can be told from one within a pool.
//! - **Each distinct report is printed once** (see above), the offending dependency of a cycle
//!   is not recorded, and the validator never turns itself off.
//!
//! # Other threads' held locks
//!
//! Each thread's held stack has a copy that any thread can read, the thread's *record*: the
//! owner writes its own record (guarded by a sequence counter, a seqlock, so a push costs a
//! few plain stores on the owner's cache line and a pop one), and a reader copies it and
//! retries if the owner was writing. Other threads never write a stack: they post a request (drop this
//! entry: its guard was released here; forget this lock: it was freed) to the owner's mailbox,
//! which the owner applies at its next lock operation (one relaxed load of a flag on its line).
//! On the records:
//!
//! - **The all-threads dump** ([`all_held_locks`], [`show_all_locks`], [`dump_on_signal`]): every
//!   thread's held locks with class, instance, mode and site, and the lock it waits for (or the
//!   condvar wait it sleeps in, [`ThreadLocks::condvar`], whose mutex it does not hold); text in
//!   the layout of the kernel's `debug_show_all_locks()`.
//! - **Cross-thread checks**: unregistering a [`DynamicKey`] while *any* thread holds a lock of
//!   it ([`KeyMisuse::UnregisterWhileHeld`], naming the holders), and a lock destroyed while
//!   another thread holds it ([`check_held_lock_freed`]); the holder's later operations see no
//!   stale entry. A thread asleep in a condvar wait counts as holding the wait's mutex here
//!   (its guard lives on and re-locks it), though the dump and the watchdog show it sleeping.
//! - **Moving guards** ([`release_from`]): the entry of a lock released on another thread than
//!   its acquirer leaves the acquirer's stack exactly.
//! - **The hung-lock watchdog** ([`start_watchdog`], [`WATCHDOG_ENV`]) and [`deadlocks_now`]:
//!   wait-for chains from the waits the wrappers announce ([`lock_contended`]), a cycle reported
//!   as a deadlock happening now, with the potential report of the same classes made earlier.
//! - **lock_stat** ([`set_lock_stat`], [`lock_stat()`]): per-class acquisitions, contentions, wait
//!   and hold times (the kernel's `/proc/lock_stat`); off, nothing on the fast paths (on, each
//!   thread's record carries a bit that sends them to the slow paths, which count).
//! - **Stacks in cycle reports** ([`set_capture_backtraces`], or [`BACKTRACE_ENV`] without a
//!   code change: `LOCKDEP_BACKTRACE=1`): each new dependency keeps the stack that made it, for
//!   a report whose sites are inside a crate's own lock wrapper; paid only when a dependency is
//!   new.
//! - **A report file** ([`REPORT_FILE_ENV`]: `LOCKDEP_REPORT_FILE=path`): what lockdep writes
//!   to standard error is appended to the file too, one write per report, so the processes of
//!   a test run (passing doc tests, whose standard error rustdoc keeps) share one file.
//! - **The chain cache switch** ([`set_chain_cache`]): off, every nested acquisition is
//!   validated as if its chain were new; for checking that no cache changes a verdict (the
//!   crate's own differential tests run every sequence with it on and off).
//!
//! The record is not tied to an OS thread but to a *holding* ([`Holder`]): async tasks that hold
//! locks across polls will get records of their own, swapped in as the thread's current record
//! around each poll, so that a task's held locks move with it between worker threads.
//!
//! # Dynamic keys and hazard pointers
//!
//! [`DynamicKey`]s live in a fixed table of buckets. A lookup ("is this key registered?",
//! made when a lock map of the key needs its class) protects the bucket head with a `hazptr`
//! hazard pointer and walks the bucket without a lock. Unregister unlinks the key under the
//! graph lock, zaps its classes, and then waits (`hazptr` synchronize) only for lookups in that
//! one bucket, after which the key's memory is freed. For comparisons, [`set_key_table_sync`]
//! swaps both sides for `synchronize_direct` or a user strategy ([`KeySyncStrategy`]).
//!
//! # Limits
//!
//! - Every crossing of a fixed limit is an *episode*, reported as
//!   [`Report::CapacityExhausted`] with its number, rate limited per limit: episodes 1, 2, 4,
//!   8, ... (powers of two) are delivered, the others counted
//!   ([`Stats::repeats_suppressed`]). A count rather than a clock, so a run's reports do not
//!   depend on its speed.
//! - At most [`MAX_CLASSES`] live classes; beyond that, locks of new classes are tracked
//!   without validation until classes are freed (keys unregistered, or [`reset`]). An episode
//!   lasts from the first class that could not be created to the next one that could.
//! - The held-lock depth limit ([`set_max_depth`]): each acquisition that takes a thread past
//!   it is an episode; deeper locks are still tracked and validated.
//! - The global chain cache is a fixed table; when a chain's probe window is full, one chain
//!   of the window is evicted (counted in [`Stats::chain_cache_evictions`]), which only costs
//!   that chain's re-validation: no validation is lost, so it is not reported.
//! - Deduplication remembers 4096 distinct reports; beyond that, new distinct reports are
//!   delivered every time. One delivery hands a report callback at most 64 reports caused by
//!   its own lock operations; more are counted in [`Stats::reports_dropped`].
//! - `fork()`: `pthread_atfork` handlers take every validator-internal lock around a fork, so
//!   the child of a multi-threaded program never inherits one locked by a thread it does not
//!   have, and the child forgets the hazard pointers of those threads; the child's held stack
//!   is the forking thread's. A `fork()` from inside [`with_graph_lock_held`] would deadlock.
//! - Held locks belong to a thread, which alone changes its stack; other threads read it
//!   (its slots live in a shared record, read under a sequence counter; see below) and ask
//!   the owner, through a mailbox, to drop entries. At most 4096 threads hold locks at once
//!   with a shared record; past that, a thread keeps a private stack and is validated as usual
//!   but is invisible to the dump, the watchdog and other threads' checks. Async locks taken
//!   in a task's poll ([`TaskContext`]) are the task's, put on the polling thread's stack for
//!   each poll and taken off after it, so they follow the task between threads; a blocking
//!   lock a task still holds when its poll returns `Pending` is [`Report::HeldAcrossAwait`]
//!   and stays the thread's. A task's async locks between its polls are in no thread's copy:
//!   the dump, the watchdog and the cross-thread checks do not see them yet. A lock map must
//!   not move while it is held (guards that borrow the lock guarantee this).
//! - Lock–join deadlocks are found only through annotations ([`PseudoLock`]). Lock–condvar
//!   deadlocks (waiting while holding a lock the notifier needs) are found with condvar
//!   tracking, off by default ([`set_condvar_tracking`]): a wait may be ended by another
//!   notifier, a timeout or a spurious wakeup, so the dependencies it records are a claim the
//!   program must make (the kernel removed its general tracking of such waits, cross-release,
//!   after false positives).
//!
//! # Tests
//!
//! One line makes every report fail the test whose thread made it, even if the same report
//! was printed earlier in the process (by another test, say):
//!
//! ```
//! # fn test_body() {}
//! let _scope = lockdep::test_scope();
//! test_body(); // a report on this thread panics it, at the report
//! ```
//!
//! The thread panics at the report, before the lock operation takes effect (so a real
//! deadlock fails the test instead of hanging it), and the guard panics at its drop if
//! reports were recorded that could not panic their thread (at thread exit, during
//! unwinding) or whose panic was swallowed. Threads the test spawns enter the scope with
//! [`TestScope::handle`] and [`ScopeHandle::enter`]. Tests run in parallel each have their
//! own scope.
//!
//! To look at reports instead, set a [`Policy::Callback`] that collects them, and [`reset`]
//! the validator at the start of each test (which also forgets which reports were already
//! delivered); the validator is process-wide, so such tests should be serialized.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

// The modules in dependency order: each uses only modules above it (checked by
// `tests/module_graph.rs`).
//
// Cache prefetch hints, for slow paths that write lines other threads used last.
mod prefetch;
// Every fixed size, with the reason for it.
mod limits;
// The placeholder sites of a release by guard drop and of an unregister by key drop.
mod site;
// `pthread_atfork` handlers: every internal lock is taken around a fork.
mod fork;
// Acquire modes and dependency kinds.
mod mode;
// Run-time settings: depth limit, report repeats, the chain cache switch.
mod settings;
// How two instances of one class may nest, and the epoch of cached instance pairs.
mod nesting;
// Class ids, the keys classes are made from, the generation table, a lock map's class cache.
mod class;
// Chain keys and the per-thread and global chain caches.
mod chain;
// Each thread's cache of checked instance pairs.
mod pair_cache;
// The class table, the dependencies between classes, the strong-path search.
mod graph;
// A thread's held-lock stack, as data.
mod held;
// Which task this thread is polling, for reports.
mod current_task;
// What a report says, its text, how it is built, where it goes (deduplicated, re-entrancy
// safe), test scopes.
mod report;
// Backtrace capture for new dependencies, and `LOCKDEP_BACKTRACE`.
mod backtraces;
// The graph lock and what it guards.
mod graph_lock;
// Each thread's state in a thread-local: release, freed memory, thread exit.
mod thread;
// Static and dynamic keys: the key table and its hazard-pointer-protected lookup.
mod keys;
// `LockMap`, the validator's view of one lock.
mod map;
// Lock map -> class.
mod resolve;
// The acquire hook: chain cache, check_deadlock, check_prevs_add.
mod validate;
// Held-lock queries and assertions, mode and subclass changes, upgrade, pinning,
// detach/attach.
mod annotate;
// Release-and-relock: a held lock taken again with its subclass and nest lock.
mod relock;
// Opt-in condvar dependency tracking.
mod condvar;
// Pseudo-locks for waits that are not locks.
mod pseudo;
// Held async locks per task: spliced onto the polling thread's stack for each poll.
mod task;
// Counters, the dependency list, DOT output, reset.
mod introspect;
// Opt-in per-class contention statistics (lock_stat).
mod lock_stat;
// The hung-lock watchdog and the deadlock-happening-now report.
mod watchdog;
// Contended acquisitions: the wait a thread announces while it blocks.
mod wait;
// The all-threads dump of held locks.
mod dump;

use std::panic::Location;

use held::Find;

pub use annotate::{
    assert_held, assert_held_mode, assert_none_held, assert_not_held, change_held_mode, detach,
    held_count, held_locks, is_held, pin, set_held_mode, set_held_subclass, unpin, upgrade,
    upgrade_timed, upgrade_timed_out, DetachedLock, TimedUpgrade,
};
pub use backtraces::{set_capture_backtraces, BACKTRACE_ENV};
pub use class::ClassId;
pub use condvar::{
    condvar_notify, condvar_sleep, condvar_wait, condvar_woken, set_condvar_tracking, CondvarMap,
};
pub use dump::{all_held_locks, dump_on_signal, show_all_locks, AllLocks};
pub use graph::Trace;
pub use graph_lock::graph_lock_sections;
pub use held::Holder;
pub use introspect::{
    dependencies, dot, reset, stats, with_graph_lock_held, DependencyInfo, Stats,
};
pub use keys::{
    key_table_sync, set_key_table_sync, DynamicKey, KeyHandle, KeySyncStrategy, KeyTableSync,
    LockClassKey,
};
pub use limits::{DEFAULT_MAX_DEPTH, KEY_BUCKETS, MAX_CLASSES, MAX_INSTANCE_PAIRS, MAX_SUBCLASSES};
pub use lock_stat::{lock_stat, reset_lock_stat, set_lock_stat, ClassStat, LockStat, TimeStat};
pub use map::LockMap;
pub use mode::{DepKind, Mode};
pub use nesting::{nesting, set_nesting, Nesting};
pub use pseudo::{PseudoGuard, PseudoLock};
pub use relock::{relock, relock_of, Relock};
pub use report::{
    load_suppressions, print_summary, set_policy, stale_suppressions, summary, suppress,
    suppressions, test_scope, AssertKind, Capacity, CircularDependency, ClassRef, CondvarWait,
    Dependency, EnteredScope, Handler, KeyMisuse, LoadedSuppressions, LockDesc, LockInstance,
    MisuseSubject, Policy, Report, ReportKind, SameClass, ScopeHandle, Summary, Suppression,
    SuppressionError, SuppressionFileError, SuppressionId, SuppressionInfo, SuppressionOrigin,
    TaskLocks, TestScope, ThreadDesc, ThreadLocks, WaitingFor, REPORT_FILE_ENV, SUPPRESSIONS_ENV,
};
pub use settings::{set_report_each_cycle_once, set_report_repeats};
pub use site::{is_guard_drop, is_key_drop};
pub use task::{
    current_task, task_acquire, task_release, task_set_held_mode, PollScope, TaskContext, TaskHeld,
};
pub use wait::{lock_acquired, lock_contended};
pub use watchdog::{
    deadlocks_now, set_watchdog_handler, start_watchdog, stop_watchdog, waits_watched, Deadlock,
    HungWait, WatchdogHandler, WatchdogReport, WATCHDOG_ENV,
};

/// Sets the per-thread held-lock depth above which a [`Report::CapacityExhausted`] is made:
/// each acquisition that takes a thread's depth from `depth` to `depth + 1` is an episode
/// (rate limited, see [`Report::CapacityExhausted`]'s `episode`). Locks above the limit are
/// still tracked and validated. Default [`DEFAULT_MAX_DEPTH`] (48, as the
/// kernel). Thread-safe; takes effect on every thread's next acquire (each thread's fast path
/// is sent to the slow path once, which reads the new limit).
pub fn set_max_depth(depth: usize) {
    settings::store_max_depth(depth);
    held::record::Record::nudge_all();
}

/// Turns the chain cache on (the default) or off. Off, no cache answers for an acquisition:
/// neither a thread's chain cache, nor the global chain table, nor the cache of checked
/// instance pairs, so every acquisition made with a lock held is validated under the graph
/// lock as if its chain were new, and the fast paths give way to the general ones.
///
/// For checking the validator itself: a cache only saves the validation of a chain seen
/// before, so the reports and the class dependencies recorded (and [`dependencies`]) must be
/// the same with it on or off; a difference is a bug of lockdep's. The one exception is the
/// instance pairs of a class nested in itself (see [`Nesting`]): the cache of checked pairs
/// accepts an instance whose order with every held instance of its class a path of recorded
/// pairs already gives, and records no direct pair for it, where the validation with the
/// cache off records one. The same inversions are reported either way, but such a report
/// may show a longer cycle of instances with the cache on. Off, every nested acquisition
/// takes the global graph lock: much slower, and
/// threads serialize on it. Thread-safe; takes effect on every thread's next acquisition.
pub fn set_chain_cache(enabled: bool) {
    held::record::set_slow_all(|| {
        settings::store_chain_cache(enabled);
        !enabled || lock_stat::on()
    });
}

/// Records that this thread is acquiring the lock `map` (the kernel's `lock_acquire()`).
///
/// - `subclass`: 0..[`MAX_SUBCLASSES`]; locks of one key taken nested need distinct
///   subclasses (`*_lock_nested()`). An out-of-range subclass is reported and the lock is
///   tracked unvalidated.
/// - `mode`: see [`Mode`].
/// - `trylock`: true for a successful try-lock (call it *after* success); the lock is held
///   but gets no dependency into it and is not checked.
/// - `nest_lock`: a held lock that serializes nesting of this lock's class
///   (`*_lock_nest_lock()`); if it is not held, [`Report::NestLockNotHeld`] is reported.
/// - `site`: the location reports name for this acquisition (see the crate docs), normally
///   the user's call of the wrapper's lock method.
///
/// For a blocking acquire, call it **before** the real lock may block: reports are delivered
/// before it returns. Cost: on a chain seen before, a per-thread hash probe, no lock and no
/// shared write; on a new chain, the graph lock and a BFS per new dependency.
///
/// Thread-safe. Panics only if the policy is [`Policy::Panic`] and there is a report.
#[inline]
pub fn acquire(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: &'static Location<'static>,
) {
    // lock_stat counts on the slow path only: while it is on, the fast path gives way.
    validate::acquire_counted(map, subclass, mode, trylock, nest_lock, site);
}

/// Records that this thread released the lock `map` (the kernel's `lock_release()`). The lock
/// may be anywhere in the held stack (out-of-order unlock is allowed). Releasing a lock this
/// thread does not hold gives [`Report::BadUnlockBalance`]; releasing a pinned lock gives
/// [`Report::AssertionFailed`]; `site` is the location those reports name (for a guard drop,
/// use [`release_guard`]). No lock taken on the normal path.
///
/// A thread that holds one lock twice (an rwlock's read and upgradable read at once) loses
/// its topmost entry of the lock; a lock wrapper whose guards know their mode calls
/// [`release_mode`], which takes the guard's own entry whichever guard goes first.
#[inline(always)]
pub fn release(map: &LockMap, site: &'static Location<'static>) {
    if !thread::release_fast(Find::any(map.instance())) {
        // As in `acquire`: lock_stat's hook is on the slow path only.
        validate::release_general_counted(map, site, None);
    }
}

/// [`release`] of the entry of `map` that was acquired (or last set, by [`set_held_mode`],
/// [`upgrade`] or [`change_held_mode`]) in `mode`: of this thread's entries of the lock, the
/// topmost one held in `mode`, or the topmost one if none is. This is what a guard's drop
/// calls: after `r = rw.read(); u = rw.upgradable_read(); drop(r)` the thread still holds the
/// upgradable read, which a later `rw.read()` may share and `upgrade(u)` may upgrade; with
/// [`release`], the read would be left behind instead. Reports and cost as [`release`] (the
/// mode costs nothing on the fast path: it is part of the compared word). Thread-safe.
///
/// Known limit: two entries of one lock *in the same mode* (two `read_recursive` guards of
/// one rwlock) are told apart only by their place, and the topmost goes, as in the kernel's
/// `find_held_lock()`. When the lower guard goes first with another lock taken between the
/// two, the entry left behind sits below that lock: locks taken next depend on the lock
/// between, not on this one, so an inversion through this lock alone can be missed.
// Always inlined: a wrapper's per-mode release function then compares a constant word, and
// the cut of the entry below the top (in `release_fast`) keeps the body past the size at
// which it would otherwise be called with the mode as a variable.
#[inline(always)]
pub fn release_mode(map: &LockMap, mode: Mode, site: &'static Location<'static>) {
    if !thread::release_fast(Find::in_mode(map.instance(), mode)) {
        validate::release_general_counted(map, site, Some(mode));
    }
}

/// Records that this thread released the lock `map` by dropping a guard, where the release
/// site is unknown (a `Drop::drop` cannot be `#[track_caller]`): [`release`] with
/// [`guard_drop_site`]. Reports about it show "(guard drop)" and, for a held lock, the site
/// that acquired it. Thread-safe; no lock taken on the normal path.
#[inline]
pub fn release_guard(map: &LockMap) {
    release(map, site::guard_drop());
}

/// The site to pass to [`release`] (or wherever a site of a release is asked for) when it is
/// unknown, as in a guard's drop: a placeholder location inside lockdep, which reports show as
/// "(guard drop)" (test it with [`is_guard_drop`]).
#[inline]
pub fn guard_drop_site() -> &'static Location<'static> {
    site::guard_drop()
}

/// Validates an acquisition of `map` without holding it afterwards (the kernel's
/// `might_lock()`): records the dependencies from the held locks, so a rarely taken path is
/// checked the first time it *could* run.
pub fn might_lock(map: &LockMap, subclass: u8, mode: Mode, site: &'static Location<'static>) {
    validate::acquire(map, subclass, mode, false, None, site);
    release(map, site);
}

/// Checks that no lock this thread holds lives in `[addr, addr + len)`, because that memory is
/// being freed or re-initialised (the kernel's `debug_check_no_locks_freed()`). Each such lock
/// is reported as [`Report::HeldLockFreed`] and forgotten. [`LockMap`]'s `Drop` calls this.
#[track_caller]
pub fn check_no_locks_freed(addr: *const u8, len: usize) {
    thread::check_no_locks_freed(addr, len, Some(Location::caller()));
}

/// Checks that no *other* thread holds a lock in `map`, which is being destroyed or
/// re-initialised while its raw lock is still locked (a lock wrapper's drop knows that; an
/// unlocked lock cannot be held, so an ordinary drop does not call this). Each thread that
/// holds it is reported as [`Report::HeldLockFreed`] with
/// `freed_by` the calling thread, and forgets it at its next lock operation (its later
/// operations see no stale entry, and its exit reports nothing for it). The calling thread's
/// own entries are [`check_no_locks_freed`]'s (which [`LockMap`]'s `Drop` calls).
///
/// Cost: a copy of every thread's shared record that holds anything. Thread-safe.
pub fn check_held_lock_freed(map: &LockMap) {
    let lo = map.instance();
    thread::check_freed_elsewhere(lo, lo + std::mem::size_of::<LockMap>());
}

/// The calling thread's current holding of its held-lock record: give it to
/// [`release_from`] on the thread that releases a lock this thread acquired (a guard sent to
/// another thread). `None` before this thread's first acquisition (or past the record limit).
/// Thread-safe; no lock taken.
pub fn current_holder() -> Option<Holder> {
    thread::current_holder()
}

/// Releases a lock that the holding `holder` acquired, from any thread: the ownership of a
/// held lock moves with a guard sent to another thread and dropped there. On the thread of
/// `holder` this is [`release_guard`]; on another, the topmost entry of `map` leaves that
/// thread's held stack, exactly and with no report, before its next lock operation (so locks
/// it takes afterwards get no dependency from it, and its exit does not report it). Call it
/// before the raw lock is unlocked, so that a thread that takes the lock next sees the
/// release. If the holding is over (the thread exited, reporting the lock as held at exit),
/// nothing happens. Thread-safe; takes the target thread's mailbox mutex.
pub fn release_from(holder: Option<Holder>, map: &LockMap) {
    release_from_entry(holder, map, None);
}

/// [`release_from`] of the entry acquired in `mode`: the topmost of `map` in that mode on the
/// thread of `holder`, else its topmost of `map` (as [`release_mode`] on this thread). What a
/// guard that may move between threads calls, so that of two guards of one rwlock held in two
/// modes each releases its own, wherever it is dropped. Thread-safe.
pub fn release_from_mode(holder: Option<Holder>, map: &LockMap, mode: Mode) {
    release_from_entry(holder, map, Some(mode));
}

/// [`change_held_mode`] of an entry that the holding `holder` acquired, from any thread (a
/// guard sent to another thread downgraded or upgraded there): on the thread of `holder`,
/// [`change_held_mode`]; on another, that thread's entry of `map` in mode `from` (else its
/// topmost of `map`) is held in mode `to` from its next lock operation on, with no report
/// (other threads' views show the old mode until then). If the holding is over, nothing
/// happens. The change is not validated: a blocking upgrade on the guard's new thread is
/// validated there first with [`might_lock`] (as a read: an upgrade waits only for readers).
/// Thread-safe; takes the target thread's mailbox mutex.
#[track_caller]
pub fn change_held_mode_from(holder: Option<Holder>, map: &LockMap, from: Mode, to: Mode) {
    match holder {
        Some(h) if Some(h) != thread::current_holder() => {
            thread::post_mode_change(h, map.instance(), from, to);
        }
        _ => change_held_mode(map, from, to),
    }
}

fn release_from_entry(holder: Option<Holder>, map: &LockMap, mode: Option<Mode>) {
    let me = thread::current_holder();
    match (holder, mode) {
        (Some(h), _) if Some(h) != me => {
            // Whether the entry carried instance pairs is the other thread's secret: the map
            // learns it may have some, so that its drop forgets them.
            map.mark_paired();
            if lock_stat::on() {
                lock_stat::release_from(h, map, mode);
            }
            thread::post_release(h, map.instance(), mode);
        }
        (_, Some(mode)) => release_mode(map, mode, site::guard_drop()),
        (_, None) => release_guard(map),
    }
}

/// Releases the lock `map` for a lock wrapper's `force_unlock` (lock_api's, after a guard was
/// forgotten), whichever thread holds it: this thread's entry if it has one ([`release`] at
/// `site`); otherwise the topmost entry of another thread that holds it leaves that thread's
/// held stack exactly, as with [`release_from`] (a shared lock several threads hold loses one
/// of their entries); otherwise nothing happens (the lock was taken without validation or
/// through its raw lock). Call it while the raw lock is still locked; for a raw lock that is
/// not locked at all, call [`release`], which reports [`Report::BadUnlockBalance`].
///
/// Cost: when this thread holds no entry of `map`, a copy of every thread's shared record that
/// holds anything. Thread-safe.
pub fn force_release(map: &LockMap, site: &'static Location<'static>) {
    if is_held(map) {
        release(map, site);
        return;
    }
    let me = thread::current_holder();
    let instance = map.instance();
    let holder = thread::snapshots()
        .into_iter()
        .filter(|s| Some(s.holder) != me)
        .find(|s| s.split().0.iter().any(|e| e.instance == instance))
        .map(|s| s.holder);
    if let Some(h) = holder {
        release_from(Some(h), map);
    }
}

/// [`force_release`] for a forgotten *read* guard (a plain or a recursive read: the force
/// unlock does not say which): this thread's topmost entry of `map` held for reading, if it
/// has one, so that an upgradable read or a write of the lock that it also holds keeps its
/// entry; otherwise as [`force_release`]. Thread-safe.
pub fn force_release_read(map: &LockMap, site: &'static Location<'static>) {
    let read = annotate::held_read_mode(map);
    match read {
        Some(mode) => release_mode(map, mode, site),
        None => force_release(map, site),
    }
}

/// Declares that guards may move between threads (a lock wrapper whose guards are `Send`, as
/// instrumented-locks' `send_guard` feature, declares it at its first acquisition): a thread
/// that exits while holding locks then reports nothing for them, as their guards may live on
/// another thread, which releases them later with [`release_from`]. At most a fixed number of
/// such entries are kept; past it, the exit is reported as usual. Off by default (a lock held
/// at thread exit is [`Report::LockHeldAtExit`]). Thread-safe.
pub fn set_guards_movable(movable: bool) {
    thread::set_movable(movable);
}
