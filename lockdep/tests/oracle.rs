//! Property test: random lock sequences from several threads, checked against a small
//! reference oracle that tracks held locks and dependencies itself and searches for strong
//! cycles by brute force (depth-first enumeration of every simple path in the
//! (class, mode the last edge acquired it in) product graph, with its own table of which
//! holding blocks which acquisition). Per acquisition, the validator must find a cycle exactly
//! when the oracle does, and the final dependency sets must be equal. The modes include
//! upgradable reads.

mod common;

use std::collections::{HashMap, HashSet};
use std::panic::Location;

use common::*;
use lockdep::{DepKind, LockClassKey, LockMap, Mode};
use proptest::prelude::*;

const N: usize = 4;
static KEYS: [LockClassKey; N] = [
    LockClassKey::new(),
    LockClassKey::new(),
    LockClassKey::new(),
    LockClassKey::new(),
];
const NAMES: [&str; N] = ["L0", "L1", "L2", "L3"];

#[derive(Clone, Copy, Debug)]
enum Op {
    Acquire {
        lock: usize,
        mode: Mode,
        try_: bool,
    },
    /// Release the held lock at this index of the thread's held list.
    Release {
        at: usize,
    },
}

type RawOp = (bool, usize, u8, bool);

/// Turns raw random choices into a well-formed per-thread sequence: releases only held
/// locks (in any order), acquires only locks the thread does not hold, and releases
/// everything at the end.
fn normalize(raw: &[RawOp]) -> Vec<Op> {
    let mut held: Vec<usize> = Vec::new();
    let mut ops = Vec::new();
    for &(release, lock, mode, try_) in raw {
        if (release && !held.is_empty()) || held.len() == N {
            let at = lock % held.len();
            held.remove(at);
            ops.push(Op::Release { at });
        } else {
            let lock = (0..N)
                .map(|i| (lock + i) % N)
                .find(|l| !held.contains(l))
                .unwrap();
            let mode = match mode % 4 {
                0 => Mode::Exclusive,
                1 => Mode::Read,
                2 => Mode::RecursiveRead,
                _ => Mode::Upgradable,
            };
            held.push(lock);
            ops.push(Op::Acquire { lock, mode, try_ });
        }
    }
    while !held.is_empty() {
        held.pop();
        ops.push(Op::Release { at: held.len() });
    }
    ops
}

// ------------------------------------------------------------------------------------ oracle

/// Can an acquisition in mode `a` wait for a holder of the same lock in mode `h`? Written out
/// as a table, independently of the validator's rule (see `Mode`'s docs).
fn blocks(a: Mode, h: Mode) -> bool {
    use Mode::*;
    let col = |h| match h {
        Exclusive => 0,
        Read => 1,
        RecursiveRead => 2,
        Upgradable => 3,
    };
    const TABLE: [[bool; 4]; 4] = [
        // holder: Exclusive, Read, RecursiveRead, Upgradable
        [true, true, true, true],    // acquirer Exclusive
        [true, true, true, false],   // acquirer Read
        [true, false, false, false], // acquirer RecursiveRead
        [true, true, true, true],    // acquirer Upgradable
    ];
    TABLE[col(a)][col(h)]
}

/// An exact dependency kind: the mode `prev` was held in, the mode `next` was taken in.
type Kind = (Mode, Mode);

#[derive(Default)]
struct Oracle {
    /// (from, to) -> kinds
    edges: HashMap<(usize, usize), HashSet<Kind>>,
}

impl Oracle {
    /// The same kind as far as blocking goes: the validator keeps one dependency per distinct
    /// holding (writer, reader, upgradable) and acquisition mode.
    fn norm(k: Kind) -> Kind {
        let h = match k.0 {
            Mode::RecursiveRead => Mode::Read,
            m => m,
        };
        (h, k.1)
    }

    /// Is there a strong closed walk through the new edge `p -(k)-> n`? Enumerates every
    /// simple path of product states from n to p.
    fn closes_strong_cycle(&self, p: usize, n: usize, k: Kind) -> bool {
        fn dfs(
            o: &Oracle,
            at: usize,
            entered: Mode,
            p: usize,
            k: Kind,
            on_path: &mut HashSet<(usize, Mode)>,
        ) -> bool {
            if at == p && blocks(entered, k.0) {
                return true;
            }
            for (&(from, to), kinds) in &o.edges {
                if from != at {
                    continue;
                }
                for &(held, taken) in kinds {
                    if !blocks(entered, held) {
                        continue;
                    }
                    let s = (to, taken);
                    if on_path.insert(s) {
                        let found = dfs(o, to, taken, p, k, on_path);
                        on_path.remove(&s);
                        if found {
                            return true;
                        }
                    }
                }
            }
            false
        }
        let mut on_path = HashSet::new();
        on_path.insert((n, k.1));
        dfs(self, n, k.1, p, k, &mut on_path)
    }

    /// Runs one thread's ops; returns, per op, whether a cycle was found.
    fn run(&mut self, ops: &[Op]) -> Vec<bool> {
        // Each held lock: (lock, mode, trylock, whether its own acquisition closed a cycle and
        // so left dependencies into it unrecorded).
        let mut held: Vec<(usize, Mode, bool, bool)> = Vec::new();
        let mut out = Vec::new();
        for op in ops {
            match *op {
                Op::Release { at } => {
                    held.remove(at);
                    out.push(false);
                }
                Op::Acquire { lock, mode, try_ } => {
                    let mut cycle = false;
                    if !try_ {
                        for &(h, hm, htry, hunrec) in held.iter().rev() {
                            let k = Oracle::norm((hm, mode));
                            let present =
                                self.edges.get(&(h, lock)).is_some_and(|s| s.contains(&k));
                            if !present {
                                if self.closes_strong_cycle(h, lock, k) {
                                    // Reported, not recorded: the locks below `h` do not
                                    // reach `lock` through it, so the walk goes on.
                                    cycle = true;
                                    continue;
                                }
                                self.edges.entry((h, lock)).or_default().insert(k);
                            }
                            // The locks below reach `lock` through `h` unless `h` is a
                            // trylock, a recursive read (whose acquisition waits for no
                            // reader: the path through it would not be strong), or a lock
                            // whose own acquisition closed a cycle (its dependencies from
                            // the locks below were not all recorded).
                            if !htry && hm != Mode::RecursiveRead && !hunrec {
                                break;
                            }
                        }
                    }
                    held.push((lock, mode, try_, cycle));
                    out.push(cycle);
                }
            }
        }
        out
    }

    fn dependencies(&self) -> Vec<(String, String, Vec<DepKind>)> {
        let mut v: Vec<_> = self
            .edges
            .iter()
            .map(|(&(f, t), k)| {
                let mut k: Vec<DepKind> = k.iter().map(|&(h, n)| DepKind::of(h, n)).collect();
                k.sort();
                k.dedup();
                (NAMES[f].to_owned(), NAMES[t].to_owned(), k)
            })
            .collect();
        v.sort();
        v
    }
}

// --------------------------------------------------------------------------------- validator

fn maps() -> &'static [LockMap; N] {
    static MAPS: std::sync::OnceLock<[LockMap; N]> = std::sync::OnceLock::new();
    MAPS.get_or_init(|| std::array::from_fn(|i| LockMap::with_key(NAMES[i], &KEYS[i])))
}

fn run_validator(ops: Vec<Op>) -> Vec<bool> {
    on_thread(move || {
        let maps = maps();
        let mut held: Vec<usize> = Vec::new();
        let mut out = Vec::new();
        for op in ops {
            let before = lockdep::stats().cycles_found;
            match op {
                Op::Release { at } => {
                    let l = held.remove(at);
                    lockdep::release(&maps[l], Location::caller());
                }
                Op::Acquire { lock, mode, try_ } => {
                    lockdep::acquire(&maps[lock], 0, mode, try_, None, Location::caller());
                    held.push(lock);
                }
            }
            out.push(lockdep::stats().cycles_found > before);
        }
        out
    })
}

fn check(threads: &[Vec<Op>]) -> Result<(), TestCaseError> {
    let _h = start();
    lockdep::set_report_each_cycle_once(false);
    let mut oracle = Oracle::default();
    for (t, ops) in threads.iter().enumerate() {
        let want = oracle.run(ops);
        let got = run_validator(ops.clone());
        prop_assert_eq!(&got, &want, "thread {} ops {:?}", t, ops);
    }
    let got: Vec<_> = lockdep::dependencies()
        .into_iter()
        .map(|d| (d.from, d.to, d.kinds))
        .collect();
    prop_assert_eq!(got, oracle.dependencies());
    // Only cycle reports (and nothing else) were delivered.
    prop_assert!(take()
        .iter()
        .all(|r| matches!(r, lockdep::Report::CircularDependency(_))));
    Ok(())
}

fn raw_ops() -> impl Strategy<Value = Vec<RawOp>> {
    prop::collection::vec(
        (any::<bool>(), 0..N, any::<u8>(), prop::bool::weighted(0.2)),
        0..14,
    )
}

proptest! {
    // 200 cases by default; PROPTEST_CASES overrides (e.g. for a long run).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200),
        ..ProptestConfig::default()
    })]

    #[test]
    fn validator_agrees_with_brute_force_oracle(threads in prop::collection::vec(raw_ops(), 1..4)) {
        let threads: Vec<Vec<Op>> = threads.iter().map(|r| normalize(r)).collect();
        check(&threads)?;
    }
}

/// The harness is not vacuous: a known strong cycle and a known non-strong one.
#[test]
fn oracle_harness_sees_cycles_and_non_cycles() {
    use Mode::*;
    let acq = |lock, mode| Op::Acquire {
        lock,
        mode,
        try_: false,
    };
    let rel = Op::Release { at: 1 };
    let rel0 = Op::Release { at: 0 };
    // L0 -EN-> L1, then L1 -EN-> L0: a cycle at the last acquire.
    let t1 = vec![acq(0, Exclusive), acq(1, Exclusive), rel, rel0];
    let t2 = vec![acq(1, Exclusive), acq(0, Exclusive), rel, rel0];
    let mut o = Oracle::default();
    assert_eq!(o.run(&t1), [false; 4]);
    assert_eq!(o.run(&t2), [false, true, false, false]);
    check(&[t1, t2]).unwrap();
    // Recursive readers: L0 -SR-> L1, L1 -SR-> L0 is not strong.
    let t1 = vec![acq(0, RecursiveRead), acq(1, RecursiveRead), rel, rel0];
    let t2 = vec![acq(1, RecursiveRead), acq(0, RecursiveRead), rel, rel0];
    let mut o = Oracle::default();
    o.run(&t1);
    assert_eq!(o.run(&t2), [false; 4]);
    check(&[t1, t2]).unwrap();
}
