use std::time::Instant;
macro_rules! ping_pong {
    ($m:expr, $cv:expr, $n:expr) => {{
        let (m, cv, n) = ($m, $cv, $n);
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..n {
                    let mut g = m.lock();
                    while !*g { cv.wait(&mut g); }
                    *g = false;
                    cv.notify_one();
                }
            });
            for _ in 0..n {
                let mut g = m.lock();
                *g = true;
                cv.notify_one();
                while *g { cv.wait(&mut g); }
            }
        });
    }};
}
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let n = 200_000u64;
    let t = Instant::now();
    if which == "pl" {
        let m = parking_lot::Mutex::new(false); let cv = parking_lot::Condvar::new();
        ping_pong!(&m, &cv, n);
    } else {
        let m = instrumented_locks::Mutex::new(false); let cv = instrumented_locks::Condvar::new();
        ping_pong!(&m, &cv, n);
    }
    println!("{which}: {:.0} ns per round trip", t.elapsed().as_nanos() as f64 / n as f64);
}
