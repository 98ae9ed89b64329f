//! The fast path against the slow path, on random operation sequences: the same sequence is
//! run with the fast paths live (on a fresh thread, and on one that ran sequences before: its
//! slots hold old entries, memos and marks), with lock_stat on (which sends every acquisition
//! and release to the general paths), and with the chain cache off (no cache answers: every
//! nested acquisition is validated under the graph lock). The reports, the held stack after
//! every operation and the final dependencies (their kinds, first sites and the instance
//! pairs kept) must be the same: on these sequences, whose runs of one class are at most four
//! long; the last test shows the case where the caches keep fewer pairs (the verdicts still
//! the same).
//!
//! Operations: acquisitions in every mode, trylocks, subclasses, nest locks and three sites;
//! LIFO and out-of-order releases; mode and subclass changes of held locks; pin and unpin;
//! detach and attach; `might_lock`; a dynamic key unregistered and registered again; loops
//! that re-take a fixed nest (the shortcuts' case); and a small depth limit in some runs.

mod common;

use std::panic::Location;

use common::*;
use lockdep::{DynamicKey, LockMap, Mode};

struct World {
    maps: Vec<&'static LockMap>,
    key: &'static DynamicKey,
    sites: [&'static Location<'static>; 3],
}

fn world() -> World {
    let key: &'static DynamicKey = Box::leak(Box::new(DynamicKey::new("dyn")));
    let leak = |m: LockMap| -> &'static LockMap { Box::leak(Box::new(m)) };
    // Four maps of one class ("same": one construction site) for same-class nesting: runs of
    // up to four instances, whose top can be released and the run grown again.
    let same = || leak(LockMap::new("same"));
    let maps = vec![
        leak(LockMap::new("a")),
        leak(LockMap::new("b")),
        leak(LockMap::new("c")),
        same(),
        same(),
        same(),
        same(),
        leak(LockMap::with_dynamic_key("dy1", key)),
        leak(LockMap::with_dynamic_key("dy2", key)),
    ];
    let sites = [Location::caller(), Location::caller(), Location::caller()];
    World { maps, key, sites }
}

/// One operation of a sequence.
#[derive(Clone, Copy, Debug)]
enum Op {
    Acquire {
        map: usize,
        mode: Mode,
        trylock: bool,
        subclass: u8,
        site: usize,
        /// The nest lock, by map.
        nest: Option<usize>,
    },
    Release {
        map: usize,
        /// `release_mode` in this mode (held so or not), else `release`.
        mode: Option<Mode>,
    },
    SetMode {
        map: usize,
        /// `change_held_mode` from this mode (held so or not), else `set_held_mode`.
        from: Option<Mode>,
        mode: Mode,
    },
    SetSubclass {
        map: usize,
        subclass: u8,
    },
    Pin {
        map: usize,
    },
    Unpin {
        map: usize,
    },
    DetachAttach {
        map: usize,
    },
    MightLock {
        map: usize,
    },
    KeyChurn {
        register: bool,
    },
    ReleaseAll,
    /// A fixed nest re-taken three times: the shortcuts' case.
    NestLoop {
        outer: usize,
        inner: usize,
    },
}

/// A random operation, given the maps held now.
fn random_op(rng: &mut Rng, w: &World, held: &[usize]) -> Op {
    let pick = |rng: &mut Rng| held[rng.below(held.len())];
    let r = rng.below(100);
    if r < 45 || held.is_empty() {
        Op::Acquire {
            map: rng.below(w.maps.len()),
            mode: if rng.below(3) == 0 {
                MODES[rng.below(4)]
            } else {
                Mode::Exclusive
            },
            trylock: rng.below(8) == 0,
            subclass: if rng.below(6) == 0 {
                rng.below(3) as u8
            } else {
                0
            },
            site: rng.below(3),
            nest: (!held.is_empty() && rng.below(6) == 0).then(|| pick(rng)),
        }
    } else if r < 80 {
        // Mostly LIFO.
        let k = if rng.below(3) == 0 {
            rng.below(held.len())
        } else {
            held.len() - 1
        };
        Op::Release {
            map: held[k],
            mode: (rng.below(2) == 0).then(|| MODES[rng.below(4)]),
        }
    } else if r < 84 {
        Op::SetMode {
            map: pick(rng),
            from: (rng.below(2) == 0).then(|| MODES[rng.below(4)]),
            mode: MODES[rng.below(4)],
        }
    } else if r < 86 {
        Op::SetSubclass {
            map: pick(rng),
            subclass: rng.below(3) as u8,
        }
    } else if r < 88 {
        Op::Pin { map: pick(rng) }
    } else if r < 90 {
        Op::Unpin { map: pick(rng) }
    } else if r < 91 {
        Op::DetachAttach { map: pick(rng) }
    } else if r < 92 {
        Op::MightLock {
            map: rng.below(w.maps.len()),
        }
    } else if r < 94 {
        Op::KeyChurn {
            register: rng.below(2) == 0,
        }
    } else if r < 96 {
        Op::ReleaseAll
    } else {
        Op::NestLoop {
            outer: rng.below(3),
            inner: 3 + rng.below(4),
        }
    }
}

fn apply(w: &World, op: Op, held: &mut Vec<usize>) {
    let m = |i: usize| w.maps[i];
    match op {
        Op::Acquire {
            map,
            mode,
            trylock,
            subclass,
            site,
            nest,
        } => lockdep::acquire(m(map), subclass, mode, trylock, nest.map(m), w.sites[site]),
        Op::Release { map, mode: None } => lockdep::release(m(map), w.sites[0]),
        Op::Release {
            map,
            mode: Some(mode),
        } => lockdep::release_mode(m(map), mode, w.sites[0]),
        Op::SetMode {
            map,
            from: None,
            mode,
        } => lockdep::set_held_mode(m(map), mode),
        Op::SetMode {
            map,
            from: Some(from),
            mode,
        } => lockdep::change_held_mode(m(map), from, mode),
        Op::SetSubclass { map, subclass } => lockdep::set_held_subclass(m(map), subclass),
        Op::Pin { map } => lockdep::pin(m(map)),
        Op::Unpin { map } => lockdep::unpin(m(map)),
        Op::DetachAttach { map } => {
            if let Some(d) = lockdep::detach(m(map)) {
                d.attach();
            }
        }
        Op::MightLock { map } => lockdep::might_lock(m(map), 0, Mode::Exclusive, w.sites[2]),
        Op::KeyChurn { register } => {
            if w.key.is_registered() {
                w.key.unregister();
            }
            if register {
                w.key.register();
            }
        }
        Op::ReleaseAll => {
            while let Some(i) = held.pop() {
                lockdep::release(m(i), w.sites[1]);
            }
        }
        Op::NestLoop { outer, inner } => {
            for _ in 0..3 {
                lockdep::acquire(m(outer), 0, Mode::Exclusive, false, None, w.sites[0]);
                lockdep::acquire(m(inner), 0, Mode::Exclusive, false, None, w.sites[1]);
                lockdep::release(m(inner), w.sites[1]);
                lockdep::release(m(outer), w.sites[0]);
            }
        }
    }
}

/// Runs the sequence of `seed` (fast paths live unless `slow`); returns what it saw after
/// every operation. Now and then the last few operations are replayed, as they were or
/// without their nest locks (the same locks at the same sites over whatever the stack's
/// slots kept from the first time: stale nest locks, pins and memos).
fn run(w: &World, seed: u64, paths: Paths) -> Vec<String> {
    lockdep::reset();
    if !w.key.is_registered() {
        w.key.register();
    }
    lockdep::set_lock_stat(paths == Paths::General);
    lockdep::set_chain_cache(paths != Paths::Uncached);
    let mut rng = Rng(seed.wrapping_mul(2_654_435_761).wrapping_add(12_345));
    lockdep::set_max_depth(if rng.below(2) == 0 {
        2 + rng.below(3)
    } else {
        lockdep::DEFAULT_MAX_DEPTH
    });
    take();
    let map_index = |instance: usize| {
        w.maps
            .iter()
            .position(|m| std::ptr::from_ref::<LockMap>(m) as usize == instance)
    };
    let mut log = Vec::new();
    let mut held: Vec<usize> = Vec::new();
    let mut done: Vec<Op> = Vec::new();
    for step in 0..40 + rng.below(80) {
        let ops = if done.len() >= 4 && rng.below(10) == 0 {
            let k = 4 + rng.below(done.len().min(12) - 3);
            let mut again = done[done.len() - k..].to_vec();
            // Half the time without the nest locks: the same locks at the same sites, plain.
            if rng.below(2) == 0 {
                for op in &mut again {
                    if let Op::Acquire { nest, .. } = op {
                        *nest = None;
                    }
                }
            }
            again
        } else {
            vec![random_op(&mut rng, w, &held)]
        };
        for op in ops {
            apply(w, op, &mut held);
            done.push(op);
            // The validator's stack is the truth (a re-taken lock may not be pushed).
            let now = lockdep::held_locks();
            held = now.iter().filter_map(|d| map_index(d.instance)).collect();
            let stack: Vec<String> = now
                .iter()
                .map(|d| {
                    let i = map_index(d.instance).map_or(-1, |i| i as i64);
                    format!(
                        "{}:{i}:{:?}:{}:{}",
                        d.class_name,
                        d.mode,
                        d.trylock,
                        d.site.line()
                    )
                })
                .collect();
            let reports: Vec<String> = take().iter().map(|r| format!("{:?}", r.kind())).collect();
            log.push(format!(
                "{step}: {op:?} | held {stack:?} | reports {reports:?}"
            ));
        }
    }
    while let Some(i) = held.pop() {
        lockdep::release(w.maps[i], w.sites[1]);
    }
    let reports: Vec<String> = take().iter().map(|r| format!("{:?}", r.kind())).collect();
    log.push(format!("end: reports {reports:?}"));
    let mut deps: Vec<String> = lockdep::dependencies()
        .iter()
        .map(|d| format!("{}->{} {:?}", d.from, d.to, d.kinds))
        .collect();
    deps.sort();
    log.push(format!("dependencies {deps:?}"));
    log.push(format!("dependency sites {:?}", dot_edges()));
    log.push(format!(
        "instance pairs {}",
        lockdep::stats().instance_pairs
    ));
    lockdep::set_lock_stat(false);
    lockdep::set_chain_cache(true);
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
    log
}

/// Which paths a run takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Paths {
    /// The fast paths, as in a program.
    Fast,
    /// Every operation on the general paths (lock_stat on), the caches in use.
    General,
    /// The general paths with the chain cache off.
    Uncached,
}

/// The edges of [`lockdep::dot`] (kinds and first sites), the class numbers replaced by
/// the class names, sorted (the numbers and the order depend on slot reuse).
fn dot_edges() -> Vec<String> {
    let dot = lockdep::dot();
    let mut names = std::collections::HashMap::new();
    for line in dot.lines() {
        if let Some((node, label)) = line.trim().split_once(" [label=") {
            if !node.contains("->") {
                names.insert(node.to_owned(), label.trim_end_matches("];").to_owned());
            }
        }
    }
    let mut edges: Vec<String> = dot
        .lines()
        .filter_map(|line| {
            let (pair, label) = line.trim().split_once(" [label=")?;
            let (from, to) = pair.split_once(" -> ")?;
            Some(format!("{} -> {} {label}", names[from], names[to]))
        })
        .collect();
    edges.sort();
    edges
}

/// The first line where `got` and `want` differ, with the lines before it.
fn first_difference(got: &[String], want: &[String]) -> Option<String> {
    let k = (0..got.len().max(want.len())).find(|&k| got.get(k) != want.get(k))?;
    let mut s = String::new();
    for line in &want[k.saturating_sub(4)..k] {
        s += &format!("    both: {line}\n");
    }
    s += &format!(
        "    general: {}\n    this:    {}",
        want.get(k).map_or("-", |x| x),
        got.get(k).map_or("-", |x| x)
    );
    Some(s)
}

#[test]
fn the_fast_path_gives_the_slow_paths_verdicts() {
    let _h = start();
    lockdep::set_report_repeats(true);
    let w: &'static World = Box::leak(Box::new(world()));
    let seeds: u64 = std::env::var("FAST_SLOW_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    for seed in 0..seeds {
        let slow = run(w, seed, Paths::General);
        // A fresh thread (empty slots), then this thread (slots of every earlier sequence).
        let fresh = std::thread::spawn(move || run(w, seed, Paths::Fast))
            .join()
            .unwrap();
        let reused = run(w, seed, Paths::Fast);
        let uncached = run(w, seed, Paths::Uncached);
        for (name, fast) in [
            ("the fast path on a fresh thread", &fresh),
            ("the fast path on a used thread", &reused),
            ("no chain cache", &uncached),
        ] {
            if let Some(d) = first_difference(fast, &slow) {
                panic!("seed {seed}, {name}:\n{d}");
            }
        }
    }
    lockdep::set_report_repeats(false);
}

/// The one place where the caches keep fewer instance pairs than the validation with the
/// chain cache off (see `set_chain_cache`): an ordered run of one class, grown through a
/// trylock, whose order with the next shard a path of recorded pairs already gives. The
/// same inversions are reported with the cache on and off (each pair of shards taken in the
/// inverted order after the program), and the cache keeps no more pairs than the
/// validation without it.
#[test]
fn a_run_ordered_by_a_path_of_pairs_gives_the_same_verdicts_with_the_cache_on_and_off() {
    let _h = start();
    let s: Vec<&'static LockMap> = (0..7)
        .map(|_| -> &'static LockMap { Box::leak(Box::new(LockMap::new("S"))) })
        .collect();
    // Each step: the shards taken (`true`: a trylock), then released in the order taken.
    let program: [&[(usize, bool)]; 4] = [
        &[(1, false), (2, false)],
        &[(0, false), (1, false), (2, true), (3, false), (4, false)],
        &[(5, false), (6, false)],
        &[(0, false), (1, false), (3, true), (5, false), (6, false)],
    ];
    let run = |cache: bool| -> (usize, Vec<(usize, usize)>) {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let (mut pairs, mut reported) = (0, Vec::new());
                    for i in 0..7 {
                        for j in i + 1..7 {
                            lockdep::reset();
                            lockdep::set_chain_cache(cache);
                            for step in program {
                                for &(k, trylock) in step {
                                    if trylock {
                                        try_lock(s[k]);
                                    } else {
                                        lock(s[k]);
                                    }
                                }
                                step.iter().for_each(|&(k, _)| unlock(s[k]));
                            }
                            assert_eq!(take().len(), 0, "the program itself is ordered");
                            pairs = lockdep::stats().instance_pairs;
                            lock(s[j]);
                            lock(s[i]);
                            unlock(s[i]);
                            unlock(s[j]);
                            if count_cycles(&take()) > 0 {
                                reported.push((i, j));
                            }
                            lockdep::set_chain_cache(true);
                        }
                    }
                    (pairs, reported)
                })
                .join()
                .unwrap()
        })
    };
    let (cached_pairs, cached) = run(true);
    let (uncached_pairs, uncached) = run(false);
    assert_eq!(cached, uncached, "the same inversions reported");
    assert!(!cached.is_empty());
    assert!(
        cached_pairs <= uncached_pairs,
        "{cached_pairs} pairs with the cache, {uncached_pairs} without"
    );
}
