//! StackMapTable (JVMS §4.7.4): the rewriter moves a table's frames to the offsets their
//! instructions land on (`remap`, frame by frame, each in the form it was read in), and adds
//! frames of its own after them (`encode`, each in the shortest form its predecessor allows;
//! HotSpot reads every frame of a verified method).
//!
//! ```text
//! StackMapTable  u2 n + frame[n]; a frame's offset is the previous offset + delta + 1
//!   0..63    same                          delta = type
//!   64..127  same_locals_1_stack_item      delta = type - 64, 1 vtype
//!   247      same_locals_1_stack_item_ext  u2 delta, 1 vtype
//!   248..250 chop k = 251 - type           u2 delta
//!   251      same_frame_extended           u2 delta
//!   252..254 append k = type - 251         u2 delta, k vtypes
//!   255      full_frame                    u2 delta, u2 n + vtypes locals, u2 n + vtypes stack
//! vtype  0 Top 1 Integer 2 Float 3 Double 4 Long 5 Null 6 UninitializedThis
//!        7 Object u2 class  8 Uninitialized u2 offset-of-new
//! ```

use super::classfile::{err, put_u2, Reader, Result};
use super::code::OffsetMap;

/// A verification type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VType {
    Top,
    Integer,
    Float,
    Double,
    Long,
    Null,
    UninitializedThis,
    Object(u16),
    Uninitialized(u16),
}

impl VType {
    fn read(r: &mut Reader<'_>) -> Result<VType> {
        Ok(match r.u1()? {
            0 => VType::Top,
            1 => VType::Integer,
            2 => VType::Float,
            3 => VType::Double,
            4 => VType::Long,
            5 => VType::Null,
            6 => VType::UninitializedThis,
            7 => VType::Object(r.u2()?),
            8 => VType::Uninitialized(r.u2()?),
            t => return err(format!("bad verification type {}", t)),
        })
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            VType::Top => out.push(0),
            VType::Integer => out.push(1),
            VType::Float => out.push(2),
            VType::Double => out.push(3),
            VType::Long => out.push(4),
            VType::Null => out.push(5),
            VType::UninitializedThis => out.push(6),
            VType::Object(c) => {
                out.push(7);
                put_u2(out, *c);
            }
            VType::Uninitialized(o) => {
                out.push(8);
                put_u2(out, *o);
            }
        }
    }
}

/// A frame at an absolute offset, fully spelled out (the rewriter's own frames: a handful of
/// types each, borrowed so that a method's frames cost no allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub offset: usize,
    pub locals: &'a [VType],
    pub stack: &'a [VType],
}

/// A decoded frame that owns its types (the tests' view of a table).
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub offset: usize,
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

#[cfg(test)]
impl Decoded {
    pub fn frame(&self) -> Frame<'_> {
        Frame {
            offset: self.offset,
            locals: &self.locals,
            stack: &self.stack,
        }
    }
}

/// The offset of each frame of a StackMapTable attribute and the depth of its operand stack
/// in slots (a long or a double takes two), without the locals.
pub fn stack_depths(data: &[u8], out: &mut Vec<(usize, usize)>) -> Result<()> {
    let slots = |v: VType| {
        if matches!(v, VType::Long | VType::Double) {
            2
        } else {
            1
        }
    };
    let mut r = Reader::new(data);
    let n = r.u2()? as usize;
    let mut offset: i64 = -1;
    for _ in 0..n {
        let t = r.u1()?;
        let (delta, depth) = match t {
            0..=63 => (t as usize, 0),
            64..=127 => ((t - 64) as usize, slots(VType::read(&mut r)?)),
            247 => {
                let d = r.u2()? as usize;
                (d, slots(VType::read(&mut r)?))
            }
            248..=251 => (r.u2()? as usize, 0),
            252..=254 => {
                let d = r.u2()? as usize;
                for _ in 0..(t - 251) {
                    VType::read(&mut r)?;
                }
                (d, 0)
            }
            255 => {
                let d = r.u2()? as usize;
                for _ in 0..r.u2()? {
                    VType::read(&mut r)?;
                }
                let mut depth = 0;
                for _ in 0..r.u2()? {
                    depth += slots(VType::read(&mut r)?);
                }
                (d, depth)
            }
            _ => return err(format!("reserved stack map frame type {}", t)),
        };
        offset += delta as i64 + 1;
        out.push((offset as usize, depth));
    }
    Ok(())
}

/// Decodes a StackMapTable attribute into full frames.
#[cfg(test)]
pub fn decode(data: &[u8], initial: &[VType]) -> Result<Vec<Decoded>> {
    let mut r = Reader::new(data);
    let n = r.u2()? as usize;
    let mut frames = Vec::with_capacity(n);
    let mut locals = initial.to_vec();
    let mut offset: i64 = -1;
    for _ in 0..n {
        let t = r.u1()?;
        let (delta, stack) = match t {
            0..=63 => (t as usize, Vec::new()),
            64..=127 => ((t - 64) as usize, vec![VType::read(&mut r)?]),
            247 => {
                let d = r.u2()? as usize;
                (d, vec![VType::read(&mut r)?])
            }
            248..=250 => {
                let d = r.u2()? as usize;
                let k = (251 - t) as usize;
                if k > locals.len() {
                    return err("chop frame removes more locals than there are");
                }
                locals.truncate(locals.len() - k);
                (d, Vec::new())
            }
            251 => (r.u2()? as usize, Vec::new()),
            252..=254 => {
                let d = r.u2()? as usize;
                for _ in 0..(t - 251) {
                    locals.push(VType::read(&mut r)?);
                }
                (d, Vec::new())
            }
            255 => {
                let d = r.u2()? as usize;
                let nl = r.u2()? as usize;
                locals = (0..nl)
                    .map(|_| VType::read(&mut r))
                    .collect::<Result<_>>()?;
                let ns = r.u2()? as usize;
                let stack = (0..ns)
                    .map(|_| VType::read(&mut r))
                    .collect::<Result<_>>()?;
                (d, stack)
            }
            _ => return err(format!("reserved stack map frame type {}", t)),
        };
        offset += delta as i64 + 1;
        frames.push(Decoded {
            offset: offset as usize,
            locals: locals.clone(),
            stack,
        });
    }
    Ok(frames)
}

/// Moves every offset of a StackMapTable by `map` (the frames' own and those of `new`
/// instructions in Uninitialized types) and appends `extra`, frames at offsets after the last
/// one. A frame keeps the form it was read in, except that same and same_locals_1_stack_item
/// take their extended form when the moved delta no longer fits in the type byte (or their
/// short one when it fits again). Nothing is decoded into locals: the method's parameters,
/// which the first frame is relative to, do not change.
///
/// `lead` is where the first instruction lands after a prologue whose gate branches there: a
/// same frame (the method's initial locals) is put there unless a frame already is.
pub fn remap(
    out: &mut Vec<u8>,
    data: &[u8],
    map: &OffsetMap,
    lead: Option<usize>,
    extra: &[Frame],
) -> Result<()> {
    let mut r = Reader::new(data);
    let n = r.u2()?;
    let lead = match lead {
        Some(_) if n > 0 && first_offset(data)? == 0 => None,
        lead => lead,
    };
    let led = lead.is_some();
    let Ok(count) = u16::try_from(usize::from(n) + extra.len() + usize::from(led)) else {
        return err("too many stack map frames");
    };
    put_u2(out, count);
    let (mut old, mut new) = (-1i64, -1i64);
    if let Some(lead) = lead {
        new = put_lead(out, lead)?;
    }
    for _ in 0..n {
        let t = r.u1()?;
        let delta = match t {
            0..=63 => i64::from(t),
            64..=127 => i64::from(t - 64),
            247..=255 => i64::from(r.u2()?),
            _ => return err(format!("reserved stack map frame type {}", t)),
        };
        old += delta + 1;
        let at = map(old as usize)? as i64;
        let moved = new_delta(new, at)?;
        new = at;
        match t {
            0..=63 | 251 => put_delta(out, moved, 0, 251),
            64..=127 | 247 => {
                put_delta(out, moved, 64, 247);
                copy_vtypes(&mut r, out, 1, map)?;
            }
            248..=250 => {
                out.push(t);
                put_u2(out, moved);
            }
            252..=254 => {
                out.push(t);
                put_u2(out, moved);
                copy_vtypes(&mut r, out, usize::from(t - 251), map)?;
            }
            _ => {
                out.push(255);
                put_u2(out, moved);
                for _ in 0..2 {
                    let k = r.u2()?;
                    put_u2(out, k);
                    copy_vtypes(&mut r, out, usize::from(k), map)?;
                }
            }
        }
    }
    append(out, new, extra)
}

/// Writes `frames` (full locals and stack, in offset order) as a StackMapTable of a method
/// that had none: the first frame in full, each later one in the shortest form the one
/// before it allows (same, same_locals_1_stack_item, chop, append, or full).
pub fn encode(out: &mut Vec<u8>, frames: &[Frame]) -> Result<()> {
    put_u2(out, frames.len() as u16);
    append(out, -1, frames)
}

/// [`encode`] after a same frame at `lead`, where the prologue's gate branches to.
pub fn encode_after_prologue(out: &mut Vec<u8>, lead: usize, frames: &[Frame]) -> Result<()> {
    put_u2(out, frames.len() as u16 + 1);
    let previous = put_lead(out, lead)?;
    append(out, previous, frames)
}

/// A same frame at `lead` as a table's first (its delta is its offset); returns the offset.
fn put_lead(out: &mut Vec<u8>, lead: usize) -> Result<i64> {
    let Ok(delta) = u16::try_from(lead) else {
        return err("prologue too long");
    };
    put_delta(out, delta, 0, 251);
    Ok(lead as i64)
}

/// The offset of a non-empty table's first frame (its delta).
fn first_offset(data: &[u8]) -> Result<u16> {
    let mut r = Reader::new(data);
    r.u2()?;
    Ok(match r.u1()? {
        t @ 0..=63 => u16::from(t),
        t @ 64..=127 => u16::from(t - 64),
        _ => r.u2()?,
    })
}

/// Writes `frames` after a frame at `previous` (-1: none), the first in full.
fn append(out: &mut Vec<u8>, mut previous: i64, frames: &[Frame]) -> Result<()> {
    let mut locals = None;
    for f in frames {
        let delta = new_delta(previous, f.offset as i64)?;
        previous = f.offset as i64;
        write_frame(out, delta, f, locals);
        locals = Some(f.locals);
    }
    Ok(())
}

/// The delta of a frame at `at` after one at `previous`.
fn new_delta(previous: i64, at: i64) -> Result<u16> {
    u16::try_from(at - previous - 1).or_else(|_| err("stack map frames out of order"))
}

/// Copies `n` verification types, moving the offset of each Uninitialized one.
fn copy_vtypes(r: &mut Reader<'_>, out: &mut Vec<u8>, n: usize, map: &OffsetMap) -> Result<()> {
    for _ in 0..n {
        let v = match VType::read(r)? {
            VType::Uninitialized(at) => VType::Uninitialized(map(usize::from(at))? as u16),
            v => v,
        };
        v.write(out);
    }
    Ok(())
}

/// One frame relative to the locals of the frame before it (None: unknown, write it in full).
fn write_frame(out: &mut Vec<u8>, delta: u16, f: &Frame, before: Option<&[VType]>) {
    match (before, f.stack) {
        (Some(before), []) if before == f.locals => put_delta(out, delta, 0, 251),
        (Some(before), [item]) if before == f.locals => {
            put_delta(out, delta, 64, 247);
            item.write(out);
        }
        (Some(before), []) if without_last_few(before, f.locals) => {
            out.push((251 - (before.len() - f.locals.len())) as u8);
            put_u2(out, delta);
        }
        (Some(before), []) if without_last_few(f.locals, before) => {
            out.push((251 + (f.locals.len() - before.len())) as u8);
            put_u2(out, delta);
            for v in &f.locals[before.len()..] {
                v.write(out);
            }
        }
        _ => {
            out.push(255);
            put_u2(out, delta);
            put_u2(out, f.locals.len() as u16);
            for v in f.locals {
                v.write(out);
            }
            put_u2(out, f.stack.len() as u16);
            for v in f.stack {
                v.write(out);
            }
        }
    }
}

/// The type byte of a frame kind that holds a delta up to 63 itself (`base` + delta), or
/// `extended` followed by the delta as a u2.
fn put_delta(out: &mut Vec<u8>, delta: u16, base: u8, extended: u8) {
    if delta <= 63 {
        out.push(base + delta as u8);
    } else {
        out.push(extended);
        put_u2(out, delta);
    }
}

/// Whether `shorter` is `longer` without its last one to three locals (a chop from `longer`,
/// an append to `shorter`).
fn without_last_few(longer: &[VType], shorter: &[VType]) -> bool {
    longer.len() > shorter.len()
        && longer.len() - shorter.len() <= 3
        && longer[..shorter.len()] == *shorter
}

#[cfg(test)]
mod tests {
    use super::*;

    /// same(3); append(+Integer) delta 2; same_locals_1(Null) delta 5; chop 1 delta 0;
    /// full [this, Uninitialized(13)] stack [Uninitialized(13)] delta 1.
    #[rustfmt::skip]
    const TABLE: [u8; 28] = [
        0, 5,
        3,
        252, 0, 2, 1,
        64 + 5, 5,
        250, 0, 0,
        255, 0, 1, 0, 2, 7, 0, 9, 8, 0, 13, 0, 1, 8, 0, 13,
    ];

    fn remapped(data: &[u8], map: &OffsetMap, extra: &[Frame]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        remap(&mut out, data, map, None, extra)?;
        Ok(out)
    }

    #[test]
    fn a_table_decodes_to_full_frames() {
        let table = TABLE;
        let frames = decode(&table, &[VType::Object(9)]).unwrap();
        let offsets: Vec<usize> = frames.iter().map(|f| f.offset).collect();
        assert_eq!(offsets, [3, 6, 12, 13, 15]);
        assert_eq!(frames[1].locals, [VType::Object(9), VType::Integer]);
        assert_eq!(frames[2].stack, [VType::Null]);
        assert_eq!(frames[3].locals, [VType::Object(9)]);
        assert_eq!(frames[4].stack, [VType::Uninitialized(13)]);
    }

    #[test]
    fn remapped_frames_keep_their_form_and_move_every_offset() {
        let table = TABLE;
        assert_eq!(
            remapped(&table, &|at| Ok(at), &[]).unwrap(),
            table,
            "unmoved, a table is written back byte for byte"
        );
        // Everything moves by 10, and by 100 more from offset 12 on: the same_locals_1 frame
        // at 12 (delta 5 -> 105) takes its extended form, and so would a same frame.
        let map = |at: usize| Ok(at + 10 + if at >= 12 { 100 } else { 0 });
        let moved = remapped(&table, &map, &[]).unwrap();
        let initial = [VType::Object(9)];
        let expected: Vec<Decoded> = decode(&table, &initial)
            .unwrap()
            .into_iter()
            .map(|mut f| {
                f.offset = map(f.offset).unwrap();
                for v in f.locals.iter_mut().chain(f.stack.iter_mut()) {
                    if let VType::Uninitialized(at) = v {
                        *at = map(usize::from(*at)).unwrap() as u16;
                    }
                }
                f
            })
            .collect();
        assert_eq!(decode(&moved, &initial).unwrap(), expected);
        assert_eq!(moved[2], 3 + 10, "same frame, delta still in the type byte");
        assert_eq!(moved[7], 247, "same_locals_1_stack_item, now extended");
        assert_eq!(
            decode(&remapped(&moved, &|at| Ok(at), &[]).unwrap(), &initial).unwrap(),
            expected
        );
        assert!(
            remapped(&table, &|at| Ok(20 - at.min(20)), &[]).is_err(),
            "frames moved out of order are refused"
        );
    }

    #[test]
    fn a_same_frame_leads_where_the_body_begins_unless_one_is_there() {
        let shift = |at: usize| Ok(at + 12); // a 12-byte prologue
        let initial = [VType::Object(9)];
        let table = TABLE; // first frame at 3
        let mut out = Vec::new();
        remap(&mut out, &table, &shift, Some(12), &[]).unwrap();
        let frames = decode(&out, &initial).unwrap();
        assert_eq!(frames.len(), 6);
        assert_eq!(
            (frames[0].offset, &frames[0].locals[..]),
            (12, &initial[..])
        );
        assert_eq!(frames[1].offset, 15);
        assert_eq!(frames[2].locals, [VType::Object(9), VType::Integer]);
        // A table whose first frame is at 0 already has one where the body begins.
        let at_zero = [0, 2, 0, 64 + 3, 5];
        let mut out = Vec::new();
        remap(&mut out, &at_zero, &shift, Some(12), &[]).unwrap();
        let offsets: Vec<usize> = decode(&out, &initial)
            .unwrap()
            .iter()
            .map(|f| f.offset)
            .collect();
        assert_eq!(offsets, [12, 16]);
        let mut out = Vec::new();
        encode_after_prologue(&mut out, 12, &[]).unwrap();
        assert_eq!(out, [0, 1, 12], "one same frame");
    }

    #[test]
    fn frames_added_after_a_table_start_in_full() {
        let extra = [
            Frame {
                offset: 40,
                locals: &[],
                stack: &[VType::Object(4)],
            },
            Frame {
                offset: 50,
                locals: &[],
                stack: &[],
            },
        ];
        let initial = [VType::Object(9)];
        let table = TABLE;
        let with = remapped(&table, &|at| Ok(at), &extra).unwrap();
        assert_eq!(with[..2], [0, 7]);
        assert_eq!(with[TABLE.len()], 255, "the first added frame in full");
        assert_eq!(with[with.len() - 1], 50 - 40 - 1, "then a same frame");
        let frames = decode(&with, &initial).unwrap();
        let added: Vec<Frame> = frames[5..].iter().map(Decoded::frame).collect();
        assert_eq!(added, extra);
        let mut alone = Vec::new();
        encode(&mut alone, &extra).unwrap();
        assert_eq!(alone[2], 255);
        let frames = decode(&alone, &initial).unwrap();
        let alone: Vec<Frame> = frames.iter().map(Decoded::frame).collect();
        assert_eq!(alone, extra);
    }
}
