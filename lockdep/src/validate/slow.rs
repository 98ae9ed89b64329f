//! The slow paths: an acquisition validated under the graph lock (its reports built there
//! and delivered after the section ends, before the push), and a release that the fast pop
//! did not do (a lock not on top, marked or nest-covered entries, or a lock not held).

use crate::chain::{self, Hit};
use crate::graph_lock::{graph_lock, GraphGuard};
use crate::held::{Find, HeldLock};
use crate::lock_stat;
use crate::map::LockMap;
use crate::mode::Mode;
use crate::nesting;
use crate::pair_cache;
use crate::report::{self, build, episode, Capacity, Report};
use crate::settings;
use crate::thread::{self, with_state, Release};

use super::new_chain::{self, validate_chain, Verdict};
use super::pairs::{may_hold_instance, pairs_checked, run_of, Acquiring};
use super::replays;
use super::Site;

/// Validates and pushes what the general path could not. `held` is the graph-lock section
/// the class was resolved in, if it was: the validation runs in it instead of a new one, and
/// it ends before any report is delivered.
#[cold]
pub(super) fn acquire_slow(
    mut entry: HeldLock,
    map: &LockMap,
    nest_name: &str,
    mut held: Option<GraphGuard>,
) {
    // Whether the validation ran and was stopped by a report (or a dying class): then the
    // entry's dependencies were not all recorded, and its slot says so to later walks.
    let mut unrecorded = false;
    // A chain found invalid before, counted again instead of validated (see `replays`).
    let mut replayed = None;
    // What to keep if the delivery comes to a replay: (chain key, sites, graph shape).
    let mut keep = None;
    let reports = with_state(|st| {
        let mut reports = Vec::new();
        if entry.nest_lock != 0 && st.find(entry.nest_lock).is_none() {
            let g = held.get_or_insert_with(graph_lock);
            reports.push(build::nest_lock_not_held(&g.graph, st, &entry, nest_name));
            entry.nest_lock = 0;
        }
        let limit = settings::max_depth();
        if entry.nest_lock == 0 && st.depth() == limit {
            let episode = episode::next(Capacity::HeldLocks);
            reports.push(build::depth_exhausted(st, limit, episode));
        }
        if entry.trylock || entry.class.is_none() {
            return reports;
        }
        let key = st.next(entry).key();
        // A chain that nests a class in itself is cached with a mark (see `chain`).
        let nested = st.entries().iter().any(|h| h.class == entry.class);
        let me = Acquiring::of(&entry);
        // Taken whether used or not: a kept scan is good for this acquisition only.
        let kept = st.pairs.take_scan(me.tag(st.depth()));
        let scan = if nested {
            kept.unwrap_or_else(|| run_of(st, me))
        } else {
            None
        };
        let hit = match st.cache.lookup(key) {
            _ if !settings::chain_cache() => Hit::Miss,
            Hit::Miss => chain::global_lookup(key),
            h => h,
        };
        match hit {
            Hit::Plain if !nested => return reports,
            Hit::Nested if pairs_checked(st, me, scan) => {
                st.cache.insert(key, true);
                return reports;
            }
            _ => {}
        }
        // A chain of the kind `replays` keeps: no nest lock, no report yet, the chain cache
        // on, and the lock's own instance not held (recursive locking, which neither the
        // chain key nor the sites tell).
        let entries = st.entries();
        let sites = (entry.nest_lock == 0
            && reports.is_empty()
            && settings::chain_cache()
            && !entries.iter().any(|h| h.instance == entry.instance))
        .then(|| replays::sites_of(entries.iter(), &entry, nested));
        if let Some(sites) = sites {
            if let Some(r) = replays::find(key, sites) {
                replayed = Some(r);
                unrecorded = true;
                return reports;
            }
        }
        let mut g = held.take().unwrap_or_else(graph_lock);
        let epoch = nesting::pair_epoch();
        let shape = replays::Shape::now();
        let mut checked = Vec::new();
        let verdict = validate_chain(&mut g, st, &entry, scan, &mut reports, &mut checked);
        unrecorded = verdict == Verdict::Invalid;
        if let Some(sites) = sites {
            // Only reports about what the key, the sites and the shape cover (see `replays`).
            let covered = reports.iter().all(|r| {
                matches!(
                    r,
                    Report::CircularDependency(_)
                        | Report::RecursiveLocking(_)
                        | Report::MissingNestingAnnotation(_)
                )
            });
            if unrecorded && checked.is_empty() && covered && !reports.is_empty() {
                keep = Some((key, sites, shape));
            }
        }
        // The mark: a hit on this chain must look at the held instances (see `chain::Hit`).
        let marked = nested || may_hold_instance(&g, st, &entry);
        if verdict == Verdict::Valid {
            chain::global_insert(key, marked);
        }
        drop(g);
        if verdict == Verdict::Valid {
            st.cache.insert(key, marked);
        }
        if !checked.is_empty() {
            // Checked under `epoch`: if it moved meanwhile, the next check empties the cache.
            st.sync_pairs(epoch);
            // Room for a pair per held instance: a deep run keeps its pairs round after round.
            st.pairs.reserve(st.depth());
            for &(i, kind) in &checked {
                let from = st.entry(i).pair_key();
                st.pairs.insert(from, entry.pair_key(), entry.class, kind);
                st.mark_paired(i);
            }
            map.mark_paired();
            // The pair with the top checked, so every held instance of the class has a path
            // to `entry` now (each had its own pair, or the run had a path to the top).
            if let Some((fp, top)) = scan {
                if verdict == Verdict::Valid && checked.iter().any(|&(i, _)| i == top) {
                    let grown = pair_cache::fingerprint(fp, entry.pair_key());
                    st.pairs.set_run(entry.class, grown, entry.pair_key());
                }
            }
        }
        reports
    });
    // A section kept for a chain that turned out cached (or not to be validated) ends here,
    // before the delivery.
    drop(held);
    let Some(reports) = reports else {
        return;
    };
    if let Some(r) = replayed {
        r.count();
        // Counted when they were found: each found again counts again.
        new_chain::count_cycles(r.cycles());
    } else if let Some((key, sites, shape)) = keep {
        if let Some(r) = report::deliver_replayable(reports) {
            replays::keep(key, sites, shape, r);
        }
    } else {
        // May panic (Policy::Panic): then the lock is not pushed, and the caller never blocks
        // on the real lock, so the held stack stays exact. The stack may have changed
        // meanwhile (a handler that takes locks), so the entry's chain key is computed afresh.
        report::deliver(reports);
    }
    with_state(|st| {
        let next = st.next(entry);
        st.push(next);
        if unrecorded {
            st.mark_unrecorded(st.depth() - 1);
        }
    });
}

/// See [`crate::release`]: what the fast pop did not do (the lock is not on top, or some
/// entry is marked or nest-covered). Out of line, called last, so the fast path stays a leaf.
#[inline(never)]
fn release_general(map: &LockMap, site: Site, mode: Option<Mode>) {
    let find = Find::of(map.instance(), mode);
    if thread::release_below(find) {
        return;
    }
    let found = thread::release(find);
    if !matches!(found, Release::Released) {
        release_slow(map, found, site);
    }
}

/// [`release_general`] for [`crate::release`] (`mode` `None`) and [`crate::release_mode`], with
/// lock_stat's hook (the slow path only, as in [`acquire_counted`](super::acquire_counted)). The
/// site comes before the mode: where the fast path has it, so that the tail call moves no register.
/// With lock_stat off, itself one tail call: lock_stat's hook is out of line, so this function
/// makes no frame (inlined, the hook made one of seven saved registers and 216 bytes).
#[inline(never)]
pub(crate) fn release_general_counted(map: &LockMap, site: Site, mode: Option<Mode>) {
    if lock_stat::on() {
        count_then_release_general(map, site, mode);
    } else {
        release_general(map, site, mode);
    }
}

/// [`release_general_counted`] while lock_stat is on: lock_stat's hook, then the general path.
#[cold]
#[inline(never)]
fn count_then_release_general(map: &LockMap, site: Site, mode: Option<Mode>) {
    lock_stat::release(map, mode);
    release_general(map, site, mode);
}

/// See [`crate::release`]: the entry carried marks, or the lock was not held.
#[cold]
pub(crate) fn release_slow(map: &LockMap, found: Release, site: Site) {
    if let Release::Marked { paired: true, .. } = found {
        map.mark_paired();
    }
    // Only a report needs the name (which allocates for an unnamed map).
    if let Release::NotHeld
    | Release::Marked {
        pinned: Some(_), ..
    } = found
    {
        thread::report_release(
            found,
            &map.report_name(),
            map.cached(0),
            map.instance(),
            site,
        );
    }
}
