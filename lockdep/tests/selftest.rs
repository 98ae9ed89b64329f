//! The kernel's locking selftest matrix (`lib/locking-selftest.c`): the 93 cells that apply
//! to a userspace validator with Mutex and RwLock (no IRQ, softirq or RCU cells): 71 must
//! report, 22 must stay silent. Each cell starts from a clean validator. The test prints a pass/fail
//! table and fails if any cell disagrees with the kernel's verdict.
//!
//! Column mapping: spin, mutex -> exclusive; wlock, wsem -> exclusive (RwLock::write);
//! rlock -> recursive read (the kernel selftest forces read_lock to be recursive);
//! rsem -> non-recursive read (down_read).

mod common;

use common::*;
use lockdep::{LockClassKey, LockMap, Mode, Nesting};

static KA: LockClassKey = LockClassKey::new();
static KB: LockClassKey = LockClassKey::new();
static KC: LockClassKey = LockClassKey::new();
static KD: LockClassKey = LockClassKey::new();
// X, Y and Z are the classes whose instances nest: the kernel's strict rule for them (the
// crate's default, instance order, would accept an unannotated nesting of two instances).
static KX: LockClassKey = LockClassKey::with_nesting(Nesting::Strict);
static KY: LockClassKey = LockClassKey::with_nesting(Nesting::Strict);
static KZ: LockClassKey = LockClassKey::with_nesting(Nesting::Strict);

/// The locks of one cell: A..D have their own classes; X1/X2, Y1/Y2, Z1/Z2 share a class.
struct Locks {
    a: LockMap,
    b: LockMap,
    c: LockMap,
    d: LockMap,
    x1: LockMap,
    x2: LockMap,
    y1: LockMap,
    z1: LockMap,
}

impl Locks {
    fn new() -> Locks {
        Locks {
            a: LockMap::with_key("A", &KA),
            b: LockMap::with_key("B", &KB),
            c: LockMap::with_key("C", &KC),
            d: LockMap::with_key("D", &KD),
            x1: LockMap::with_key("X", &KX),
            x2: LockMap::with_key("X", &KX),
            y1: LockMap::with_key("Y", &KY),
            z1: LockMap::with_key("Z", &KZ),
        }
    }

    /// Lock `A`..`D` by letter.
    fn by_letter(&self, letter: u8) -> &LockMap {
        match letter {
            b'A' => &self.a,
            b'B' => &self.b,
            b'C' => &self.c,
            _ => &self.d,
        }
    }

    /// Runs `{p -> q}` in mode `m` for each two-letter event of `events` ("AB BA": A then B,
    /// then B then A).
    fn events(&self, events: &str, m: Mode) {
        for e in events.split(' ') {
            let e = e.as_bytes();
            pair_modes(self.by_letter(e[0]), m, self.by_letter(e[1]), m);
        }
    }
}

const W: Mode = Mode::Exclusive;
const R: Mode = Mode::RecursiveRead;
const RS: Mode = Mode::Read;

/// Runs one cell on a clean validator; returns true if anything was reported.
fn run_cell(body: &dyn Fn(&mut Locks)) -> bool {
    let mut locks = Locks::new();
    lockdep::reset();
    take();
    body(&mut locks);
    let reported = !take().is_empty();
    // Forget whatever the cell left held before its maps are dropped.
    lockdep::reset();
    drop(locks);
    take();
    reported
}

struct Row {
    group: String,
    column: &'static str,
    expect_report: bool,
    got_report: bool,
}

type Body = Box<dyn Fn(&mut Locks)>;

/// The main table: each group in each of the six columns. The deadlock groups must report in
/// every column but `rlock` (recursive readers do not deadlock each other); the misuse groups
/// in every column.
fn main_table() -> Vec<(String, &'static str, bool, Body)> {
    let columns: [(&str, Mode); 6] = [
        ("spin", W),
        ("wlock", W),
        ("rlock", R),
        ("mutex", W),
        ("wsem", W),
        ("rsem", RS),
    ];
    type Group = (&'static str, bool, fn(&mut Locks, Mode));
    let groups: [Group; 9] = [
        ("A-A deadlock", true, |k, m| {
            lock_mode(&k.x1, m);
            lock_mode(&k.x2, m);
        }),
        ("A-B-B-A deadlock", true, |k, m| k.events("AB BA", m)),
        ("A-B-B-C-C-A deadlock", true, |k, m| k.events("AB BC CA", m)),
        ("A-B-C-A-B-C deadlock", true, |k, m| k.events("AB CA BC", m)),
        ("A-B-B-C-C-D-D-A deadlock", true, |k, m| {
            k.events("AB BC CD DA", m)
        }),
        ("A-B-C-D-B-D-D-A deadlock", true, |k, m| {
            k.events("AB CD BD DA", m)
        }),
        ("A-B-C-D-B-C-D-A deadlock", true, |k, m| {
            k.events("AB CD BC DA", m)
        }),
        ("double unlock", false, |k, m| {
            lock_mode(&k.a, m);
            unlock(&k.a);
            unlock(&k.a);
        }),
        ("initialize held", false, |k, m| {
            lock_mode(&k.a, m);
            k.a.reinit();
        }),
    ];
    let mut cells: Vec<(String, &'static str, bool, Body)> = Vec::new();
    for (col, m) in columns {
        for (group, deadlock, body) in groups {
            let expect = !deadlock || col != "rlock";
            cells.push((group.into(), col, expect, Box::new(move |k| body(k, m))));
        }
    }
    cells
}

fn read_section() -> Vec<(String, &'static str, bool, Body)> {
    let mut cells: Vec<(String, &'static str, bool, Body)> = Vec::new();
    let mut add = |g: &str, col: &'static str, exp: bool, b: Body| {
        cells.push((g.to_owned(), col, exp, b));
    };
    add(
        "recursive read-lock",
        "rlock",
        false,
        Box::new(|k| {
            lock_mode(&k.x1, R);
            lock_mode(&k.x1, R);
        }),
    );
    add(
        "recursive read-lock",
        "rsem",
        true,
        Box::new(|k| {
            lock_mode(&k.x1, RS);
            lock_mode(&k.x1, RS);
        }),
    );
    add(
        "recursive read-lock #2",
        "rlock",
        false,
        Box::new(|k| {
            lock_mode(&k.x1, R);
            lock_mode(&k.x2, R);
        }),
    );
    add(
        "recursive read-lock #2",
        "rsem",
        true,
        Box::new(|k| {
            lock_mode(&k.x1, RS);
            lock_mode(&k.x2, RS);
        }),
    );
    add(
        "mixed read-write-lock",
        "rlock",
        true,
        Box::new(|k| {
            lock_mode(&k.x1, R);
            lock_mode(&k.x2, W);
        }),
    );
    add(
        "mixed read-write-lock",
        "rsem",
        true,
        Box::new(|k| {
            lock_mode(&k.x1, RS);
            lock_mode(&k.x2, W);
        }),
    );
    add(
        "mixed write-read-lock",
        "rlock",
        true,
        Box::new(|k| {
            lock_mode(&k.x1, W);
            lock_mode(&k.x2, R);
        }),
    );
    add(
        "mixed write-read-lock",
        "rsem",
        true,
        Box::new(|k| {
            lock_mode(&k.x1, W);
            lock_mode(&k.x2, RS);
        }),
    );
    add(
        "mixed read-lock/lock-write ABBA",
        "rlock",
        true,
        Box::new(|k| {
            pair_modes(&k.x1, R, &k.y1, W);
            pair_modes(&k.y1, W, &k.x1, W);
        }),
    );
    add(
        "mixed read-lock/lock-write ABBA",
        "rsem",
        true,
        Box::new(|k| {
            pair_modes(&k.x1, RS, &k.y1, W);
            pair_modes(&k.y1, W, &k.x1, W);
        }),
    );
    add(
        "mixed read-lock/lock-read ABBA",
        "rlock",
        false,
        Box::new(|k| {
            pair_modes(&k.x1, R, &k.y1, W);
            pair_modes(&k.y1, W, &k.x1, R);
        }),
    );
    add(
        "mixed read-lock/lock-read ABBA",
        "rsem",
        true,
        Box::new(|k| {
            pair_modes(&k.x1, RS, &k.y1, W);
            pair_modes(&k.y1, W, &k.x1, RS);
        }),
    );
    add(
        "mixed write-lock/lock-write ABBA",
        "rlock",
        true,
        Box::new(|k| {
            pair_modes(&k.x1, W, &k.y1, W);
            pair_modes(&k.y1, W, &k.x1, W);
        }),
    );
    add(
        "mixed write-lock/lock-write ABBA",
        "rsem",
        true,
        Box::new(|k| {
            pair_modes(&k.x1, W, &k.y1, W);
            pair_modes(&k.y1, W, &k.x1, W);
        }),
    );
    add(
        "chain cached mixed R-L/L-W ABBA",
        "rlock",
        true,
        Box::new(|k| {
            pair_modes(&k.x1, R, &k.y1, W);
            pair_modes(&k.y1, W, &k.x1, R);
            pair_modes(&k.y1, W, &k.x1, W);
        }),
    );
    cells
}

/// The 3-event rwlock matrices, labelled by body (the kernel's last two labels are swapped
/// against their bodies; both are silent).
fn three_event() -> Vec<(String, &'static str, bool, Body)> {
    // One event {p -> q}: lock indexes (0 = X, 1 = Y, 2 = Z) and their modes.
    type Event = (usize, usize, (Mode, Mode));
    type Group = (&'static str, [Event; 3], bool);
    let groups: [Group; 4] = [
        (
            "rlock W1R2/W2R3/W3R1",
            [(0, 1, (W, R)), (1, 2, (W, R)), (2, 0, (W, R))],
            true,
        ),
        (
            "rlock W1W2/R2R3/W3R1",
            [(0, 1, (W, W)), (1, 2, (R, R)), (2, 0, (W, R))],
            true,
        ),
        (
            "rlock W1W2/R2R3/R3W1",
            [(0, 1, (W, R)), (1, 2, (R, R)), (2, 0, (W, W))],
            false,
        ),
        (
            "rlock W1R2/R2R3/W3W1",
            [(0, 1, (W, W)), (1, 2, (R, R)), (2, 0, (R, W))],
            false,
        ),
    ];
    let orders: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut cells: Vec<(String, &'static str, bool, Body)> = Vec::new();
    for (label, events, expect) in groups {
        for order in orders {
            let name = format!("{label}/{}{}{}", order[0] + 1, order[1] + 1, order[2] + 1);
            cells.push((
                name,
                "rlock",
                expect,
                Box::new(move |k| {
                    let pick = |i: usize| -> &LockMap {
                        match i {
                            0 => &k.x1,
                            1 => &k.y1,
                            _ => &k.z1,
                        }
                    };
                    for &e in &order {
                        let (p, q, (pm, qm)) = events[e];
                        pair_modes(pick(p), pm, pick(q), qm);
                    }
                }),
            ));
        }
    }
    cells
}

#[test]
fn locking_selftest_matrix() {
    let _h = start();
    let mut rows = Vec::new();
    let all = main_table()
        .into_iter()
        .chain(read_section())
        .chain(three_event());
    for (group, column, expect_report, body) in all {
        let got_report = run_cell(&*body);
        rows.push(Row {
            group,
            column,
            expect_report,
            got_report,
        });
    }
    println!(
        "{:<40} {:<6} {:<8} {:<8} result",
        "group", "column", "expect", "got"
    );
    let verdict = |r: bool| if r { "FAILURE" } else { "SUCCESS" };
    let mut failed = 0;
    for r in &rows {
        let ok = r.expect_report == r.got_report;
        failed += usize::from(!ok);
        println!(
            "{:<40} {:<6} {:<8} {:<8} {}",
            r.group,
            r.column,
            verdict(r.expect_report),
            verdict(r.got_report),
            if ok { "ok" } else { "MISMATCH" }
        );
    }
    let must_report = rows.iter().filter(|r| r.expect_report).count();
    println!(
        "{} cells ({} must report, {} must stay silent): {} passed, {} failed",
        rows.len(),
        must_report,
        rows.len() - must_report,
        rows.len() - failed,
        failed
    );
    assert_eq!(rows.len(), 93);
    assert_eq!(must_report, 71);
    assert_eq!(failed, 0, "locking selftest cells disagree with the kernel");
}
