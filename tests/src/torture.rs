//! The hazptr torture test (after the kernel's `kernel/rcu/hazptrtorture.c`).
//!
//! One **updater** repeatedly publishes a fresh element, unpublishes the old one,
//! `synchronize`s on it, and ages it through a pipe of [`PIPE_LEN`] stages, one stage per
//! later update; at the end of the pipe the element is poisoned and recycled. **Readers**
//! protect the current element and check, while protected, that it is neither poisoned nor
//! aged: a protected element cannot have passed a single synchronize, so every reader must
//! see pipe count 0 (the kernel's RCU torture tolerates 1; hazard pointers allow us to be
//! stricter). Readers nest guards past the primary slots and detach some, so backup slots
//! and promotion are exercised. A **retirer** publishes boxed objects on a second pointer
//! and hands the old ones to `retire`; each object counts its drops, so "freed exactly
//! once" is checked at the end, and a reader that saw a dropped object would see its
//! poisoned canary. **Synchronizers** call `synchronize` on whatever element is current,
//! so the shared scan batches several callers.
//!
//! Configurations mirror the kernel series' (`READERS0`, `READERS4`, `SLOWPATH`,
//! `LOCKDEP`, and a thread sweep standing in for `CPU128`/`CPU256`).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};

/// Stages an element ages through after it is unpublished.
pub const PIPE_LEN: usize = 10;
const ALIVE: u64 = 0x600d_600d_600d_600d;
const POISON: u64 = 0xdead_dead_dead_dead;

/// A torture configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Name printed in the summary (`READERS4`, `SWEEP16`, ...).
    pub name: String,
    /// Reader threads.
    pub readers: usize,
    /// Extra threads that only call `synchronize` (to fill shared-scan batches).
    pub synchronizers: usize,
    /// Force every acquire onto the slow path (backup slots).
    pub slow_path: bool,
    /// Fence mode of the domain under test.
    pub mode: FenceMode,
    /// Also register and unregister lockdep dynamic keys under lock traffic.
    pub lockdep: bool,
}

impl Config {
    /// The named configuration: `READERS0`, `READERS4`, `SLOWPATH`, `ASYMMETRIC`, `LOCKDEP`,
    /// or `SWEEP<n>` (n reader threads plus n/8 synchronizers, n in 2..=256).
    pub fn named(name: &str) -> Option<Config> {
        let base = |readers| Config {
            name: name.to_string(),
            readers,
            synchronizers: 1,
            slow_path: false,
            mode: FenceMode::Symmetric,
            lockdep: false,
        };
        Some(match name {
            "READERS0" => Config {
                synchronizers: 0,
                ..base(0)
            },
            "READERS4" => base(4),
            "SLOWPATH" => Config {
                slow_path: true,
                ..base(4)
            },
            "ASYMMETRIC" => Config {
                mode: FenceMode::Asymmetric,
                ..base(4)
            },
            "LOCKDEP" => Config {
                lockdep: true,
                ..base(4)
            },
            _ => {
                let n: usize = name.strip_prefix("SWEEP")?.parse().ok()?;
                if !(2..=256).contains(&n) {
                    return None;
                }
                Config {
                    synchronizers: n / 8,
                    ..base(n)
                }
            }
        })
    }

    /// Every configuration CI runs: the kernel's list plus a sweep from 2 to 64 threads.
    pub fn all() -> Vec<Config> {
        ["READERS0", "READERS4", "SLOWPATH", "ASYMMETRIC", "LOCKDEP"]
            .iter()
            .map(|s| s.to_string())
            .chain([2, 8, 16, 64].iter().map(|n| format!("SWEEP{n}")))
            .map(|n| Config::named(&n).expect("known name"))
            .collect()
    }
}

/// What a run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Configuration name.
    pub name: String,
    /// Elements read under protection.
    pub reads: u64,
    /// Updates (publish, unpublish, synchronize, age).
    pub updates: u64,
    /// Objects retired by the retirer.
    pub retired: u64,
    /// Readers that saw an element with a non-zero pipe count (must be 0).
    pub bad_pipe: u64,
    /// Readers that saw a poisoned element or a dropped object (must be 0).
    pub poisoned: u64,
    /// Retired objects not dropped exactly once after the domain was dropped (must be 0).
    pub bad_frees: u64,
    /// Lockdep reports during the run (must be 0; LOCKDEP only).
    pub lockdep_reports: u64,
    /// Dynamic keys registered and unregistered (LOCKDEP only).
    pub keys_cycled: u64,
    /// `synchronize` calls that waited, and shared-scan batches.
    pub waits: u64,
    /// Shared-scan batches completed.
    pub batches: u64,
    /// Acquires on the slow path.
    pub slow_path: u64,
}

impl Summary {
    /// Whether every invariant held (the run always makes at least one update).
    pub fn passed(&self) -> bool {
        self.failure().is_none()
    }

    /// The first violated invariant, in words.
    pub fn failure(&self) -> Option<&'static str> {
        if self.bad_pipe > 0 {
            Some("a reader held an element that had passed a synchronize")
        } else if self.poisoned > 0 {
            Some("a reader saw a poisoned element or a dropped object")
        } else if self.bad_frees > 0 {
            Some("retired objects were not dropped exactly once")
        } else if self.lockdep_reports > 0 {
            Some("lockdep reported during the run")
        } else {
            None
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<10} {} reads={} updates={} retired={} bad_pipe={} poisoned={} bad_frees={} \
             lockdep_reports={} keys_cycled={} waits={} batches={} slow_path={}",
            self.name,
            match self.failure() {
                None => "PASS".to_string(),
                Some(why) => format!("FAIL ({why})"),
            },
            self.reads,
            self.updates,
            self.retired,
            self.bad_pipe,
            self.poisoned,
            self.bad_frees,
            self.lockdep_reports,
            self.keys_cycled,
            self.waits,
            self.batches,
            self.slow_path
        )
    }
}

struct Elem {
    canary: AtomicU64,
    pipe_count: AtomicUsize,
}

/// A retired object: counts its drops; its canary is poisoned on drop.
struct Boxed {
    canary: AtomicU64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Boxed {
    fn drop(&mut self) {
        // Relaxed: readers that could see this store read freed memory anyway; the canary
        // makes such a bug loud in a normal run (valgrind makes it loud always).
        self.canary.store(POISON, Ordering::Relaxed);
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct Counts {
    reads: AtomicU64,
    bad_pipe: AtomicU64,
    poisoned: AtomicU64,
}

/// Run `config` for `duration` and report. Never panics on a violation: the summary says.
pub fn run(config: &Config, duration: Duration) -> Summary {
    let domain: Arc<Domain> = Arc::new(Domain::new(config.mode));
    domain.set_force_slow_path(config.slow_path);
    let pool: Arc<Vec<Elem>> = Arc::new(
        (0..PIPE_LEN + 4)
            .map(|_| Elem {
                canary: AtomicU64::new(ALIVE),
                pipe_count: AtomicUsize::new(0),
            })
            .collect(),
    );
    let current = Arc::new(AtomicPtr::new(&pool[0] as *const Elem as *mut Elem));
    let drops = Arc::new(AtomicUsize::new(0));
    let boxed = Arc::new(AtomicPtr::new(Box::into_raw(Box::new(Boxed {
        canary: AtomicU64::new(ALIVE),
        drops: drops.clone(),
    }))));
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let deadline = Instant::now() + duration;

    let mut handles = Vec::new();
    for r in 0..config.readers {
        let (d, current, boxed, stop, counts) = (
            domain.clone(),
            current.clone(),
            boxed.clone(),
            stop.clone(),
            counts.clone(),
        );
        handles.push(thread::spawn(move || {
            reader(r, &d, &current, &boxed, &stop, &counts)
        }));
    }
    for _ in 0..config.synchronizers {
        let (d, current, stop) = (domain.clone(), current.clone(), stop.clone());
        handles.push(thread::spawn(move || {
            // Relaxed: a stop flag with no data attached.
            while !stop.load(Ordering::Relaxed) {
                // Synchronizing on a live element is allowed: it just waits for its readers.
                let _ = d.synchronize(current.load(Ordering::Acquire));
            }
        }));
    }
    let retirer = {
        let (d, boxed, stop, drops) = (domain.clone(), boxed.clone(), stop.clone(), drops.clone());
        thread::spawn(move || {
            let mut retired = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let fresh = Box::into_raw(Box::new(Boxed {
                    canary: AtomicU64::new(ALIVE),
                    drops: drops.clone(),
                }));
                let old = boxed.swap(fresh, Ordering::AcqRel);
                // SAFETY: `old` is unpublished and was allocated with Box::into_raw.
                unsafe { d.retire_box(old) };
                retired += 1;
            }
            retired
        })
    };
    let lockdep = config
        .lockdep
        .then(|| crate::torture::lockdep_load(stop.clone()));

    // The updater runs on this thread.
    let mut updates = 0u64;
    let mut free: Vec<&Elem> = pool[1..].iter().collect();
    let mut pipe: Vec<&Elem> = Vec::new();
    // At least one update, however short the duration or slow the machine: a run that
    // made no update would have checked nothing.
    loop {
        let next = free.pop().expect("pool sized for the pipe");
        // Relaxed: published below by the Release half of `swap`.
        next.pipe_count.store(0, Ordering::Relaxed);
        next.canary.store(ALIVE, Ordering::Relaxed);
        let old = current.swap(next as *const Elem as *mut Elem, Ordering::AcqRel);
        domain.synchronize(old).expect("the updater holds no guard");
        for e in &pipe {
            e.pipe_count.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: pool elements live until the end of this function.
        let old = unsafe { &*old };
        old.pipe_count.store(1, Ordering::Relaxed);
        pipe.insert(0, old);
        if pipe.len() == PIPE_LEN {
            let aged = pipe.pop().expect("non-empty");
            aged.canary.store(POISON, Ordering::Relaxed);
            free.insert(0, aged);
        }
        updates += 1;
        if Instant::now() >= deadline {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("torture thread panicked");
    }
    let retired = retirer.join().expect("retirer panicked") + 1; // + the last published one
    let (keys_cycled, lockdep_reports) = lockdep
        .map(|h| h.join().expect("lockdep load panicked"))
        .unwrap_or((0, 0));
    let stats = domain.stats();
    // Free the last published object through the domain too, then drop the domain: it
    // frees everything still retired.
    // SAFETY: all threads joined; nothing protects or publishes it any more.
    unsafe { domain.retire_box(boxed.swap(std::ptr::null_mut(), Ordering::AcqRel)) };
    drop(Arc::try_unwrap(domain).expect("all threads joined"));
    let dropped = drops.load(Ordering::Relaxed) as u64;
    Summary {
        name: config.name.clone(),
        reads: counts.reads.load(Ordering::Relaxed),
        updates,
        retired,
        bad_pipe: counts.bad_pipe.load(Ordering::Relaxed),
        poisoned: counts.poisoned.load(Ordering::Relaxed),
        bad_frees: retired.abs_diff(dropped),
        lockdep_reports,
        keys_cycled,
        waits: stats.synchronize_waits,
        batches: stats.shared_batches,
        slow_path: stats.slow_path_acquires,
    }
}

fn reader(
    r: usize,
    d: &Domain,
    current: &AtomicPtr<Elem>,
    boxed: &AtomicPtr<Boxed>,
    stop: &AtomicBool,
    counts: &Counts,
) {
    let filler = [0u64; hazptr::PRIMARY_SLOTS];
    let (mut reads, mut bad_pipe, mut poisoned) = (0, 0, 0);
    let mut i = 0u64;
    // Relaxed: a stop flag with no data attached.
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        // Every 7th read nests past the primary slots, so the element lands in a backup slot.
        let _nest: Vec<_> = if i.is_multiple_of(7) {
            filler
                .iter()
                .map(|f| d.protect_addr(f as *const u64))
                .collect()
        } else {
            Vec::new()
        };
        if let Some(g) = d.protect(current) {
            let hold = || (0..i % 64).for_each(|_| std::hint::spin_loop());
            // Relaxed loads: the guard's ordering, not these, forbids seeing later stores.
            let check = |e: &Elem| {
                (
                    e.pipe_count.load(Ordering::Relaxed) != 0,
                    e.canary.load(Ordering::Relaxed) != ALIVE,
                )
            };
            let (aged, bad) = if r == 0 && i.is_multiple_of(5) {
                // Reader 0 detaches every 5th guard (promotion to a backup slot).
                let g = g.detach(d);
                hold();
                // SAFETY: pool elements outlive the run.
                check(unsafe { g.as_ref() })
            } else {
                hold();
                // SAFETY: pool elements outlive the run.
                check(unsafe { g.as_ref() })
            };
            bad_pipe += u64::from(aged);
            poisoned += u64::from(bad);
            reads += 1;
        }
        if let Some(g) = d.protect(boxed) {
            // SAFETY: retired objects are freed only after no guard protects them.
            let canary = unsafe { g.as_ref() }.canary.load(Ordering::Relaxed);
            poisoned += u64::from(canary != ALIVE);
            reads += 1;
        }
    }
    counts.reads.fetch_add(reads, Ordering::Relaxed);
    counts.bad_pipe.fetch_add(bad_pipe, Ordering::Relaxed);
    counts.poisoned.fetch_add(poisoned, Ordering::Relaxed);
}

/// LOCKDEP: lockdep dynamic keys registered and unregistered while other threads take
/// locks of long-lived dynamic keys (so lockdep's bucket lookups run under hazard pointers
/// all the time). Returns (keys cycled, lockdep reports).
fn lockdep_load(stop: Arc<AtomicBool>) -> thread::JoinHandle<(u64, u64)> {
    thread::spawn(move || {
        let reports = Arc::new(Mutex::new(0u64));
        let sink = reports.clone();
        let old = lockdep::set_policy(lockdep::Policy::Callback(Arc::new(move |_r| {
            *sink.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        })));
        let root_key = lockdep::DynamicKey::new("torture-root");
        let root = Arc::new(lockdep::LockMap::with_dynamic_key(
            "torture-root",
            &root_key,
        ));
        let lockers: Vec<_> = (0..2)
            .map(|i| {
                let (stop, root) = (stop.clone(), root.clone());
                thread::spawn(move || {
                    let key = lockdep::DynamicKey::new("torture-queue");
                    let map = lockdep::LockMap::with_dynamic_key("torture-queue", &key);
                    let site = std::panic::Location::caller();
                    let mut n = 0u64;
                    // Relaxed: a stop flag with no data attached.
                    while !stop.load(Ordering::Relaxed) {
                        lockdep::acquire(&root, 0, lockdep::Mode::Exclusive, false, None, site);
                        lockdep::acquire(&map, 0, lockdep::Mode::Exclusive, false, None, site);
                        lockdep::release(&map, site);
                        lockdep::release(&root, site);
                        n += 1;
                    }
                    drop(map);
                    drop(key);
                    n + i
                })
            })
            .collect();
        let mut cycled = 0u64;
        let site = std::panic::Location::caller();
        while !stop.load(Ordering::Relaxed) {
            let key = lockdep::DynamicKey::new("torture-churn");
            let map = lockdep::LockMap::with_dynamic_key("torture-churn", &key);
            lockdep::acquire(&root, 0, lockdep::Mode::Exclusive, false, None, site);
            lockdep::acquire(&map, 0, lockdep::Mode::Exclusive, false, None, site);
            lockdep::release(&map, site);
            lockdep::release(&root, site);
            drop(map);
            drop(key); // unregister: zap the class, synchronize on its bucket
            cycled += 1;
        }
        for l in lockers {
            l.join().expect("locker panicked");
        }
        drop(root);
        drop(root_key);
        lockdep::set_policy(old);
        let n = *reports.lock().unwrap_or_else(|e| e.into_inner());
        (cycled, n)
    })
}
