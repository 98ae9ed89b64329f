//! Cost of the wrappers against plain parking_lot, in one run.
//!
//! - `cargo bench -p instrumented-locks --no-default-features`: the off switch; the
//!   `instrumented` rows must equal the `parking_lot` rows.
//! - `cargo bench -p instrumented-locks`: validation on (a chain-cache hit per acquisition),
//!   plus validation compiled in but switched off at run time (`set_enabled(false)`).
//!
//! Single thread, uncontended: the validator's per-acquisition cost is what is measured.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

const MODE: &str = if cfg!(feature = "validate") {
    "validate"
} else {
    "off"
};

fn mutex(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("mutex_lock_unlock/{MODE}"));
    let pl = real_parking_lot::Mutex::new(0u64);
    g.bench_function("parking_lot", |b| b.iter(|| *black_box(&pl).lock() += 1));
    let il = instrumented_locks::Mutex::new(0u64);
    g.bench_function("instrumented", |b| b.iter(|| *black_box(&il).lock() += 1));
    if cfg!(feature = "validate") {
        instrumented_locks::set_enabled(false);
        g.bench_function("instrumented_runtime_off", |b| {
            b.iter(|| *black_box(&il).lock() += 1)
        });
        instrumented_locks::set_enabled(true);
    }
    g.finish();
}

fn nested(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("nested_pair/{MODE}"));
    let (pa, pb) = (
        real_parking_lot::Mutex::new(0u64),
        real_parking_lot::Mutex::new(0u64),
    );
    g.bench_function("parking_lot", |b| {
        b.iter(|| {
            let mut x = black_box(&pa).lock();
            let mut y = black_box(&pb).lock();
            *x += 1;
            *y += 1;
        })
    });
    let (ia, ib) = (
        instrumented_locks::Mutex::new(0u64),
        instrumented_locks::Mutex::new(0u64),
    );
    g.bench_function("instrumented", |b| {
        b.iter(|| {
            let mut x = black_box(&ia).lock();
            let mut y = black_box(&ib).lock();
            *x += 1;
            *y += 1;
        })
    });
    g.finish();
}

fn rwlock(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("rwlock_read/{MODE}"));
    let pl = real_parking_lot::RwLock::new(1u64);
    g.bench_function("parking_lot", |b| b.iter(|| *black_box(&pl).read()));
    let il = instrumented_locks::RwLock::new(1u64);
    g.bench_function("instrumented", |b| b.iter(|| *black_box(&il).read()));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30);
    targets = mutex, nested, rwlock
}
criterion_main!(benches);
