//! Opt-in per-class contention statistics: the kernel's `/proc/lock_stat` for one process
//! (`Documentation/locking/lockstat.rst`): per lock class, how often it was acquired and
//! contended, how long acquisitions waited and how long the lock was held (min / avg / max
//! and percentiles, in `hdrhistogram` histograms), and the sites that waited most.
//!
//! Off by default; off, an acquisition or release pays one relaxed load of the switch. On,
//! each thread counts into its own table (a mutex only it takes while it runs, and a reader
//! when it merges them), so threads do not share a cache line per event.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;

use crate::class::ClassId;
use crate::graph_lock::graph_lock;
use crate::held::record::{now_ns, Holder};
use crate::held::slot::tagged;
use crate::held::Find;
use crate::map::LockMap;
use crate::mode::Mode;

static ON: AtomicBool = AtomicBool::new(false);

/// Every running thread's table.
static TABLES: Mutex<Vec<Arc<Mutex<Table>>>> = Mutex::new(Vec::new());

/// The counts of exited threads, merged per class when each exits (so that memory stays
/// bounded by the running threads' tables plus one set of counts per class, whatever the
/// thread churn).
static RETIRED: Mutex<Option<hashbrown::HashMap<Key, Counts>>> = Mutex::new(None);

/// Bumped each time lock_stat is switched on: a thread's table drops the holds and the wait
/// it recorded under an earlier switch-on (a release made while lock_stat was off left them
/// there), so a hold is always timed within one on-period.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// This thread's table; at thread exit its counts go to [`RETIRED`] and the table is freed.
struct Mine(Option<Arc<Mutex<Table>>>);

impl Drop for Mine {
    fn drop(&mut self) {
        let Some(t) = self.0.take() else {
            return;
        };
        // The list's lock first, then the table's (as `lock_stat` takes them).
        let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        tables.retain(|other| !Arc::ptr_eq(other, &t));
        let table = t.lock().unwrap_or_else(|e| e.into_inner());
        let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
        let retired = retired.get_or_insert_with(hashbrown::HashMap::new);
        for (k, c) in table.counts.iter().filter(|(_, c)| c.acquisitions > 0) {
            retired.entry(*k).or_insert_with(Counts::new).merge(c);
        }
    }
}

thread_local! {
    static MINE: RefCell<Mine> = const { RefCell::new(Mine(None)) };
}

/// How many contention sites a class keeps (the kernel keeps four).
const TOP_SITES: usize = 4;

type Key = (ClassId, &'static str);

#[derive(Default)]
struct Table {
    /// Each class's place in `counts` (a class keeps its place until the thread exits, so
    /// that `holding` can name it by index: a release hashes nothing).
    index: hashbrown::HashMap<Key, usize>,
    counts: Vec<(Key, Counts)>,
    /// The locks this thread holds: instance with mode (as `held::slot::tagged` makes it),
    /// place in `counts`, and the time their hold started, in acquisition order.
    holding: Vec<(usize, usize, u64)>,
    /// The start of the current contended wait.
    waiting: Option<(usize, u64)>,
    /// The holding (see [`Holder`]) of the thread this table belongs to, once it has one: a
    /// guard released on another thread finds its hold here ([`release_from`]).
    holder: Option<Holder>,
    /// The [`EPOCH`] its holds and wait were recorded under.
    epoch: u64,
}

impl Table {
    /// The place of `key`'s counts, made on its first event.
    #[inline]
    fn place(&mut self, key: Key) -> usize {
        let counts = &mut self.counts;
        *self.index.entry(key).or_insert_with(|| {
            counts.push((key, Counts::new()));
            counts.len() - 1
        })
    }

    /// The hold a release of `map` ends: the latest one in `mode` if it is given and there is
    /// one, else the latest of `map` (as the held stack picks the entry).
    fn hold_of(&self, map: &LockMap, mode: Option<Mode>) -> Option<usize> {
        Find::of(map.instance(), mode).pick(&self.holding, |h| h.0)
    }
}

/// This thread's hold of `map` in mode `from` (else its latest of `map`) goes on in mode `to`
/// (a downgrade or an upgrade: the hold is not restarted).
pub(crate) fn change_mode(map: &LockMap, from: Mode, to: Mode) {
    with_table(|t| {
        if let Some(i) = t.hold_of(map, Some(from)) {
            t.holding[i].0 = tagged(map.instance(), to);
        }
    });
}

struct Counts {
    acquisitions: u64,
    contentions: u64,
    wait: Histogram<u64>,
    hold: Histogram<u64>,
    sites: hashbrown::HashMap<&'static Location<'static>, u64>,
}

impl Counts {
    fn new() -> Counts {
        Counts {
            acquisitions: 0,
            contentions: 0,
            // Two significant digits (1%), growing as needed (see `record`): a few KiB per
            // class and thread for times up to hours.
            wait: Histogram::new(2).expect("2 significant digits is a valid precision"),
            hold: Histogram::new(2).expect("2 significant digits is a valid precision"),
            sites: hashbrown::HashMap::new(),
        }
    }

    fn merge(&mut self, o: &Counts) {
        self.acquisitions += o.acquisitions;
        self.contentions += o.contentions;
        // Auto-resizing histograms of one precision: adding cannot fail.
        let _ = self.wait.add(&o.wait);
        let _ = self.hold.add(&o.hold);
        for (s, n) in &o.sites {
            *self.sites.entry(s).or_default() += n;
        }
    }
}

/// Whether lock_stat is on. One relaxed load, made on the slow paths only: while it is on,
/// every thread's record carries a bit that sends its fast paths there
/// (`record::set_slow_all`), so off it costs the fast paths nothing of their own.
#[inline]
pub(crate) fn on() -> bool {
    // Relaxed: a switch; an event racing with the switch is counted or not.
    ON.load(Ordering::Relaxed)
}

/// Turns lock_stat on or off (off by default). Counts kept so far stay until
/// [`reset_lock_stat`]. Locks already held when it is turned on have no hold time. Thread-safe.
pub fn set_lock_stat(on: bool) {
    if on {
        // Relaxed: a number the tables compare with; an event racing with the switch is
        // counted under the old epoch or the new one, either way within one on-period.
        EPOCH.fetch_add(1, Ordering::Relaxed);
    }
    // Every thread's record gets the slow-path bit, under the same mutex as the switch.
    crate::held::record::set_slow_all(|| {
        // Relaxed: see `on`.
        ON.store(on, Ordering::Relaxed);
        on || !crate::settings::chain_cache()
    });
}

/// Forgets every count. Thread-safe.
pub fn reset_lock_stat() {
    for t in TABLES.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
        // In place: the places that `holding` names stay valid.
        for (_, c) in &mut t.counts {
            *c = Counts::new();
        }
    }
    *RETIRED.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

fn with_table(f: impl FnOnce(&mut Table)) {
    let _ = MINE.try_with(|m| {
        let Ok(mut m) = m.try_borrow_mut() else {
            return;
        };
        let t = m.0.get_or_insert_with(|| {
            let t = Arc::new(Mutex::new(Table::default()));
            TABLES
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::clone(&t));
            t
        });
        let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
        if t.holder.is_none() {
            t.holder = crate::thread::current_holder();
        }
        // Relaxed: see `EPOCH`.
        let epoch = EPOCH.load(Ordering::Relaxed);
        if t.epoch != epoch {
            t.holding.clear();
            t.waiting = None;
            t.epoch = epoch;
        }
        f(&mut t);
    });
}

/// An acquisition of `map` (subclass `subclass`) was recorded.
pub(crate) fn acquire(map: &LockMap, subclass: u8, mode: Mode) {
    let key = (map.cached(subclass), map.name());
    let now = now_ns();
    with_table(|t| {
        let i = t.place(key);
        t.counts[i].1.acquisitions += 1;
        // The instance with the mode, as a held slot's first word: a release that names its
        // mode ends the hold it started.
        t.holding.push((tagged(map.instance(), mode), i, now));
    });
}

/// The acquisition of `map` is contended at `site`.
pub(crate) fn contended(map: &LockMap, site: &'static Location<'static>) {
    let now = now_ns();
    with_table(|t| {
        let Some(&(_, i, _)) = t
            .holding
            .iter()
            .rev()
            .find(|h| Find::any(map.instance()).matches_word(h.0))
        else {
            return;
        };
        let c = &mut t.counts[i].1;
        c.contentions += 1;
        *c.sites.entry(site).or_default() += 1;
        t.waiting = Some((map.instance(), now));
    });
}

/// The contended wait for `map` is over: its time is recorded, and the hold starts now.
pub(crate) fn acquired(map: &LockMap) {
    let now = now_ns();
    with_table(|t| {
        let Some((instance, since)) = t.waiting.take() else {
            return;
        };
        if instance != map.instance() {
            return;
        }
        let Some(h) = t
            .holding
            .iter_mut()
            .rev()
            .find(|h| Find::any(instance).matches_word(h.0))
        else {
            return;
        };
        h.2 = now;
        let i = h.1;
        record(&mut t.counts[i].1.wait, now.saturating_sub(since));
    });
}

/// Records `ns` in `h`, which grows to hold it (a histogram made by `Histogram::new` starts
/// with a tiny range, and `saturating_record` would clamp every value to it). Only a value
/// past what a histogram can grow to is clamped.
fn record(h: &mut Histogram<u64>, ns: u64) {
    if h.record(ns).is_err() {
        h.saturating_record(ns);
    }
}

/// The hold of `map` starts again now: a condvar wait re-locked it after sleeping, and the
/// sleep (the mutex was free meanwhile) is no part of the hold. (A re-lock that had to wait
/// restarts it in [`acquired`].)
pub(crate) fn hold_restarts(map: &LockMap) {
    let now = now_ns();
    with_table(|t| {
        if let Some(h) = t
            .holding
            .iter_mut()
            .rev()
            .find(|h| Find::any(map.instance()).matches_word(h.0))
        {
            h.2 = now;
        }
    });
}

/// `map` was released: its hold time is recorded.
pub(crate) fn release(map: &LockMap, mode: Option<Mode>) {
    let now = now_ns();
    with_table(|t| {
        let Some(i) = t.hold_of(map, mode) else {
            return;
        };
        let (_, place, since) = t.holding.remove(i);
        record(&mut t.counts[place].1.hold, now.saturating_sub(since));
    });
}

/// `map`, acquired by the holding `holder` on another thread, was released on this one (a
/// guard sent between threads, [`crate::release_from`]): the hold is recorded in the
/// acquiring thread's table, where it started, and leaves that table's holds. Takes the
/// table list's mutex and the acquiring thread's table mutex (never held together with this
/// thread's own).
pub(crate) fn release_from(holder: Holder, map: &LockMap, mode: Option<Mode>) {
    let now = now_ns();
    let tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    for t in tables.iter() {
        let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
        if t.holder != Some(holder) {
            continue;
        }
        // Relaxed: see `EPOCH`. A hold from before the last switch-on is not timed.
        if t.epoch != EPOCH.load(Ordering::Relaxed) {
            return;
        }
        if let Some(i) = t.hold_of(map, mode) {
            let (_, place, since) = t.holding.remove(i);
            record(&mut t.counts[place].1.hold, now.saturating_sub(since));
        }
        return;
    }
}

/// Times of one kind (waits or holds) of one class, in nanoseconds.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeStat {
    /// How many were timed.
    pub count: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Mean.
    pub avg_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
}

impl TimeStat {
    fn of(h: &Histogram<u64>) -> TimeStat {
        if h.is_empty() {
            return TimeStat::default();
        }
        TimeStat {
            count: h.len(),
            min_ns: h.min(),
            avg_ns: h.mean() as u64,
            max_ns: h.max(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
        }
    }
}

/// One lock class's statistics.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassStat {
    /// The class name, as reports print it.
    pub class: String,
    /// Acquisitions recorded (blocking and successful tries).
    pub acquisitions: u64,
    /// Acquisitions that had to wait (the raw lock's try failed).
    pub contentions: u64,
    /// The waits of contended acquisitions.
    pub wait: TimeStat,
    /// The holds (from acquisition, or the end of its wait, to release).
    pub hold: TimeStat,
    /// The sites whose acquisitions were contended most, with their counts, most first (at
    /// most four).
    pub top_sites: Vec<(&'static Location<'static>, u64)>,
}

/// Every class's statistics ([`lock_stat`]), most contended first. `Display` is a text table
/// in the spirit of `/proc/lock_stat`; [`to_json`](Self::to_json) gives JSON.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockStat {
    /// One entry per class with at least one acquisition.
    pub classes: Vec<ClassStat>,
}

/// Every class's contention statistics, merged over all threads (exited ones included).
/// Takes each thread's table lock in turn and the graph lock once. Thread-safe.
pub fn lock_stat() -> LockStat {
    let mut merged: HashMap<Key, Counts> = HashMap::new();
    if let Some(retired) = RETIRED.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        for (k, c) in retired {
            merged.entry(*k).or_insert_with(Counts::new).merge(c);
        }
    }
    for t in TABLES.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let t = t.lock().unwrap_or_else(|e| e.into_inner());
        for (k, c) in t.counts.iter().filter(|(_, c)| c.acquisitions > 0) {
            merged.entry(*k).or_insert_with(Counts::new).merge(c);
        }
    }
    let g = graph_lock();
    let mut classes: Vec<ClassStat> = merged
        .into_iter()
        .map(|((id, name), c)| {
            let mut sites: Vec<_> = c.sites.into_iter().collect();
            sites.sort_by(|a, b| {
                b.1.cmp(&a.1)
                    .then_with(|| a.0.to_string().cmp(&b.0.to_string()))
            });
            sites.truncate(TOP_SITES);
            ClassStat {
                class: g
                    .graph
                    .class(id)
                    .map_or_else(|| name.to_owned(), |c| c.name.to_string()),
                acquisitions: c.acquisitions,
                contentions: c.contentions,
                wait: TimeStat::of(&c.wait),
                hold: TimeStat::of(&c.hold),
                top_sites: sites,
            }
        })
        .collect();
    drop(g);
    classes.sort_by(|a, b| {
        b.contentions
            .cmp(&a.contentions)
            .then(b.acquisitions.cmp(&a.acquisitions))
            .then_with(|| a.class.cmp(&b.class))
    });
    LockStat { classes }
}

impl LockStat {
    /// The statistics of the class named `class`, if it has any.
    pub fn class(&self, class: &str) -> Option<&ClassStat> {
        self.classes.iter().find(|c| c.class == class)
    }

    /// The statistics as JSON: `{"classes": [{"class", "acquisitions", "contentions",
    /// "wait_ns": {"count", "min", "avg", "max", "p50", "p99"}, "hold_ns": {..},
    /// "top_sites": [{"site", "contentions"}]}]}`. (Written here rather than through
    /// `serde_json`: its `PartialEq<Value>` impls for integers would change type inference
    /// in every crate that depends on the validator.)
    pub fn to_json(&self) -> String {
        fn times(t: &TimeStat) -> String {
            format!(
                r#"{{"count":{},"min":{},"avg":{},"max":{},"p50":{},"p99":{}}}"#,
                t.count, t.min_ns, t.avg_ns, t.max_ns, t.p50_ns, t.p99_ns
            )
        }
        let classes: Vec<String> = self
            .classes
            .iter()
            .map(|c| {
                let sites: Vec<String> = c
                    .top_sites
                    .iter()
                    .map(|(s, n)| format!(r#"{{"site":{},"contentions":{n}}}"#, json_str(&s.to_string())))
                    .collect();
                format!(
                    r#"{{"class":{},"acquisitions":{},"contentions":{},"wait_ns":{},"hold_ns":{},"top_sites":[{}]}}"#,
                    json_str(&c.class),
                    c.acquisitions,
                    c.contentions,
                    times(&c.wait),
                    times(&c.hold),
                    sites.join(",")
                )
            })
            .collect();
        format!(r#"{{"classes":[{}]}}"#, classes.join(","))
    }
}

/// `s` as a JSON string literal (RFC 8259: quote, backslash and control characters escaped).
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn us(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1000.0)
}

/// The classes the text table shows, the most contended first.
const DISPLAY_ROWS: usize = 30;

impl fmt::Display for LockStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "lock_stat version 0.1 (times in microseconds)")?;
        writeln!(
            f,
            "{:<40} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "class name",
            "contentions",
            "acquisitions",
            "waittime-min",
            "waittime-avg",
            "waittime-max",
            "waittime-p99",
            "holdtime-min",
            "holdtime-avg",
            "holdtime-max"
        )?;
        writeln!(f, "{}", "-".repeat(150))?;
        // "-" where nothing was timed (no contended wait; no hold that ended while on).
        let t = |t: &TimeStat, ns: u64| {
            if t.count == 0 {
                "-".to_owned()
            } else {
                us(ns)
            }
        };
        for c in self.classes.iter().take(DISPLAY_ROWS) {
            let (w, h) = (&c.wait, &c.hold);
            writeln!(
                f,
                "{:<40} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
                c.class,
                c.contentions,
                c.acquisitions,
                t(w, w.min_ns),
                t(w, w.avg_ns),
                t(w, w.max_ns),
                t(w, w.p99_ns),
                t(h, h.min_ns),
                t(h, h.avg_ns),
                t(h, h.max_ns)
            )?;
            for (site, n) in &c.top_sites {
                writeln!(f, "{:<40} {n:>10} [contended at {site}]", "")?;
            }
        }
        if let Some(more) = self
            .classes
            .len()
            .checked_sub(DISPLAY_ROWS)
            .filter(|&n| n > 0)
        {
            writeln!(
                f,
                "... {more} more classes, less contended (the structured value and the JSON have \
                 them all)"
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_time_is_kept_whatever_its_size() {
        let mut h = Counts::new().hold;
        for ns in [2, 1_500, 50_000_000, 3_600_000_000_000] {
            record(&mut h, ns);
        }
        assert_eq!(h.len(), 4);
        assert_eq!(h.min(), 2);
        // Two significant digits: within 1%.
        let max = h.max();
        assert!(max.abs_diff(3_600_000_000_000) <= 36_000_000_000, "{max}");
        let p50 = h.value_at_quantile(0.5);
        assert!(p50.abs_diff(1_500) <= 15, "{p50}");
    }

    fn class(name: &str, contentions: u64) -> ClassStat {
        ClassStat {
            class: name.to_owned(),
            acquisitions: 1,
            contentions,
            wait: TimeStat::default(),
            hold: TimeStat {
                count: 1,
                min_ns: 1500,
                avg_ns: 1500,
                max_ns: 1500,
                p50_ns: 1500,
                p99_ns: 1500,
            },
            top_sites: Vec::new(),
        }
    }

    #[test]
    fn the_table_shows_the_most_contended_rows_and_dashes_for_untimed_waits() {
        let s = LockStat {
            classes: (0..DISPLAY_ROWS as u64 + 5)
                .map(|i| class(&format!("c{i}"), 100 - i))
                .collect(),
        };
        let text = s.to_string();
        let rows: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(rows.len(), DISPLAY_ROWS + 1, "{text}");
        assert!(rows[0].starts_with("c0 "), "{text}");
        assert!(
            rows[DISPLAY_ROWS].starts_with("... 5 more classes"),
            "{text}"
        );
        let cells: Vec<&str> = rows[0].split_whitespace().collect();
        assert_eq!(
            &cells[3..7],
            ["-", "-", "-", "-"],
            "no wait was timed: {text}"
        );
        assert_eq!(&cells[7..], ["1.50", "1.50", "1.50"], "{text}");
    }
}
