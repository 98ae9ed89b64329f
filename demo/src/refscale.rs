//! `demo refscale`: reader-side cost, ns per protected section (protect + release, or
//! liburcu read lock + unlock), with every reader thread running at once; and one lookup in
//! lockdep's dynamic-key table in each wait mode.

use std::hint::black_box;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use hazptr::{Domain, FenceMode};

use crate::interrupts;
use crate::modes::WaitMode;
use crate::rcu;

/// `demo refscale` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Reader threads [default: one per core].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    readers: Option<u32>,
    /// Sections per reader thread.
    #[arg(long, default_value_t = 5_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    ops: u64,
}

/// A reader section to time, made once per thread (so it may own per-thread state).
type MakeSection<'a> = &'a (dyn Fn(usize) -> Box<dyn FnMut() + 'a> + Sync);

/// Runs a section `ops` times on each of `readers` threads at once; mean ns per section.
fn measure(readers: usize, ops: u64, make: MakeSection<'_>) -> f64 {
    let start = Barrier::new(readers);
    let total_ns: u128 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..readers)
            .map(|r| {
                let start = &start;
                s.spawn(move || {
                    let mut section = make(r);
                    section();
                    start.wait();
                    let t = Instant::now();
                    for _ in 0..ops {
                        section();
                    }
                    t.elapsed().as_nanos()
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("reader panicked"))
            .sum()
    });
    total_ns as f64 / (readers as u64 * ops) as f64
}

/// Runs the measurements and prints the table; returns the exit code.
pub fn run(args: &Args) -> i32 {
    let readers = args.readers.map_or_else(interrupts::cores, |r| r as usize);
    println!(
        "refscale: {readers} reader thread(s), {} sections each",
        args.ops
    );
    println!("{:<40} {:>8}", "reader section", "ns/op");
    println!("{}", "-".repeat(49));
    let objects: Vec<u64> = vec![0; 64];
    let obj = Box::into_raw(Box::new(42u64));
    let src = AtomicPtr::new(obj);
    {
        let objects = &objects;
        let ns = measure(readers, args.ops, &|r| {
            let addr = &objects[r % objects.len()] as *const u64;
            Box::new(move || drop(black_box(Domain::global().protect_addr(black_box(addr)))))
        });
        println!(
            "{:<40} {ns:>8.2}",
            "hazptr protect_addr (global, lockdep's)"
        );
    }
    for (fence, mode) in [
        ("Symmetric", FenceMode::Symmetric),
        ("Asymmetric", FenceMode::Asymmetric),
    ] {
        let domain = Domain::new(mode);
        let fell_back = if domain.fence_mode() == mode {
            ""
        } else {
            " [fell back]"
        };
        let (domain, objects, src) = (&domain, &objects, &src);
        let ns = measure(readers, args.ops, &|r| {
            let addr = &objects[r % objects.len()] as *const u64;
            Box::new(move || drop(black_box(domain.protect_addr(black_box(addr)))))
        });
        println!(
            "{:<40} {ns:>8.2}",
            format!("hazptr protect_addr ({fence}){fell_back}")
        );
        let ns = measure(readers, args.ops, &|_| {
            Box::new(move || drop(black_box(domain.protect(black_box(src)))))
        });
        println!(
            "{:<40} {ns:>8.2}",
            format!("hazptr protect load ({fence}){fell_back}")
        );
    }
    let ns = measure(readers, args.ops, &|_| {
        let mut hp = haphazard::HazardPointer::new();
        let src = &src;
        Box::new(move || {
            black_box(hp.protect_ptr(black_box(src)).map(|(p, _)| p.as_ptr()));
            hp.reset_protection();
        })
    });
    println!("{:<40} {ns:>8.2}", "haphazard protect_ptr + reset");
    let atomic = crossbeam_epoch::Atomic::new(42u64);
    let ns = measure(readers, args.ops, &|_| {
        let atomic = &atomic;
        Box::new(move || {
            let guard = crossbeam_epoch::pin();
            // Acquire, as the hazard-pointer loads.
            black_box(black_box(atomic).load(Ordering::Acquire, &guard).as_raw());
        })
    });
    println!("{:<40} {ns:>8.2}", "crossbeam-epoch pin + load");
    // The read side of lockdep's own key table in each wait mode: one key lookup.
    let key = lockdep::DynamicKey::new("refscale key");
    let handle = key.handle();
    for mode in WaitMode::ALL.into_iter().filter(|m| m.available()) {
        mode.install();
        let ns = measure(readers, args.ops, &|_| {
            Box::new(move || {
                black_box(black_box(handle).is_registered());
            })
        });
        println!(
            "{:<40} {ns:>8.2}",
            format!("lockdep key lookup ({})", mode.name())
        );
    }
    WaitMode::Hazptr.install();
    drop(key);
    if rcu::AVAILABLE {
        let ns = measure(readers, args.ops, &|_| {
            Box::new(|| {
                if rcu::read_lock() {
                    rcu::read_unlock();
                }
            })
        });
        println!("{:<40} {ns:>8.2}", "urcu-memb read lock + unlock");
        println!("note: liburcu is called through its exported (non-inlined) functions");
    } else {
        println!("note: {}", crate::modes::rcu_unavailable_note());
    }
    // SAFETY: every reader thread has been joined; `obj` came from Box::into_raw above.
    drop(unsafe { Box::from_raw(obj) });
    // SAFETY: no thread can reach the epoch-managed value any more (all readers joined).
    drop(unsafe { atomic.into_owned() });
    0
}
