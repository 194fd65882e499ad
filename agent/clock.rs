//! The tick counter: `rdtsc` on x86-64 when the TSC is invariant, `STCKF` on s390x with
//! `clock=stck`, else CLOCK_MONOTONIC nanoseconds. `ticksPerMicrosecond` is calibrated against
//! CLOCK_MONOTONIC at start-up (2 ms) and refined over the whole run when the trace closes.
//! Where `clock=stck` asks for STORE CLOCK values and the counter is another, the writer maps
//! each tick to the STORE CLOCK value of its moment (`jlive_writer::stck`).

use crate::options::Clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The counter chosen at start-up, read at every record: a module-level static because the
/// trampolines' fast path has no context to find it in (ARCHITECTURE.md).
static CLOCK: State = State {
    tsc: AtomicBool::new(false),
    stck: AtomicBool::new(false),
    origin: OnceLock::new(),
    calibrated_hz: AtomicU64::new(0),
};

struct State {
    /// The counter is the TSC.
    tsc: AtomicBool,
    /// s390x with clock=stck: the counter is STCKF.
    stck: AtomicBool,
    /// A tick and the CLOCK_MONOTONIC nanoseconds at it, taken at start-up.
    origin: OnceLock<(u64, u64)>,
    /// The start-up calibration in ticks per second, unrounded.
    calibrated_hz: AtomicU64,
}

/// Which counter `ticks()` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Tsc,
    Monotonic,
    /// z/Architecture STORE CLOCK FAST: 4096 ticks per microsecond from 1900-01-01.
    Stck,
}

/// Reads the tick counter. This is on the hot path: one instruction with the TSC.
#[inline(always)]
pub fn ticks() -> u64 {
    tsc().unwrap_or_else(other_ticks)
}

/// The counter when it is not the TSC.
fn other_ticks() -> u64 {
    if CLOCK.stck.load(Ordering::Relaxed) {
        if let Some(t) = stckf() {
            return t;
        }
    }
    monotonic_ns()
}

/// STORE CLOCK FAST, on s390x.
#[inline(always)]
pub fn stckf() -> Option<u64> {
    jlive_jvm::os::stckf()
}

/// The TSC, when it is the tick counter: a read with no call in it, for the trampolines'
/// fast path (None sends them to their full path, which calls [`ticks`]).
#[inline(always)]
pub fn tsc() -> Option<u64> {
    if CLOCK.tsc.load(Ordering::Relaxed) {
        return jlive_jvm::os::rdtsc();
    }
    None
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    jlive_jvm::os::monotonic_ns()
}

/// True when this CPU has an invariant TSC (CPUID 0x80000007 EDX bit 8).
pub fn tsc_is_invariant() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
        if max >= 0x8000_0007 {
            return core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0;
        }
    }
    false
}

/// Chooses the counter for `clock=` (`tsc` falls back to monotonic without an invariant TSC;
/// `stck` reads STCKF on s390x and the TSC elsewhere) and returns it with its calibrated ticks
/// per microsecond.
pub fn start(clock: Clock) -> (Source, u32) {
    let source = match clock {
        Clock::Stck if stckf().is_some() => Source::Stck,
        Clock::Tsc | Clock::Stck if tsc_is_invariant() => Source::Tsc,
        _ => Source::Monotonic,
    };
    CLOCK.tsc.store(source == Source::Tsc, Ordering::Relaxed);
    CLOCK.stck.store(source == Source::Stck, Ordering::Relaxed);
    let origin = pair();
    let _ = CLOCK.origin.set(origin);
    let fixed = match source {
        Source::Stck => Some(jlive_writer::stck::TICKS_PER_MICROSECOND),
        Source::Monotonic => Some(1000),
        Source::Tsc => None,
    };
    if let Some(rate) = fixed {
        CLOCK
            .calibrated_hz
            .store(u64::from(rate) * 1_000_000, Ordering::Relaxed);
        return (source, rate);
    }
    // Each end of the window is known to within a few tens of nanoseconds (the tightest of
    // five pairs), so 2 ms gives the rate to ~0.001%, well inside the 0.1% the clock must hold and
    // below the rounding to whole ticks per microsecond; the file's header gets the rate
    // measured over the whole run when it is closed (`refined_rate`). Every millisecond here
    // is a millisecond added to the JVM's start-up.
    std::thread::sleep(CALIBRATION);
    let hz = hz_over(origin, CALIBRATION).unwrap_or(1e9);
    CLOCK.calibrated_hz.store(hz as u64, Ordering::Relaxed);
    (source, rate_over(origin, CALIBRATION).unwrap_or(1000))
}

/// The start-up calibration in ticks per second, not rounded to whole ticks per microsecond
/// (what maps the TSC to STORE CLOCK values).
pub fn ticks_per_second() -> u64 {
    CLOCK.calibrated_hz.load(Ordering::Relaxed).max(1)
}

/// The rate measured from start-up until now (None if under 10 ms have passed).
pub fn refined_rate() -> Option<u32> {
    if CLOCK.stck.load(Ordering::Relaxed) {
        return Some(jlive_writer::stck::TICKS_PER_MICROSECOND);
    }
    if !CLOCK.tsc.load(Ordering::Relaxed) {
        return Some(1000);
    }
    rate_over(*CLOCK.origin.get()?, Duration::from_millis(10))
}

/// The rate in ticks per microsecond from `origin` until now, if at least `least` has passed.
fn rate_over(origin: (u64, u64), least: Duration) -> Option<u32> {
    let rate = (hz_over(origin, least)? / 1e6).round();
    (rate >= 1.0 && rate < u32::MAX as f64).then_some(rate as u32)
}

/// The rate in ticks per second from `origin` until now, if at least `least` has passed.
fn hz_over(origin: (u64, u64), least: Duration) -> Option<f64> {
    let now = pair();
    let ns = now.1.checked_sub(origin.1)?;
    if u128::from(ns) < least.as_nanos() {
        return None;
    }
    let ticks = now.0.checked_sub(origin.0)? as f64;
    Some(ticks * 1e9 / ns as f64)
}

/// A tick count and the wall-clock time at it (nanoseconds since 1970): how a format that
/// writes times turns ticks into them. The tightest of a few tries.
pub fn wall_origin() -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..5 {
        let a = ticks();
        let ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let b = ticks();
        if b.wrapping_sub(a) < best.2 {
            best = (a + (b - a) / 2, ns, b - a);
        }
    }
    (best.0, best.1)
}

/// How long start-up calibrates the tick counter against CLOCK_MONOTONIC.
const CALIBRATION: Duration = Duration::from_millis(2);

/// (ticks, monotonic ns) read as close together as possible: the tightest of a few tries.
fn pair() -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..5 {
        let a = ticks();
        let ns = monotonic_ns();
        let b = ticks();
        if b.wrapping_sub(a) < best.2 {
            best = (a + (b - a) / 2, ns, b - a);
        }
    }
    (best.0, best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calibrated rate is within 0.1% of the true one (docs/formats.md, STORE CLOCK). The start-up window is
    /// 2 ms; the rate over half a second is the reference.
    #[test]
    fn the_start_up_calibration_is_within_a_tenth_of_a_percent() {
        let (source, rate) = start(Clock::Tsc);
        if source != Source::Tsc {
            assert_eq!(rate, 1000, "monotonic ticks are nanoseconds");
            return;
        }
        let origin = pair();
        std::thread::sleep(Duration::from_millis(500));
        let reference = rate_over(origin, Duration::from_millis(500)).expect("half a second");
        let error = (f64::from(rate) - f64::from(reference)).abs() / f64::from(reference);
        assert!(
            error < 0.001,
            "start-up rate {} against {} over 500 ms: {:.4}%",
            rate,
            reference,
            error * 100.0
        );
    }
}
