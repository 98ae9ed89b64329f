//! Function-call IPIs: the `CAL` row of `/proc/interrupts`, summed over CPUs.

/// The current total of the `CAL:` ("Function call interrupts") row, or `None` where the
/// file or the row is absent (non-x86, non-Linux, restricted `/proc`).
pub fn function_call_ipis() -> Option<u64> {
    cal_total(&std::fs::read_to_string("/proc/interrupts").ok()?)
}

/// The `CAL:` row's total in the text of `/proc/interrupts`.
fn cal_total(text: &str) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    #[test]
    fn sums_the_cal_row() {
        let text = "           CPU0       CPU1\n  0:         44          0   IO-APIC    2-edge      timer\n CAL:    3018153     211025   Function call interrupts\n TLB:          5          7   TLB shootdowns\n";
        assert_eq!(super::cal_total(text), Some(3_229_178));
        assert_eq!(super::cal_total("  0: 1 2 timer\n"), None);
    }
}
