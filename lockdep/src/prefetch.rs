//! Cache prefetch hints, for the slow paths that touch lines another thread last used.
//!
//! An unregister writes lines that the threads doing lookups and lock acquisitions read
//! last: the key's bucket head, its classes' generation words and slots. Each such line is a
//! cache miss (a transfer from the other core, about 70 ns on a 2-vCPU Xeon VM), and done one
//! after another they add up. Asking for the lines early, with write intent where the line
//! will be written, lets the transfers overlap each other and the work in between.
//!
//! A prefetch is only a hint: it never faults, changes no value and orders nothing, so it
//! needs no `unsafe` at the call sites and is correct on any address, even a dangling one.
//! The loads and stores that follow keep all their own ordering. On targets other than
//! x86-64 both functions do nothing.

/// Asks for the cache line of `p` with intent to write (x86's `PREFETCHW`, where the CPU has
/// it; a read prefetch otherwise). Thread-safe, never faults, no effect on values.
#[inline(always)]
pub(crate) fn for_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_prefetchw() {
            // SAFETY: PREFETCHW is a hint: it reads no value, never faults (not even on an
            // unmapped address) and needs nothing of the stack or flags; the CPU has it
            // (checked above).
            unsafe {
                std::arch::asm!(
                    "prefetchw [{p}]",
                    p = in(reg) p,
                    options(nostack, preserves_flags, readonly)
                );
            }
        } else {
            for_read(p);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for the cache line of `p` for reading. Thread-safe, never faults, no effect on
/// values.
#[inline(always)]
pub(crate) fn for_read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is a hint that never faults (SSE, part of x86-64's baseline).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Whether the CPU has `PREFETCHW`: CPUID leaf 0x8000_0001, ECX bit 8 (PRFCHW, which Linux
/// shows as `3dnowprefetch`). Asked once; after that one relaxed load and a compare.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_prefetchw() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    /// 0: not asked yet, 1: no, 2: yes.
    static ANSWER: AtomicU8 = AtomicU8::new(0);
    // Relaxed: a value computed the same way by every thread; nothing is read through it.
    match ANSWER.load(Ordering::Relaxed) {
        0 => {
            // `unsafe` for the toolchains where `__cpuid` still is (it is safe in newer ones).
            // SAFETY: CPUID exists on every x86-64 CPU; leaf 0x8000_0000 says which extended
            // leaves exist, and 0x8000_0001 is asked only if it does.
            #[allow(unused_unsafe)]
            let yes = unsafe {
                use std::arch::x86_64::__cpuid;
                __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
            };
            // Relaxed: as above.
            ANSWER.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
        answer => answer == 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetch_of_any_address_neither_faults_nor_changes_the_value() {
        let word = std::sync::atomic::AtomicU64::new(7);
        for_write(&word);
        for_read(&word);
        // Unmapped and non-canonical addresses: a hint on them is dropped, never a fault.
        for p in [0usize, 8, usize::MAX - 63, 0x8000_0000_0000_0000] {
            for_write(p as *const u8);
            for_read(p as *const u8);
        }
        assert_eq!(word.load(std::sync::atomic::Ordering::Relaxed), 7);
    }

    /// The CPUID answer agrees with the kernel's (the `3dnowprefetch` flag of
    /// `/proc/cpuinfo`, its name for PRFCHW), asked twice: once fresh, once cached.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn the_prefetchw_answer_agrees_with_the_kernel_and_is_kept() {
        let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else {
            return;
        };
        let Some(flags) = cpuinfo.lines().find(|l| l.starts_with("flags")) else {
            return;
        };
        let kernel = flags.split_whitespace().any(|f| f == "3dnowprefetch");
        assert_eq!(has_prefetchw(), kernel);
        assert_eq!(has_prefetchw(), kernel);
    }
}
