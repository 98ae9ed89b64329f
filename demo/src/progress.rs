//! A progress line on stderr, drawn only when stderr is a terminal.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Whether to draw progress (stderr is a terminal).
pub fn enabled() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// Redraws `label: done/total` until every thread in `workers` has finished, then clears
/// the line. The interval only paces the display.
pub fn draw_until<T>(
    label: &str,
    done: &AtomicUsize,
    total: usize,
    workers: &[std::thread::ScopedJoinHandle<'_, T>],
) {
    let mut err = std::io::stderr();
    while !workers.iter().all(|h| h.is_finished()) {
        // Relaxed: display only.
        let n = done.load(Ordering::Relaxed);
        let width = 30;
        let filled = n * width / total.max(1);
        let _ = write!(
            err,
            "\r{label:>14} [{}{}] {n}/{total}",
            "#".repeat(filled),
            " ".repeat(width - filled)
        );
        let _ = err.flush();
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = write!(err, "\r{:60}\r", "");
    let _ = err.flush();
}
