//! Function-call IPIs: the `CAL` row of `/proc/interrupts`, summed over CPUs.

/// The current total of the `CAL:` ("Function call interrupts") row, or `None` where the
/// file or the row is absent (non-x86, non-Linux, restricted `/proc`).
pub fn function_call_ipis() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let line = text.lines().find(|l| l.trim_start().starts_with("CAL:"))?;
    let mut sum = 0u64;
    // After the label come one count per CPU, then the description text.
    for field in line.trim_start()["CAL:".len()..].split_whitespace() {
        match field.parse::<u64>() {
            Ok(n) => sum += n,
            Err(_) => break,
        }
    }
    Some(sum)
}

/// The CPUs this process may run on (at least 1).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
