//! `demo refscale`: reader-side cost, ns per protected section (protect + release, or
//! liburcu read lock + unlock), with every reader thread running at once.

use std::sync::Barrier;
use std::time::Instant;

use hazptr::{Domain, FenceMode};

use crate::interrupts;
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

/// Runs `section` `ops` times on each of `readers` threads at once; mean ns per section.
fn measure(readers: usize, ops: u64, section: &(dyn Fn(usize) + Sync)) -> f64 {
    let start = Barrier::new(readers);
    let total_ns: u128 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..readers)
            .map(|r| {
                let start = &start;
                s.spawn(move || {
                    section(r);
                    start.wait();
                    let t = Instant::now();
                    for _ in 0..ops {
                        section(r);
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
    println!("{:<28} {:>10}", "reader", "ns/op");
    println!("{}", "-".repeat(39));
    let objects: Vec<u64> = vec![0; 64];
    for (name, mode) in [
        ("hazptr protect (Symmetric)", FenceMode::Symmetric),
        ("hazptr protect (Asymmetric)", FenceMode::Asymmetric),
    ] {
        let domain = Domain::new(mode);
        let label = if domain.fence_mode() == mode {
            name.to_owned()
        } else {
            format!("{name} [fell back]")
        };
        let ns = measure(readers, args.ops, &|r| {
            let g = domain.protect_addr(&objects[r % objects.len()] as *const u64);
            drop(std::hint::black_box(g));
        });
        println!("{label:<28} {ns:>10.2}");
    }
    if rcu::AVAILABLE {
        let ns = measure(readers, args.ops, &|_| {
            if rcu::read_lock() {
                rcu::read_unlock();
            }
        });
        println!("{:<28} {ns:>10.2}", "urcu-memb read lock/unlock");
        println!("note: liburcu is called through its exported (non-inlined) functions");
    } else {
        println!("note: {}", crate::modes::rcu_unavailable_note());
    }
    0
}
