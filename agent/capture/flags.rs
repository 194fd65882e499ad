//! What a burst asks the capture to see ([`BurstFlags`]), and VA/Java's image-level flags for
//! the same (`tracingBegin(flags)`, a user trace library's `InstrumentTraceBegin`).

use crate::options::{Gc, Methods, Options};

/// What one burst records (VA/Java's ExeOn/OnLight/Off, GCOn/OnLight/Off, AllocOn/Off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurstFlags {
    pub methods: Methods,
    pub gc: Gc,
    pub alloc: bool,
    /// Contended monitors (MONITOR_CONTENTION): `monitors=on`, or the visualizer's "track
    /// monitor contention" for its bursts.
    pub contention: bool,
}

/// VA/Java image-level flag values (jlive's numbering; the document gives names only).
pub mod vajava {
    pub const EXE_ON: i32 = 0x1;
    pub const EXE_ON_LIGHT: i32 = 0x2;
    pub const EXE_OFF: i32 = 0x4;
    pub const GC_ON: i32 = 0x10;
    pub const GC_ON_LIGHT: i32 = 0x20;
    pub const GC_OFF: i32 = 0x40;
    pub const ALLOC_ON: i32 = 0x100;
    pub const ALLOC_OFF: i32 = 0x200;
}

impl BurstFlags {
    /// The flags the options ask for.
    pub fn from_options(o: &Options) -> BurstFlags {
        BurstFlags {
            methods: o.methods,
            gc: o.gc,
            alloc: o.alloc,
            contention: o.monitors,
        }
    }

    /// Flags of `tracingBegin(flags)`; a group with no flag keeps the option's setting.
    pub fn from_vajava(flags: i32, defaults: BurstFlags) -> BurstFlags {
        use vajava::*;
        let pick = |on: i32, light: i32, off: i32| {
            if flags & on != 0 {
                Some(0)
            } else if flags & light != 0 {
                Some(1)
            } else if flags & off != 0 {
                Some(2)
            } else {
                None
            }
        };
        BurstFlags {
            methods: match pick(EXE_ON, EXE_ON_LIGHT, EXE_OFF) {
                Some(0) => Methods::On,
                Some(1) => Methods::Entry,
                Some(_) => Methods::Off,
                None => defaults.methods,
            },
            gc: match pick(GC_ON, GC_ON_LIGHT, GC_OFF) {
                Some(0) => Gc::On,
                Some(1) => Gc::Light,
                Some(_) => Gc::Off,
                None => defaults.gc,
            },
            alloc: match pick(ALLOC_ON, 0, ALLOC_OFF) {
                Some(0) => true,
                Some(_) => false,
                None => defaults.alloc,
            },
            contention: defaults.contention,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vajava_flags_map_to_burst_flags() {
        let d = BurstFlags {
            methods: Methods::On,
            gc: Gc::Light,
            alloc: false,
            contention: false,
        };
        let f =
            BurstFlags::from_vajava(vajava::EXE_ON_LIGHT | vajava::GC_OFF | vajava::ALLOC_ON, d);
        assert_eq!(
            f,
            BurstFlags {
                methods: Methods::Entry,
                gc: Gc::Off,
                alloc: true,
                contention: false,
            }
        );
        assert_eq!(BurstFlags::from_vajava(0, d), d);
        let f = BurstFlags::from_vajava(vajava::EXE_OFF | vajava::GC_ON, d);
        assert_eq!((f.methods, f.gc, f.alloc), (Methods::Off, Gc::On, false));
    }
}
