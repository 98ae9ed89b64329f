//! Suppressions: a report about exactly the classes (and sites, and kind) a suppression names
//! is counted for it and not delivered; any other report, also one through the same classes
//! plus one more, at another site, or of another kind, still is. Stale suppressions are
//! listed; a bad file line is an error with its number while the file's other lines work.
//!
//! Suppressions are process-wide and outlive `reset`, so every test names classes of its own.

mod common;

use std::panic::Location;

use common::*;
use lockdep::{
    ClassRef, DynamicKey, LockClassKey, LockMap, Mode, Policy, Report, ReportKind, Suppression,
    SuppressionError, SuppressionId, SuppressionInfo, SuppressionOrigin,
};

type Site = &'static Location<'static>;

fn leak(m: LockMap) -> &'static LockMap {
    Box::leak(Box::new(m))
}

/// Takes `m` at `site`.
fn lock_at(m: &LockMap, site: Site) {
    lockdep::acquire(m, 0, Mode::Exclusive, false, None, site);
}

/// What `suppressions()` says about `id`.
fn info(id: SuppressionId) -> SuppressionInfo {
    lockdep::suppressions()
        .into_iter()
        .find(|s| s.id == id)
        .expect("a declared suppression is listed")
}

fn hits(id: SuppressionId) -> u64 {
    let from_stats = lockdep::stats()
        .hits_by_suppression
        .iter()
        .find(|h| h.0 == id)
        .map(|h| h.1)
        .expect("every suppression is counted in the stats");
    assert_eq!(from_stats, info(id).hits, "stats and the listing agree");
    from_stats
}

/// A two-class cycle `a -> b`, `b -> a`.
#[track_caller]
fn abba(a: &LockMap, b: &LockMap) {
    pair(a, b);
    pair(b, a);
}

#[test]
fn a_suppressed_pair_stays_silent_but_a_cycle_through_one_more_class_is_reported() {
    let _h = start();
    let (a, b, c) = (new_lock("pair.a"), new_lock("pair.b"), new_lock("pair.c"));
    let here = Location::caller();
    let id = lockdep::suppress(
        Suppression::pair("pair.a", "pair.b")
            .kind(ReportKind::CircularDependency)
            .reason("b -> a only runs before the workers start"),
    )
    .unwrap();
    let (stats, summary) = (lockdep::stats(), lockdep::summary());

    abba(a, b);
    pair(b, a);
    assert_reports!();
    assert_eq!(hits(id), 2, "every occurrence is counted, repeats too");

    // The same two classes plus one more: a -> b -> c -> a.
    pair(b, c);
    pair(c, a);
    assert_one_cycle(&["pair.a", "pair.b", "pair.c"]);
    assert_eq!(hits(id), 2);

    let after = lockdep::stats();
    assert_eq!(
        after.reports - stats.reports,
        3,
        "suppressed reports are still made"
    );
    assert_eq!(after.suppression_hits - stats.suppression_hits, 2);
    assert_eq!(
        after.distinct_reports - stats.distinct_reports,
        1,
        "a suppressed report is not a distinct report"
    );
    assert_eq!(after.repeats_suppressed, stats.repeats_suppressed);
    let s = lockdep::summary();
    assert_eq!(s.distinct - summary.distinct, 1);
    assert_eq!(s.suppression_hits - summary.suppression_hits, 2);
    assert!(s.to_string().contains("matched a suppression"), "{s}");

    let i = info(id);
    assert_eq!(i.text, "circular: pair.a -> pair.b");
    assert_eq!(i.kind, Some(ReportKind::CircularDependency));
    assert_eq!(
        i.reason.as_deref(),
        Some("b -> a only runs before the workers start")
    );
    match i.origin {
        SuppressionOrigin::Code(site) => {
            assert_eq!((site.file(), site.line()), (here.file(), here.line() + 1))
        }
        other => panic!("declared in code, not {other:?}"),
    }
}

#[test]
fn a_suppression_by_site_does_not_hide_the_same_classes_nested_at_another_site() {
    let _h = start();
    lockdep::set_nesting(lockdep::Nesting::Strict);
    // Two instances of one class, and three sites.
    let nodes: Vec<&'static LockMap> = (0..2).map(|_| new_lock("site.node")).collect();
    let outer_at = Location::caller();
    let quiet_at = Location::caller();
    let loud_at = Location::caller();
    let id = lockdep::suppress(
        Suppression::class(ClassRef::name("site.node").acquired_at(file!(), quiet_at.line()))
            .kind(ReportKind::MissingNestingAnnotation),
    )
    .unwrap();

    lock_at(nodes[0], outer_at);
    lock_at(nodes[1], quiet_at);
    unlock(nodes[1]);
    unlock(nodes[0]);
    assert_reports!();
    assert_eq!(hits(id), 1);

    lock_at(nodes[0], outer_at);
    lock_at(nodes[1], loud_at);
    unlock(nodes[1]);
    unlock(nodes[0]);
    assert_reports!(Report::MissingNestingAnnotation(s) if s.acquiring.site == loud_at);
    assert_eq!(hits(id), 1);

    // A cycle: suppressed where one of its dependencies took `cyc.a` at `first_at`.
    let (a, b) = (new_lock("cyc.a"), new_lock("cyc.b"));
    let first_at = Location::caller();
    let id = lockdep::suppress(Suppression::pair(
        ClassRef::name("cyc.a").acquired_at(file!(), first_at.line()),
        "cyc.b",
    ))
    .unwrap();
    lock_at(a, first_at);
    lock(b);
    unlock(b);
    unlock(a);
    pair(b, a);
    assert_reports!();
    assert_eq!(hits(id), 1);
    // The same two classes, nested at other sites only (after a reset, which forgets the
    // dependency recorded at `first_at`): reported.
    lockdep::reset();
    abba(a, b);
    assert_one_cycle(&["cyc.a", "cyc.b"]);
    assert_eq!(hits(id), 1);
}

#[test]
fn a_stale_suppression_is_listed() {
    let _h = start();
    let (a, b) = (new_lock("stale.a"), new_lock("stale.b"));
    let used = lockdep::suppress(Suppression::pair("stale.a", "stale.b")).unwrap();
    let stale = lockdep::suppress(
        Suppression::pair("stale.a", "stale.renamed").reason("the class was renamed since"),
    )
    .unwrap();
    abba(a, b);
    assert_reports!();
    let listed: Vec<SuppressionId> = lockdep::stale_suppressions().iter().map(|s| s.id).collect();
    assert!(listed.contains(&stale), "{listed:?}");
    assert!(!listed.contains(&used), "{listed:?}");
    assert_eq!(info(stale).hits, 0);
    assert_eq!(info(stale).text, "any: stale.a -> stale.renamed");
}

#[test]
fn a_malformed_file_line_is_reported_with_its_number_and_the_other_lines_still_work() {
    let _h = start();
    let (a, b, r) = (new_lock("file.a"), new_lock("file.b"), new_lock("file.r"));
    let path = std::env::temp_dir().join(format!("lockdep-suppress-{}.supp", std::process::id()));
    std::fs::write(
        &path,
        "\
# file.a and file.b: b -> a runs only at startup, before any a -> b.
circular: file.a -> file.b
circ: file.c -> file.d
recursive: file.r   # the second lock is a try_lock in the real code

any: *
",
    )
    .unwrap();
    let loaded = lockdep::load_suppressions(&path).unwrap();
    std::fs::remove_file(&path).unwrap();

    let lines: Vec<usize> = loaded.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [3, 6]);
    assert!(
        loaded.errors[0]
            .message
            .contains("unknown report kind `circ`"),
        "{}",
        loaded.errors[0]
    );
    assert!(
        loaded.errors[1].message.contains("wildcard"),
        "{}",
        loaded.errors[1]
    );
    let shown = loaded.errors[0].to_string();
    assert!(
        shown.starts_with(&format!("{}:3: ", path.display())),
        "names the file and the line: {shown}"
    );
    assert!(shown.ends_with("`circ: file.c -> file.d`"), "{shown}");

    assert_eq!(loaded.added.len(), 2, "the good lines are declared");
    let first = info(loaded.added[0]);
    assert_eq!(
        first.origin,
        SuppressionOrigin::File {
            path: path.clone(),
            line: 2
        }
    );
    assert_eq!(
        first.reason.as_deref(),
        Some("file.a and file.b: b -> a runs only at startup, before any a -> b.")
    );
    assert_eq!(
        info(loaded.added[1]).reason.as_deref(),
        Some("the second lock is a try_lock in the real code")
    );

    abba(a, b);
    lock(r);
    lock(r);
    unlock(r);
    unlock(r);
    assert_reports!();
    assert_eq!(hits(loaded.added[0]), 1);
    assert_eq!(hits(loaded.added[1]), 1);

    let missing = lockdep::load_suppressions(path.with_extension("missing"));
    assert!(missing.is_err(), "an unreadable file is an error");
}

static KEY_A: LockClassKey = LockClassKey::new();
static KEY_B: LockClassKey = LockClassKey::new();
static TREE: LockClassKey =
    LockClassKey::new().suppress_nesting("parents before children: the tree is locked top-down");

#[test]
fn suppressions_by_static_key_dynamic_key_key_mark_and_construction_site() {
    let _h = start();
    // Static keys: every class of each key (any subclass).
    let (a, b) = (
        leak(LockMap::with_key("keyed.a", &KEY_A)),
        leak(LockMap::with_key("keyed.b", &KEY_B)),
    );
    let by_key = lockdep::suppress(Suppression::pair(&KEY_A, &KEY_B)).unwrap();
    abba(a, b);
    assert_reports!();
    assert_eq!(hits(by_key), 1);
    // A class of the same name that is not of the key is not matched.
    let impostor = new_lock("keyed.a");
    abba(impostor, b);
    assert_one_cycle(&["keyed.a", "keyed.b"]);

    // Dynamic keys: by identity, so a new key (even at a reused address) is not matched.
    let (k1, k2) = (DynamicKey::new("dyn.k1"), DynamicKey::new("dyn.k2"));
    let by_dyn =
        lockdep::suppress(Suppression::pair(ClassRef::from(&k1), ClassRef::from(&k2))).unwrap();
    let (d1, d2) = (
        leak(LockMap::with_dynamic_key("dyn.a", &k1)),
        leak(LockMap::with_dynamic_key("dyn.b", &k2)),
    );
    abba(d1, d2);
    assert_reports!();
    assert_eq!(hits(by_dyn), 1);
    drop((k1, k2));
    let (k1, k2) = (DynamicKey::new("dyn.k1"), DynamicKey::new("dyn.k2"));
    let (d1, d2) = (
        leak(LockMap::with_dynamic_key("dyn.a", &k1)),
        leak(LockMap::with_dynamic_key("dyn.b", &k2)),
    );
    abba(d1, d2);
    assert_one_cycle(&["dyn.a", "dyn.b"]);
    assert_eq!(hits(by_dyn), 1);

    // A static key marked in its `static`: two of its instances nested under the strict rule.
    lockdep::set_nesting(lockdep::Nesting::Strict);
    let (parent, child) = (
        leak(LockMap::with_key("tree", &TREE)),
        leak(LockMap::with_key("tree", &TREE)),
    );
    pair(parent, child);
    assert_reports!();
    let mark = lockdep::suppressions()
        .into_iter()
        .find(|s| {
            s.origin
                == SuppressionOrigin::Key {
                    class: "tree".into(),
                }
        })
        .expect("the key's mark is declared with its first class");
    assert_eq!(mark.kind, Some(ReportKind::MissingNestingAnnotation));
    assert_eq!(
        mark.reason.as_deref(),
        Some("parents before children: the tree is locked top-down")
    );
    assert_eq!(hits(mark.id), 1);
    // The mark is for that kind only: the same instance taken again is still reported.
    lock(parent);
    lock(parent);
    unlock(parent);
    unlock(parent);
    assert_reports!(Report::RecursiveLocking(_));
    lockdep::set_nesting(lockdep::Nesting::InstanceOrder);

    // Construction sites: every class of locks built at a line, named or not.
    let (x, x_at) = typed::<u32>();
    let (y, y_at) = typed::<u64>();
    let by_site = lockdep::suppress(Suppression::pair(
        ClassRef::constructed_at(file!(), x_at.line()),
        ClassRef::constructed_at("tests/suppress.rs", y_at.line()),
    ))
    .unwrap();
    abba(x, y);
    assert_reports!();
    assert_eq!(hits(by_site), 1);
}

/// An unnamed lock of type `T` constructed at the caller's site, and that site.
#[track_caller]
fn typed<T>() -> (&'static LockMap, Site) {
    (leak(LockMap::of_type::<T>("Mutex")), Location::caller())
}

#[test]
fn a_kind_restricted_suppression_does_not_hide_another_kind() {
    let _h = start();
    lockdep::set_nesting(lockdep::Nesting::Strict);
    let locks: Vec<&'static LockMap> = (0..2).map(|_| new_lock("kind.k")).collect();
    let id =
        lockdep::suppress(Suppression::class("kind.k").kind(ReportKind::RecursiveLocking)).unwrap();
    lock(locks[0]);
    lock(locks[0]);
    unlock(locks[0]);
    unlock(locks[0]);
    assert_reports!();
    assert_eq!(hits(id), 1);
    pair(locks[0], locks[1]);
    assert_reports!(Report::MissingNestingAnnotation(_));

    // No kind at all still leaves the kinds that cannot be suppressed alone.
    let (a, b) = (new_lock("kind.a"), new_lock("kind.b"));
    let any = lockdep::suppress(Suppression::pair("kind.a", "kind.b")).unwrap();
    abba(a, b);
    unlock(a);
    assert_reports!(Report::BadUnlockBalance { .. });
    assert_eq!(hits(any), 1);
}

#[test]
fn a_suppressed_report_neither_fails_a_test_scope_nor_panics() {
    let _h = start();
    let (a, b) = (new_lock("scope.a"), new_lock("scope.b"));
    lockdep::suppress(Suppression::pair("scope.a", "scope.b")).unwrap();
    {
        let _scope = lockdep::test_scope();
        abba(a, b);
    }
    lockdep::set_policy(Policy::Panic);
    pair(b, a);
    let (c, d) = (new_lock("scope.c"), new_lock("scope.d"));
    pair(c, d);
    let unsuppressed = std::panic::catch_unwind(|| pair(d, c));
    // The panic left `d` held; forget it.
    lockdep::reset();
    assert!(unsuppressed.is_err(), "an unsuppressed cycle still panics");
}

#[test]
fn broad_suppressions_are_refused() {
    let refused = |s: Suppression| lockdep::suppress(s).expect_err("refused");
    assert_eq!(
        refused(Suppression::cycle(Vec::<ClassRef>::new())),
        SuppressionError::NoClasses
    );
    assert_eq!(
        refused(Suppression::pair("*", "refused.b")),
        SuppressionError::Wildcard
    );
    assert!(matches!(
        refused(Suppression::class("refused.a")),
        SuppressionError::OneClassNeedsKind(_)
    ));
    assert_eq!(
        refused(Suppression::pair("refused.a", "refused.b").kind(ReportKind::HeldLockFreed)),
        SuppressionError::NotSuppressible(ReportKind::HeldLockFreed)
    );
    assert!(
        !lockdep::suppressions()
            .iter()
            .any(|s| s.text.contains("refused.")),
        "nothing refused is declared"
    );
}

/// Takes `m` at `site` during a poll of a task that then returns `Pending` with `m` still
/// held (a blocking guard held across an `.await`), and releases it after the poll.
fn held_across_await_at(m: &LockMap, site: Site) {
    let task = lockdep::TaskContext::new();
    let poll = task.enter();
    lock_at(m, site);
    poll.exit(true);
    unlock(m);
}

#[test]
fn an_await_line_silences_that_lock_held_across_an_await_and_no_other() {
    let _h = start();
    let (a, b) = (new_lock("await.a"), new_lock("await.b"));
    let (here, elsewhere) = (Location::caller(), site_elsewhere());
    let path = std::env::temp_dir().join(format!("lockdep-await-{}.supp", std::process::id()));
    std::fs::write(
        &path,
        format!(
            "\
# await.a: its poll returns Pending only on a runtime with one task per thread.
await: await.a at tests/suppress.rs:{line}
awiat: await.b
await: await.a -> await.b
await: await.renamed
",
            line = here.line()
        ),
    )
    .unwrap();
    let loaded = lockdep::load_suppressions(&path).unwrap();
    std::fs::remove_file(&path).unwrap();

    // A typo'd kind and two classes for a one-lock report are errors with their lines.
    let lines: Vec<usize> = loaded.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [3, 4], "{:?}", loaded.errors);
    assert!(
        loaded.errors[0]
            .message
            .contains("unknown report kind `awiat`"),
        "{}",
        loaded.errors[0]
    );
    assert!(
        loaded.errors[0].message.contains("await:"),
        "the message lists the kind: {}",
        loaded.errors[0]
    );
    assert!(
        loaded.errors[1].message.contains("about one lock"),
        "{}",
        loaded.errors[1]
    );
    let (id, stale) = (loaded.added[0], loaded.added[1]);
    assert_eq!(info(id).kind, Some(ReportKind::HeldAcrossAwait));
    assert_eq!(
        info(id).text,
        format!("await: await.a at tests/suppress.rs:{}", here.line())
    );

    // The named class at the named site: silenced, and counted.
    held_across_await_at(a, here);
    assert_reports!();
    assert_eq!(hits(id), 1);
    // Another class held across an await at the same site is reported.
    held_across_await_at(b, here);
    let r = assert_reports!(Report::HeldAcrossAwait { .. });
    assert!(r[0].thread().task.is_some(), "names the task: {r:#?}");
    // The same class held across an await at another site is reported.
    held_across_await_at(a, elsewhere);
    assert_reports!(Report::HeldAcrossAwait { .. });
    assert_eq!(hits(id), 1);

    // The line that matched nothing is listed as stale; the one that matched is not.
    let listed: Vec<SuppressionId> = lockdep::stale_suppressions().iter().map(|s| s.id).collect();
    assert!(listed.contains(&stale), "{listed:?}");
    assert!(!listed.contains(&id), "{listed:?}");
    assert_eq!(info(stale).text, "await: await.renamed");

    // An await suppression does not hide another kind about its class.
    lock(a);
    lock(a);
    unlock(a);
    unlock(a);
    assert_reports!(Report::RecursiveLocking(_));
}

/// A site on another line than its caller's.
fn site_elsewhere() -> Site {
    Location::caller()
}

#[test]
fn an_await_suppression_in_code_names_one_class() {
    let _h = start();
    let a = new_lock("await.code");
    assert_eq!(
        lockdep::suppress(
            Suppression::pair("await.code", "await.other").kind(ReportKind::HeldAcrossAwait)
        ),
        Err(SuppressionError::OneLockKind(ReportKind::HeldAcrossAwait))
    );
    assert!(matches!(
        lockdep::suppress(Suppression::class("await.code")),
        Err(SuppressionError::OneClassNeedsKind(_))
    ));
    let id = lockdep::suppress(
        Suppression::class("await.code")
            .kind(ReportKind::HeldAcrossAwait)
            .reason("single-task runtime"),
    )
    .unwrap();
    assert_eq!(info(id).text, "await: await.code");
    held_across_await_at(a, Location::caller());
    held_across_await_at(a, site_elsewhere());
    assert_reports!();
    assert_eq!(hits(id), 2, "any site: each report is counted");
}

/// A cycle report ends with the line that suppresses it: declared from a file, that line
/// matches the next occurrence.
#[test]
fn the_line_a_cycle_report_suggests_suppresses_it() {
    let _h = start();
    let (a, b, c) = (new_lock("hint.a"), new_lock("hint.b"), new_lock("hint.c"));
    pair(a, b);
    pair(b, c);
    pair(c, a);
    let text = assert_one_cycle(&["hint.a", "hint.b", "hint.c"]).to_string();
    let line = text
        .lines()
        .skip_while(|l| !l.ends_with("declare it with the line"))
        .nth(1)
        .unwrap_or_else(|| panic!("no suggested line in:\n{text}"))
        .trim()
        .to_owned();
    assert!(line.starts_with("circular: "), "{line}");
    let path = std::env::temp_dir().join(format!("lockdep-hint-{}.supp", std::process::id()));
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let loaded = lockdep::load_suppressions(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let id = loaded.added[0];
    pair(c, a);
    assert_reports!();
    assert_eq!(hits(id), 1, "the suggested line matches the report");
}
