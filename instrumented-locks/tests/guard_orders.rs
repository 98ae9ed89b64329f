//! Random programs of guards, each run three times: with lockdep's fast path, with every lock
//! operation sent down the general path (`lockdep::set_lock_stat(true)`), and with the chain
//! cache off (`lockdep::set_chain_cache(false)`: every nested acquisition validated as a new
//! chain). The held stacks and the reports must be the same after every step, and every
//! acquisition's recursive-locking verdict must be the one a model of the lock modes gives.
//!
//! The programs mix mutexes (some of one class), two rwlocks taken in every mode (so one
//! thread often holds one rwlock twice or three times, in different modes), upgrades,
//! downgrades, condvar waits, `unlocked`, `bump` and a reentrant mutex, and drop guards in any
//! order. Each program runs three times (the fast path's shortcuts are then in use), then
//! again with one operation changed. An acquisition that would really block on a lock this
//! thread holds is made with a timed try (it times out: no other thread holds anything),
//! which lockdep validates as the blocking acquisition it is.

#![cfg(feature = "validate")]

mod common;

use std::time::Duration;

use instrumented_locks::{
    Condvar, Mutex, MutexGuard, ReentrantMutex, ReentrantMutexGuard, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};
use lockdep::Report;

/// How long an acquisition this thread would deadlock on waits before it gives up.
const GIVE_UP: Duration = Duration::from_micros(100);

/// Number of programs per run, by default (`GUARD_ORDER_PROGRAMS` sets it).
const PROGRAMS: usize = 60;

struct Locks {
    /// m0..m3 named, m4..m6 one class (one construction site).
    m: Vec<Mutex<u32>>,
    rw: Vec<RwLock<u32>>,
    re: ReentrantMutex<u32>,
    cv: Condvar,
}

impl Locks {
    fn new() -> Locks {
        // m0..m3 each at its own site (four classes); m4..m6 at one (one class).
        let mut m = vec![
            Mutex::named(0, "m0"),
            Mutex::named(0, "m1"),
            Mutex::named(0, "m2"),
            Mutex::named(0, "m3"),
        ];
        for _ in 0..3 {
            m.push(Mutex::new(0));
        }
        Locks {
            m,
            rw: vec![RwLock::named(0, "rw0"), RwLock::named(0, "rw1")],
            re: ReentrantMutex::named(0, "re"),
            cv: Condvar::new(),
        }
    }
}

/// A live guard, with the index of its lock (the guards are held, never read).
#[allow(dead_code)]
enum Guard<'a> {
    Mutex(usize, MutexGuard<'a, u32>),
    Read(usize, RwLockReadGuard<'a, u32>),
    ReadRecursive(usize, RwLockReadGuard<'a, u32>),
    Write(usize, RwLockWriteGuard<'a, u32>),
    Upgradable(usize, RwLockUpgradableReadGuard<'a, u32>),
    /// Whether it was the thread's outermost level when it was taken (only that one is on the
    /// held stack), and the guard.
    Reentrant(ReentrantMutexGuard<'a, u32>),
}

impl Guard<'_> {
    /// The rwlock and mode letter (`R`ead, re`C`ursive read, `E`xclusive, `U`pgradable) of
    /// an rwlock guard.
    fn rw_mode(&self) -> Option<(usize, char)> {
        match self {
            Guard::Read(k, _) => Some((*k, 'R')),
            Guard::ReadRecursive(k, _) => Some((*k, 'C')),
            Guard::Write(k, _) => Some((*k, 'E')),
            Guard::Upgradable(k, _) => Some((*k, 'U')),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Lock(usize),
    TryLock(usize),
    Write(usize),
    Read(usize),
    ReadRecursive(usize),
    Upgradable(usize),
    /// Upgrade the guard at this index, if it is an upgradable read.
    Upgrade(usize),
    /// Downgrade the write guard at this index to a read, or to an upgradable read.
    Downgrade(usize),
    DowngradeToUpgradable(usize),
    /// Downgrade the upgradable guard at this index to a read.
    DowngradeUpgradable(usize),
    /// Drop the guard at this index (modulo the number held).
    Drop(usize),
    Reentrant,
    /// A condvar wait (it times out) on the mutex guard at this index.
    Wait(usize),
    Unlocked(usize),
    Bump(usize),
}

fn random_op(rng: &mut common::Rng) -> Op {
    // rw0 three times in four: one rwlock is then often held in several modes at once.
    let (m, rw, i) = (rng.below(7), usize::from(rng.below(4) == 0), rng.below(5));
    match rng.below(100) {
        0..=24 => Op::Lock(m),
        25..=29 => Op::TryLock(m),
        30..=37 => Op::Write(rw),
        38..=45 => Op::Read(rw),
        46..=50 => Op::ReadRecursive(rw),
        51..=57 => Op::Upgradable(rw),
        58..=61 => Op::Upgrade(i),
        62..=63 => Op::Downgrade(i),
        64..=65 => Op::DowngradeToUpgradable(i),
        66..=67 => Op::DowngradeUpgradable(i),
        68..=85 => Op::Drop(i),
        86..=88 => Op::Reentrant,
        89..=92 => Op::Wait(i),
        93..=96 => Op::Unlocked(i),
        _ => Op::Bump(i),
    }
}

/// The modes in which this thread holds rwlock `k`, but the guard at `skip`.
fn modes(gs: &[Guard], k: usize, skip: Option<usize>) -> Vec<char> {
    gs.iter()
        .enumerate()
        .filter(|(j, _)| Some(*j) != skip)
        .filter_map(|(_, g)| g.rw_mode().filter(|m| m.0 == k).map(|m| m.1))
        .collect()
}

/// Whether an acquisition in mode `acquiring` can wait for this thread's own holding in
/// mode `held` of the same rwlock (parking_lot's rules: an upgradable read excludes writers
/// and upgradable reads, and no writer can queue behind it; a plain read can wait behind a
/// queued writer; a recursive read waits only for a writer).
fn waits_for(acquiring: char, held: char) -> bool {
    match acquiring {
        'E' | 'U' => true,
        'R' => held != 'U',
        _ => held == 'E',
    }
}

/// The model's verdict for `op` on the guards `gs`: whether it is a recursive locking.
/// `None` for operations that acquire nothing.
fn expected(gs: &[Guard], op: Op) -> Option<bool> {
    let rw =
        |k: usize, acquiring: char| modes(gs, k, None).iter().any(|h| waits_for(acquiring, *h));
    match op {
        Op::Lock(k) => Some(
            gs.iter()
                .any(|g| matches!(g, Guard::Mutex(i, _) if *i == k)),
        ),
        Op::Write(k) => Some(rw(k, 'E')),
        Op::Read(k) => Some(rw(k, 'R')),
        Op::ReadRecursive(k) => Some(rw(k, 'C')),
        Op::Upgradable(k) => Some(rw(k, 'U')),
        // An upgrade waits for every other holding of the lock.
        Op::Upgrade(i) => match gs.get(i) {
            Some(Guard::Upgradable(k, _)) => Some(!modes(gs, *k, Some(i)).is_empty()),
            _ => None,
        },
        Op::TryLock(_) | Op::Reentrant => Some(false),
        _ => None,
    }
}

/// Runs `op`; returns what it did.
fn run<'a>(l: &'a Locks, gs: &mut Vec<Guard<'a>>, op: Op) -> String {
    let held_rw = |gs: &[Guard], k: usize| modes(gs, k, None);
    match op {
        Op::Lock(k) => {
            let held = gs
                .iter()
                .any(|g| matches!(g, Guard::Mutex(i, _) if *i == k));
            let g = if held {
                l.m[k].try_lock_for(GIVE_UP)
            } else {
                Some(l.m[k].lock())
            };
            let got = g.is_some();
            gs.extend(g.map(|g| Guard::Mutex(k, g)));
            format!("lock m{k} got={got}")
        }
        Op::TryLock(k) => {
            let g = l.m[k].try_lock();
            let got = g.is_some();
            gs.extend(g.map(|g| Guard::Mutex(k, g)));
            format!("try_lock m{k} got={got}")
        }
        Op::Write(k) => {
            let g = if held_rw(gs, k).is_empty() {
                Some(l.rw[k].write())
            } else {
                l.rw[k].try_write_for(GIVE_UP)
            };
            let got = g.is_some();
            gs.extend(g.map(|g| Guard::Write(k, g)));
            format!("write rw{k} got={got}")
        }
        Op::Read(k) => {
            let g = if held_rw(gs, k).contains(&'E') {
                l.rw[k].try_read_for(GIVE_UP)
            } else {
                Some(l.rw[k].read())
            };
            let got = g.is_some();
            gs.extend(g.map(|g| Guard::Read(k, g)));
            format!("read rw{k} got={got}")
        }
        Op::ReadRecursive(k) => {
            let g = if held_rw(gs, k).contains(&'E') {
                l.rw[k].try_read_recursive_for(GIVE_UP)
            } else {
                Some(l.rw[k].read_recursive())
            };
            let got = g.is_some();
            gs.extend(g.map(|g| Guard::ReadRecursive(k, g)));
            format!("read_recursive rw{k} got={got}")
        }
        Op::Upgradable(k) => {
            let h = held_rw(gs, k);
            let g = if h.contains(&'E') || h.contains(&'U') {
                l.rw[k].try_upgradable_read_for(GIVE_UP)
            } else {
                Some(l.rw[k].upgradable_read())
            };
            let got = g.is_some();
            gs.extend(g.map(|g| Guard::Upgradable(k, g)));
            format!("upgradable_read rw{k} got={got}")
        }
        Op::Upgrade(i) if matches!(gs.get(i), Some(Guard::Upgradable(..))) => {
            let Guard::Upgradable(k, u) = gs.remove(i) else {
                unreachable!()
            };
            if held_rw(gs, k).is_empty() {
                gs.insert(i, Guard::Write(k, RwLockUpgradableReadGuard::upgrade(u)));
                format!("upgrade rw{k}")
            } else {
                match RwLockUpgradableReadGuard::try_upgrade_for(u, GIVE_UP) {
                    Ok(w) => {
                        gs.insert(i, Guard::Write(k, w));
                        format!("try_upgrade_for rw{k} ok")
                    }
                    Err(u) => {
                        gs.insert(i, Guard::Upgradable(k, u));
                        format!("try_upgrade_for rw{k} gave up")
                    }
                }
            }
        }
        Op::Downgrade(i) if matches!(gs.get(i), Some(Guard::Write(..))) => {
            let Guard::Write(k, w) = gs.remove(i) else {
                unreachable!()
            };
            gs.insert(i, Guard::Read(k, RwLockWriteGuard::downgrade(w)));
            format!("downgrade rw{k}")
        }
        Op::DowngradeToUpgradable(i) if matches!(gs.get(i), Some(Guard::Write(..))) => {
            let Guard::Write(k, w) = gs.remove(i) else {
                unreachable!()
            };
            let u = RwLockWriteGuard::downgrade_to_upgradable(w);
            gs.insert(i, Guard::Upgradable(k, u));
            format!("downgrade_to_upgradable rw{k}")
        }
        Op::DowngradeUpgradable(i) if matches!(gs.get(i), Some(Guard::Upgradable(..))) => {
            let Guard::Upgradable(k, u) = gs.remove(i) else {
                unreachable!()
            };
            gs.insert(i, Guard::Read(k, RwLockUpgradableReadGuard::downgrade(u)));
            format!("downgrade upgradable rw{k}")
        }
        Op::Drop(i) if !gs.is_empty() => {
            let i = i % gs.len();
            drop(gs.remove(i));
            format!("drop #{i}")
        }
        Op::Reentrant => {
            gs.push(Guard::Reentrant(l.re.lock()));
            "reentrant".into()
        }
        Op::Wait(i) => match gs.get_mut(i) {
            Some(Guard::Mutex(k, g)) => {
                let _ = l.cv.wait_for(g, Duration::from_micros(1));
                format!("wait m{k}")
            }
            _ => "nothing".into(),
        },
        Op::Unlocked(i) => match gs.get_mut(i) {
            Some(Guard::Mutex(k, g)) => {
                MutexGuard::unlocked(g, || {});
                format!("unlocked m{k}")
            }
            _ => "nothing".into(),
        },
        Op::Bump(i) => match gs.get_mut(i) {
            Some(Guard::Mutex(k, g)) => {
                MutexGuard::bump(g);
                format!("bump m{k}")
            }
            Some(Guard::Write(k, g)) => {
                RwLockWriteGuard::bump(g);
                format!("bump rw{k}")
            }
            _ => "nothing".into(),
        },
        _ => "nothing".into(),
    }
}

/// This thread's held locks: class, mode, trylock flag and acquiring line, bottom first.
fn held() -> String {
    lockdep::held_locks()
        .iter()
        .map(|d| {
            let t = if d.trylock { "t" } else { "" };
            format!("{}:{:?}{t}@{}", d.class_name, d.mode, d.site.line())
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A report's text with the addresses in it blanked (they differ from run to run).
fn canonical(r: &Report) -> String {
    let s = r.to_string();
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(at) = rest.find("0x") {
        out.push_str(&rest[..at + 2]);
        rest = rest[at + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        out.push('_');
    }
    out.push_str(rest);
    out
}

/// What this thread should hold for the guards `gs`: a `lock:mode` per held entry, sorted.
/// The reentrant mutex has one entry, its outermost guard's, however often it is held, for as
/// long as any of its guards lives (a nested guard may outlive the outermost one).
fn model_held(gs: &[Guard]) -> Vec<String> {
    let mut held: Vec<String> = gs
        .iter()
        .filter(|g| !matches!(g, Guard::Reentrant(..)))
        .map(|g| match g {
            Guard::Mutex(k, _) if *k < 4 => format!("m{k}:Exclusive"),
            Guard::Mutex(..) => "m456:Exclusive".into(),
            Guard::Read(k, _) => format!("rw{k}:Read"),
            Guard::ReadRecursive(k, _) => format!("rw{k}:RecursiveRead"),
            Guard::Write(k, _) => format!("rw{k}:Exclusive"),
            Guard::Upgradable(k, _) => format!("rw{k}:Upgradable"),
            Guard::Reentrant(..) => unreachable!(),
        })
        .collect();
    if gs.iter().any(|g| matches!(g, Guard::Reentrant(..))) {
        held.push("re:Exclusive".into());
    }
    held.sort();
    held
}

/// What lockdep says this thread holds, as [`model_held`] writes it (by the locks' names;
/// m4..m6 have none).
fn lockdep_held() -> Vec<String> {
    let mut held: Vec<String> = lockdep::held_locks()
        .iter()
        .map(|d| format!("{}:{:?}", d.name.unwrap_or("m456"), d.mode))
        .collect();
    held.sort();
    held
}

/// One run of the programs of `seed`: a line per step (what it did, the held locks, the
/// reports), and the steps where lockdep and the model disagree (on the recursive-locking
/// verdict, or on what is held: a guard's drop, downgrade or upgrade must change its own
/// entry).
fn run_all(l: &Locks, seed: u64, programs: usize) -> (Vec<String>, Vec<String>) {
    let mut rng = common::Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut steps, mut wrong) = (Vec::new(), Vec::new());
    let mut step = |label: String, verdict: Option<bool>, gs: &[Guard]| {
        let reports = common::take();
        let (model, shown) = (model_held(gs), lockdep_held());
        if model != shown {
            wrong.push(format!("{label}: held {shown:?}, the guards {model:?}"));
        }
        if let Some(expect) = verdict {
            let got = reports
                .iter()
                .any(|r| matches!(r, Report::RecursiveLocking(_)));
            if got != expect {
                wrong.push(format!(
                    "{label}: recursive locking expected {expect}, got {got}"
                ));
            }
        }
        let mut line = format!("[{label}] held=[{}]", held());
        for r in &reports {
            line.push_str("\n  ");
            line.push_str(&canonical(r));
        }
        steps.push(line);
    };
    for p in 0..programs {
        if p % 20 == 0 {
            lockdep::reset();
            common::take();
        }
        let len = 3 + rng.below(8);
        let mut prog: Vec<Op> = (0..len).map(|_| random_op(&mut rng)).collect();
        for variant in 0..3 {
            if variant > 0 {
                let j = rng.below(len);
                prog[j] = random_op(&mut rng);
            }
            for rep in 0..3 {
                let mut gs: Vec<Guard> = Vec::new();
                for (j, op) in prog.iter().enumerate() {
                    let verdict = expected(&gs, *op);
                    let did = run(l, &mut gs, *op);
                    step(format!("p{p}v{variant}r{rep} op{j} {did}"), verdict, &gs);
                }
                while gs.pop().is_some() {}
                step(format!("p{p}v{variant}r{rep} end"), None, &gs);
            }
        }
    }
    (steps, wrong)
}

#[test]
fn random_guard_programs_give_the_same_verdicts_on_the_fast_and_general_paths() {
    let _h = common::start();
    lockdep::set_report_repeats(true);
    let programs = std::env::var("GUARD_ORDER_PROGRAMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(PROGRAMS);
    let l = Locks::new();
    let seeds: Vec<u64> = match std::env::var("GUARD_ORDER_SEEDS") {
        Ok(n) => (1..=n.parse().unwrap_or(4)).collect(),
        Err(_) => (1..=8).collect(),
    };
    for seed in seeds {
        lockdep::set_lock_stat(false);
        let (fast, fast_wrong) = run_all(&l, seed, programs);
        lockdep::set_lock_stat(true);
        let (general, general_wrong) = run_all(&l, seed, programs);
        lockdep::set_lock_stat(false);
        // No cache answers: every nested acquisition is validated as a new chain.
        lockdep::set_chain_cache(false);
        let (uncached, uncached_wrong) = run_all(&l, seed, programs);
        lockdep::set_chain_cache(true);
        for (name, wrong) in [
            ("fast path", &fast_wrong),
            ("general path", &general_wrong),
            ("no chain cache", &uncached_wrong),
        ] {
            assert!(wrong.is_empty(), "seed {seed}, {name}: {wrong:#?}");
        }
        for (name, other) in [("fast", &fast), ("no chain cache", &uncached)] {
            let n = other.len().max(general.len());
            if let Some(i) = (0..n).find(|&i| other.get(i) != general.get(i)) {
                panic!(
                    "seed {seed}: {name} and general differ at step {i}:\n{name}: {:?}\ngeneral: {:?}",
                    other.get(i),
                    general.get(i)
                );
            }
        }
    }
    lockdep::set_report_repeats(false);
}

/// A guard program that reports nothing costs no graph-lock section when it runs again: by
/// its third run every acquisition, release, upgrade, downgrade, condvar wait, `unlocked` and
/// `bump` is answered by the thread's caches. (A graph-lock section is a moment every other
/// thread's slow path waits for: a pattern that takes one on every repetition serializes a
/// program behind it.) A program whose third run takes one runs again on fresh locks (other
/// addresses, so other cache sets) and fails only if it does so again.
#[test]
fn a_repeated_guard_program_takes_no_graph_lock_section() {
    let _h = common::start();
    // The third run's sections, or `None` if any run reported (not a valid program).
    let third_run = |prog: &[Op]| -> Option<u64> {
        let l = Locks::new();
        let mut sections = 0;
        for _ in 0..3 {
            let before = lockdep::graph_lock_sections();
            let mut gs: Vec<Guard> = Vec::new();
            for op in prog {
                run(&l, &mut gs, *op);
            }
            while gs.pop().is_some() {}
            sections = lockdep::graph_lock_sections() - before;
            if !common::take().is_empty() {
                return None;
            }
        }
        Some(sections)
    };
    let mut rng = common::Rng(0x5eed_0f57_47e1);
    let mut valid = 0;
    for p in 0..1000 {
        lockdep::reset();
        common::take();
        let len = 3 + rng.below(14);
        let prog: Vec<Op> = (0..len).map(|_| random_op(&mut rng)).collect();
        let Some(first) = third_run(&prog) else {
            continue;
        };
        valid += 1;
        if first != 0 {
            lockdep::reset();
            if let Some(again) = third_run(&prog) {
                assert_eq!(
                    again, 0,
                    "program {p}: {first} sections on its third run, then {again} on other \
                     locks: {prog:?}"
                );
            }
        }
    }
    assert!(valid > 250, "only {valid} valid programs");
}
