//! The qdisc-like churn workload: the userspace `tc qdisc replace dev X root mq`.
//!
//! A device has `queues` transmit queues and a root "mq" qdisc owning one child qdisc per
//! queue. Every qdisc has a lock whose lock class comes from its own [`DynamicKey`], as the
//! kernel's qdiscs register a lockdep key per qdisc. A replace builds a new tree (registering
//! its keys), swaps it in, waits (hazard pointers of a private domain) until no traffic
//! thread still sends on the old tree, and tears it down: the locks are destroyed and each key
//! is unregistered, which unlinks it, zaps its classes and waits for the lookups in its bucket
//! (the measured unregister latency).
//!
//! Traffic threads transmit "packets" on every device: take the root lock (read), then one
//! queue's lock (so lockdep records root -> queue dependencies), and make one key lookup
//! (`KeyHandle::is_registered`, the lookup lockdep makes on a class-cache miss) so that the
//! key table's read side runs all the time, as the cover letter's background readers do. A
//! lookup's read section covers one bucket walk in every wait mode.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};
use instrumented_locks::{Mutex, RwLock};
use lockdep::{DynamicKey, KeyHandle};

use crate::interrupts;
use crate::latency::{summarize, Summary};
use crate::modes::WaitMode;

/// Workload parameters.
#[derive(Clone, Debug)]
pub struct Config {
    /// Transmit queues per device (child qdiscs per tree).
    pub queues: usize,
    /// Replaces per device.
    pub replaces: usize,
    /// Devices, each replaced by its own thread, in parallel.
    pub devices: usize,
    /// Background traffic threads.
    pub readers: usize,
    /// Take two queue locks in both orders once (lockdep must report it).
    pub inject_inversion: bool,
    /// Pin replace thread `i` to the `i`-th allowed CPU and traffic thread `r` to the
    /// `devices + r`-th (the caller checks that there are enough CPUs).
    pub pin: bool,
    /// Draw a progress line on stderr.
    pub progress: bool,
}

/// A child qdisc: one transmit queue.
struct Queue {
    lock: Mutex<u64>,
    key: KeyHandle,
}

/// A root "mq" qdisc with its children; `keys[0]` is the root's key, then one per queue.
struct MqTree {
    root: RwLock<u64>,
    queues: Vec<Queue>,
    keys: Vec<DynamicKey>,
}

impl MqTree {
    /// Builds a tree, registering `queues + 1` keys.
    fn build(queues: usize) -> MqTree {
        let root_key = DynamicKey::new("mq root");
        let root = RwLock::with_dynamic_key(0, &root_key, "mq root lock");
        let mut keys = Vec::with_capacity(queues + 1);
        keys.push(root_key);
        let queues = (0..queues)
            .map(|i| {
                let name = queue_lock_name(i);
                let key = DynamicKey::new(name);
                let q = Queue {
                    lock: Mutex::with_dynamic_key(0, &key, name),
                    key: key.handle(),
                };
                keys.push(key);
                q
            })
            .collect();
        MqTree { root, queues, keys }
    }

    /// Destroys the locks, then unregisters every key; pushes each unregister's latency and
    /// returns the time spent destroying the locks.
    fn teardown(self, latencies_ns: &mut Vec<u64>) -> Duration {
        let MqTree { root, queues, keys } = self;
        let t = Instant::now();
        drop(queues);
        drop(root);
        let locks = t.elapsed();
        for key in keys {
            let t = Instant::now();
            key.unregister();
            latencies_ns.push(t.elapsed().as_nanos() as u64);
        }
        locks
    }
}

/// The lock (and key) name of queue `i`, e.g. "pfifo txq3 lock": made once per index and
/// kept for the process (lock names are `&'static str`; at most 4096 queues).
fn queue_lock_name(i: usize) -> &'static str {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        (0..4096)
            .map(|i| &*Box::leak(format!("pfifo txq{i} lock").into_boxed_str()))
            .collect()
    })[i]
}

/// The hazard-pointer domain that protects the devices' tree pointers (the kernel protects
/// `dev->qdisc` with RCU). Private, so that lockdep's domain statistics count only key-table
/// waits, and the same in every wait mode.
fn tree_domain() -> &'static Domain {
    static DOMAIN: OnceLock<Domain> = OnceLock::new();
    DOMAIN.get_or_init(|| Domain::new(FenceMode::Symmetric))
}

/// A network device: the tree in force, published through an `AtomicPtr` and read under a
/// hazard pointer, so traffic never blocks a replace and a replace never blocks traffic.
struct Device {
    current: AtomicPtr<MqTree>,
}

impl Device {
    fn new(queues: usize) -> Device {
        Device {
            current: AtomicPtr::new(Box::into_raw(Box::new(MqTree::build(queues)))),
        }
    }

    /// Replaces the tree and tears the old one down on this thread; says where the time went.
    fn replace(&self, queues: usize, latencies_ns: &mut Vec<u64>) -> ReplaceTimes {
        let t0 = Instant::now();
        let new = Box::into_raw(Box::new(MqTree::build(queues)));
        let t1 = Instant::now();
        // AcqRel: Release publishes the new tree to traffic's Acquire load in `protect`;
        // Acquire makes the old tree's contents (built by a previous replace) ours.
        let old = self.current.swap(new, Ordering::AcqRel);
        // Traffic may still be sending a packet on the old tree.
        tree_domain()
            .synchronize(old)
            .expect("a replacer holds no tree guard");
        let t2 = Instant::now();
        // SAFETY: `old` came from Box::into_raw, is unpublished (swapped out above), and
        // synchronize returned, so no traffic guard still protects it; only we own it now.
        let tree = unsafe { Box::from_raw(old) };
        let first = latencies_ns.len();
        let destroy_locks = tree.teardown(latencies_ns);
        ReplaceTimes {
            build_ns: nanos(t1 - t0),
            traffic_wait_ns: nanos(t2 - t1),
            destroy_locks_ns: nanos(destroy_locks),
            unregister_ns: latencies_ns[first..].iter().sum(),
        }
    }

    /// Tears down the tree in force; traffic must have stopped.
    fn shut_down(self) {
        let tree = self.current.into_inner();
        // SAFETY: from Box::into_raw; every traffic thread has been joined, so nothing else
        // can reach it.
        unsafe { Box::from_raw(tree) }.teardown(&mut Vec::new());
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Where one replace's time went, in ns. Only `unregister_ns` depends on the wait mode; the
/// other steps run the same code in every mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplaceTimes {
    /// Building the new tree: registering its keys and making its locks.
    pub build_ns: u64,
    /// Publishing it and waiting until no traffic thread still sends on the old tree (the
    /// tree domain's `synchronize`; includes waiting for a CPU when threads outnumber CPUs).
    pub traffic_wait_ns: u64,
    /// Destroying the old tree's locks.
    pub destroy_locks_ns: u64,
    /// The old tree's key unregistrations, summed (the measured unregister latencies).
    pub unregister_ns: u64,
}

impl ReplaceTimes {
    /// The whole replace.
    pub fn total_ns(&self) -> u64 {
        self.build_ns + self.traffic_wait_ns + self.destroy_locks_ns + self.unregister_ns
    }

    /// Adds `other`'s times to these.
    fn add(&mut self, other: &ReplaceTimes) {
        self.build_ns += other.build_ns;
        self.traffic_wait_ns += other.traffic_wait_ns;
        self.destroy_locks_ns += other.destroy_locks_ns;
        self.unregister_ns += other.unregister_ns;
    }
}

/// What one run of the workload (one round) in one wait mode measured.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Time from the first replace to the last, all devices.
    pub wall: Duration,
    /// Replaces completed (devices x replaces).
    pub replaces: usize,
    /// Unregister latencies in ns, one per key unregistration, sorted.
    pub samples_ns: Vec<u64>,
    /// Unregister latency summary of `samples_ns`.
    pub unregister: Summary,
    /// All replaces' times added up (divide by `replaces` for the mean).
    pub replace_sum: ReplaceTimes,
    /// Rise of the CAL row of /proc/interrupts over the run, if readable.
    pub ipis: Option<u64>,
    /// Heavy barriers (membarrier calls in Asymmetric mode) of lockdep's hazptr domain.
    pub heavy_barriers: u64,
    /// Unregisters that found a lookup in progress and had to wait for it
    /// ([`WaitMode::waits_so_far`]); `None` where the mode cannot tell.
    pub waits: Option<u64>,
    /// Lockdep reports delivered during the run.
    pub reports: u64,
    /// Key lookups made by the traffic threads (one per packet).
    pub lookups: u64,
}

impl RunResult {
    /// Key unregistrations timed.
    pub fn unregisters(&self) -> usize {
        self.samples_ns.len()
    }

    /// Function-call IPIs per 100 replaces.
    pub fn ipis_per_100(&self) -> Option<f64> {
        self.ipis
            .map(|n| n as f64 * 100.0 / self.replaces.max(1) as f64)
    }

    /// The mean replace, in ns per step.
    pub fn mean_replace(&self) -> ReplaceTimes {
        let n = self.replaces.max(1) as u64;
        let s = &self.replace_sum;
        ReplaceTimes {
            build_ns: s.build_ns / n,
            traffic_wait_ns: s.traffic_wait_ns / n,
            destroy_locks_ns: s.destroy_locks_ns / n,
            unregister_ns: s.unregister_ns / n,
        }
    }

    /// Key lookups per second of wall time.
    pub fn lookups_per_s(&self) -> f64 {
        self.lookups as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// Counts lockdep reports (installed as the policy by [`crate::main`]'s churn command).
pub static REPORTS: AtomicU64 = AtomicU64::new(0);

/// Runs the workload once in `mode` (installs the mode first).
pub fn run(cfg: &Config, mode: WaitMode) -> RunResult {
    mode.install();
    let devices: Vec<Device> = (0..cfg.devices).map(|_| Device::new(cfg.queues)).collect();
    let stop = AtomicBool::new(false);
    let done_replaces = AtomicUsize::new(0);
    let packets = AtomicU64::new(0);
    let inversion_pending = AtomicBool::new(cfg.inject_inversion);
    // Traffic threads that have sent their first round of packets: the replaces start once
    // every one has. Otherwise a replacer that started first could finish a round's replaces
    // before a traffic thread had its first CPU time (a wake-up placed on the replacer's
    // CPU), and time unregisters with no traffic at all (seen on a 2-vCPU VM: rounds of 0
    // lookups a second, their unregisters as cheap as with no reader).
    let running = AtomicUsize::new(0);

    let barriers_before = hazptr::Domain::global().stats();
    let waits_before = mode.waits_so_far();
    // Relaxed: a statistic read while no report is being delivered by this run yet.
    let reports_before = REPORTS.load(Ordering::Relaxed);
    let ipis_before = interrupts::function_call_ipis();
    let start = Instant::now();
    let mut latencies: Vec<u64> = Vec::new();
    let mut replace_sum = ReplaceTimes::default();

    std::thread::scope(|s| {
        for r in 0..cfg.readers {
            let (devices, stop, packets, inversion, running) =
                (&devices, &stop, &packets, &inversion_pending, &running);
            std::thread::Builder::new()
                .name(format!("traffic-{r}"))
                .spawn_scoped(s, move || {
                    if cfg.pin {
                        pin_to_cpu(devices.len() + r);
                    }
                    traffic(r, devices, stop, packets, inversion, running)
                })
                .expect("spawn traffic thread");
        }
        let replacers: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, dev)| {
                let (done, running) = (&done_replaces, &running);
                std::thread::Builder::new()
                    .name(format!("tc-dev{i}"))
                    .spawn_scoped(s, move || {
                        if cfg.pin {
                            pin_to_cpu(i);
                        }
                        // Relaxed: a start signal; no data is handed over with it.
                        while running.load(Ordering::Relaxed) < cfg.readers {
                            // Yields the CPU to a traffic thread woken onto this one.
                            std::thread::yield_now();
                        }
                        // Reserve for the common case only: a huge --replaces × --queues grows
                        // the vector as samples arrive instead of failing one giant allocation.
                        let expected = cfg.replaces.saturating_mul(cfg.queues + 1);
                        let mut lat = Vec::with_capacity(expected.min(1 << 20));
                        let mut sum = ReplaceTimes::default();
                        for _ in 0..cfg.replaces {
                            sum.add(&dev.replace(cfg.queues, &mut lat));
                            // Relaxed: progress display only.
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        (lat, sum)
                    })
                    .expect("spawn replace thread")
            })
            .collect();
        let total = cfg.replaces * cfg.devices;
        if cfg.progress {
            crate::progress::draw_until(mode.name(), &done_replaces, total, &replacers);
        }
        for h in replacers {
            let (lat, sum) = h.join().expect("replace thread panicked");
            latencies.extend(lat);
            replace_sum.add(&sum);
        }
        // Relaxed: a stop flag; the scope's join orders everything after it.
        stop.store(true, Ordering::Relaxed);
    });
    let wall = start.elapsed();
    let ipis_after = interrupts::function_call_ipis();
    let barriers_after = hazptr::Domain::global().stats();
    let waits_after = mode.waits_so_far();
    // Relaxed: all threads of the run are joined.
    let reports = REPORTS.load(Ordering::Relaxed) - reports_before;
    for dev in devices {
        dev.shut_down();
    }
    let unregister = summarize(&mut latencies);
    RunResult {
        wall,
        replaces: cfg.replaces * cfg.devices,
        samples_ns: latencies,
        unregister,
        replace_sum,
        ipis: ipis_before
            .zip(ipis_after)
            .map(|(a, b)| b.saturating_sub(a)),
        heavy_barriers: barriers_after.heavy_barriers - barriers_before.heavy_barriers,
        waits: waits_before.zip(waits_after).map(|(a, b)| b - a),
        reports,
        // Relaxed: all threads of the run are joined.
        lookups: packets.load(Ordering::Relaxed),
    }
}

/// One traffic thread: packets round-robin over devices and queues until `stop`.
fn traffic(
    id: usize,
    devices: &[Device],
    stop: &AtomicBool,
    packets: &AtomicU64,
    inversion: &AtomicBool,
    running: &AtomicUsize,
) {
    let mut sent = 0u64;
    let mut started = false;
    let mut q = id;
    // At least one round of packets, even if the replaces finish first (so an injected
    // inversion always happens).
    loop {
        for dev in devices {
            let guard = tree_domain()
                .protect(&dev.current)
                .expect("a device always has a tree");
            // SAFETY: the guard keeps the tree from being freed: a replace unpublishes it and
            // synchronizes on it before tearing it down.
            let tree: &MqTree = unsafe { &*guard.as_ptr() };
            q = (q + 1) % tree.queues.len();
            let queue = &tree.queues[q];
            {
                let _root = tree.root.read();
                let mut n = queue.lock.lock();
                *n += 1;
                // The read-side lookup of the key table, one bucket walk.
                assert!(
                    queue.key.is_registered(),
                    "a live queue's key is registered"
                );
            }
            sent += 1;
            // Relaxed: only one thread wins the flag; no data is attached.
            if tree.queues.len() >= 2 && inversion.swap(false, Ordering::Relaxed) {
                invert(tree);
            }
        }
        if !started {
            started = true;
            // Relaxed: a start signal (see `run`).
            running.fetch_add(1, Ordering::Relaxed);
        }
        // Relaxed: a stop flag; the data is protected by the locks.
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    // Relaxed: read after the scope joins this thread.
    packets.fetch_add(sent, Ordering::Relaxed);
}

/// Pins the calling thread to the `k`-th CPU (counting from 0) of the set the process may run
/// on (`sched_getaffinity(2)`, then `sched_setaffinity(2)`). Panics if there is no such CPU or
/// the call fails: a run asked to be pinned must be.
fn pin_to_cpu(k: usize) {
    // SAFETY: `cpu_set_t` is plain data, valid all zeroes; the calls read and write a set of
    // the size we pass; `CPU_ISSET`/`CPU_SET` check the index against the set's size.
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, size, &mut allowed),
            0,
            "demo: sched_getaffinity: {}",
            std::io::Error::last_os_error()
        );
        let cpu = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &allowed))
            .nth(k)
            .unwrap_or_else(|| panic!("demo: --pin: the process may not run on {} CPUs", k + 1));
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, size, &set),
            0,
            "demo: cannot pin a thread to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Takes queue 0 then queue 1, and later queue 1 then queue 0: an AB-BA inversion lockdep
/// reports at the second acquisition, before anything could deadlock (only this thread
/// takes two queue locks, so it cannot really deadlock).
fn invert(tree: &MqTree) {
    {
        let _a = tree.queues[0].lock.lock();
        let _b = tree.queues[1].lock.lock();
    }
    {
        let _b = tree.queues[1].lock.lock();
        let _a = tree.queues[0].lock.lock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny run in every available mode: every replace unregisters its keys, nothing is
    /// reported, and the inversion (first run only) is reported once.
    #[test]
    fn tiny_runs() {
        let _serial = crate::modes::TEST_MODE_LOCK.lock();
        lockdep::set_policy(lockdep::Policy::Callback(std::sync::Arc::new(
            |_: &lockdep::Report| {
                // Relaxed: read after the run's threads are joined.
                REPORTS.fetch_add(1, Ordering::Relaxed);
            },
        )));
        let mut cfg = Config {
            queues: 4,
            replaces: 5,
            devices: 2,
            readers: 2,
            inject_inversion: true,
            pin: false,
            progress: false,
        };
        for mode in WaitMode::ALL.into_iter().filter(|m| m.available()) {
            let r = run(&cfg, mode);
            assert_eq!(r.replaces, 10);
            assert_eq!(r.unregisters(), 10 * 5);
            let times = r.replace_sum;
            assert!(times.unregister_ns > 0 && times.build_ns > 0, "{times:?}");
            assert_eq!(times.unregister_ns, r.samples_ns.iter().sum::<u64>());
            assert_eq!(r.waits.is_some(), mode != WaitMode::Rcu);
            assert_eq!(r.reports, u64::from(cfg.inject_inversion), "{mode:?}");
            cfg.inject_inversion = false;
        }
        WaitMode::Hazptr.install();
    }
}
