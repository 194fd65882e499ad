//! z/Architecture STORE CLOCK values (`clock=stck`), the ticks of traces made for the 390
//! platforms: a 64-bit count from 1900-01-01 00:00 UTC in which bit 51 is one microsecond,
//! so 4096 ticks per microsecond. Where the tick source is another counter (the TSC), each
//! recorded tick is mapped to the STORE CLOCK value of the same moment.

use crate::model::TraceInfo;

/// Ticks per microsecond of a STORE CLOCK value.
pub const TICKS_PER_MICROSECOND: u32 = 4096;

/// Seconds from 1900-01-01 to 1970-01-01 (70 years, 17 of them leap years).
const EPOCH_1900_SECONDS: u128 = 2_208_988_800;

/// The STORE CLOCK value of a wall-clock time in nanoseconds since 1970.
pub fn of_unix_ns(ns: u64) -> u64 {
    ((u128::from(ns) + EPOCH_1900_SECONDS * 1_000_000_000) * 4096 / 1000) as u64
}

/// Nanoseconds since 1970 of a STORE CLOCK value.
pub fn unix_ns(stck: u64) -> u64 {
    (u128::from(stck) * 1000 / 4096).saturating_sub(EPOCH_1900_SECONDS * 1_000_000_000) as u64
}

/// Maps a tick counter of a known rate onto STORE CLOCK values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stck {
    origin_ticks: u64,
    origin: u64,
    /// STORE CLOCK units per tick, as a 32.32 fixed-point number.
    per_tick: u64,
}

impl Stck {
    /// `origin_ticks` was the counter at `origin_ns` (since 1970); it counts
    /// `ticks_per_second`.
    pub fn new(origin_ticks: u64, origin_ns: u64, ticks_per_second: u64) -> Stck {
        let units_per_second = u128::from(TICKS_PER_MICROSECOND) * 1_000_000;
        Stck {
            origin_ticks,
            origin: of_unix_ns(origin_ns),
            per_tick: ((units_per_second << 32) / u128::from(ticks_per_second.max(1))) as u64,
        }
    }

    /// The STORE CLOCK value at tick count `ticks`.
    #[inline(always)]
    pub fn of(&self, ticks: u64) -> u64 {
        let delta = i128::from(ticks.wrapping_sub(self.origin_ticks) as i64);
        (i128::from(self.origin) + ((delta * i128::from(self.per_tick)) >> 32)) as u64
    }

    /// A span of `ticks` in STORE CLOCK units (the agent's overhead of a call).
    #[inline(always)]
    pub fn span(&self, ticks: u64) -> u64 {
        ((u128::from(ticks) * u128::from(self.per_tick)) >> 32) as u64
    }

    /// A file's description with its ticks in STORE CLOCK values.
    pub fn info(&self, info: &TraceInfo) -> TraceInfo {
        TraceInfo {
            ticks_per_microsecond: TICKS_PER_MICROSECOND,
            start_ticks: self.of(info.start_ticks),
            origin_ticks: self.of(info.origin_ticks),
            ..info.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-25 00:00:00 UTC against the definition: seconds since 1900 times 4096 * 10^6.
    #[test]
    fn store_clock_values_count_from_1900_at_4096_per_microsecond() {
        let unix = 1_795_564_800u64; // 2026-11-25T00:00:00Z
        let expected = (u128::from(unix) + 2_208_988_800) * 1_000_000 * 4096;
        assert_eq!(u128::from(of_unix_ns(unix * 1_000_000_000)), expected);
        assert_eq!(
            unix_ns(of_unix_ns(unix * 1_000_000_000)),
            unix * 1_000_000_000
        );
        // Bit 51 is one microsecond.
        assert_eq!(of_unix_ns(1_000) - of_unix_ns(0), 1 << 12);
        // A TSC of 2,600 ticks per microsecond: 2.6 billion ticks later is one second later.
        let s = Stck::new(1_000_000, unix * 1_000_000_000, 2_600_000_000);
        assert_eq!(s.of(1_000_000), of_unix_ns(unix * 1_000_000_000));
        let second = s.of(1_000_000 + 2_600_000_000) - s.of(1_000_000);
        assert!((second as i64 - 4_096_000_000).abs() <= 1, "{}", second);
        // Before the origin, too (a file opened before the origin was read).
        assert_eq!(s.of(1_000_000 - 2600), s.of(1_000_000) - 4096);
        // A span: 2.6 million ticks are a millisecond (to a unit: the factor is 32.32 bits).
        assert!((s.span(2_600_000) as i64 - 4_096_000).abs() <= 1);
    }
}
