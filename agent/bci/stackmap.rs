//! StackMapTable (JVMS §4.7.4): decoded into frames at absolute offsets with their full
//! locals and stack, so the rewriter can move them, and written back with each frame in the
//! shortest form its predecessor allows (HotSpot reads every frame of a verified method).
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

use super::classfile::{err, put_u2, ConstantPool, Reader, Result};

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

/// A frame at an absolute offset, fully spelled out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub offset: usize,
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

/// The verification types of a method's parameters (with `this` first unless static).
pub fn initial_locals(
    pool: &mut ConstantPool,
    this_class: u16,
    desc: &str,
    is_static: bool,
    is_ctor: bool,
) -> Result<Vec<VType>> {
    let mut locals = Vec::new();
    if !is_static {
        locals.push(if is_ctor {
            VType::UninitializedThis
        } else {
            VType::Object(this_class)
        });
    }
    let b = desc.as_bytes();
    let mut i = 1;
    while i < b.len() && b[i] != b')' {
        let start = i;
        while b.get(i) == Some(&b'[') {
            i += 1;
        }
        let t = match b.get(i) {
            Some(b'L') => {
                let end = i + b[i..]
                    .iter()
                    .position(|&c| c == b';')
                    .ok_or_else(|| super::classfile::ClassError("bad descriptor".into()))?;
                i = end;
                None
            }
            Some(b'B' | b'C' | b'S' | b'Z' | b'I') => Some(VType::Integer),
            Some(b'F') => Some(VType::Float),
            Some(b'J') => Some(VType::Long),
            Some(b'D') => Some(VType::Double),
            _ => return err("bad descriptor"),
        };
        i += 1;
        let is_array = i - start > 1 && b[start] == b'[';
        locals.push(match (t, is_array) {
            (Some(t), false) => t,
            _ => {
                let name = &desc[start..i];
                let name = if is_array {
                    name.to_string()
                } else {
                    name[1..name.len() - 1].to_string()
                };
                VType::Object(pool.add_class(&name)?)
            }
        });
    }
    Ok(locals)
}

/// Decodes a StackMapTable attribute into full frames.
pub fn decode(data: &[u8], initial: &[VType]) -> Result<Vec<Frame>> {
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
        frames.push(Frame {
            offset: offset as usize,
            locals: locals.clone(),
            stack,
        });
    }
    Ok(frames)
}

/// Writes `frames` (full locals and stack, in offset order) as a StackMapTable, each frame in
/// the shortest form the previous one allows: same, same_locals_1_stack_item, chop, append,
/// or full. `initial` is the implicit frame of the method's descriptor; None when it is not
/// at hand (a method that had no table), and then the first frame is written in full.
pub fn encode(frames: &[Frame], initial: Option<&[VType]>) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(2 + 4 * frames.len());
    put_u2(&mut out, frames.len() as u16);
    let mut previous: i64 = -1;
    let mut locals = initial;
    for f in frames {
        let delta = f.offset as i64 - previous - 1;
        if !(0..=0xFFFF).contains(&delta) {
            return err("stack map frames out of order");
        }
        previous = f.offset as i64;
        write_frame(&mut out, delta as u16, f, locals);
        locals = Some(&f.locals);
    }
    Ok(out)
}

/// One frame relative to the locals of the frame before it (None: unknown, write it in full).
fn write_frame(out: &mut Vec<u8>, delta: u16, f: &Frame, before: Option<&[VType]>) {
    match (before, f.stack.as_slice()) {
        (Some(before), []) if before == f.locals.as_slice() => put_delta(out, delta, 0, 251),
        (Some(before), [item]) if before == f.locals.as_slice() => {
            put_delta(out, delta, 64, 247);
            item.write(out);
        }
        (Some(before), []) if without_last_few(before, &f.locals) => {
            out.push((251 - (before.len() - f.locals.len())) as u8);
            put_u2(out, delta);
        }
        (Some(before), []) if without_last_few(&f.locals, before) => {
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
            for v in &f.locals {
                v.write(out);
            }
            put_u2(out, f.stack.len() as u16);
            for v in &f.stack {
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

    #[test]
    fn compact_frames_decode_to_full_ones_and_round_trip() {
        // same(3); append(+Integer) delta 2; same_locals_1(Long)? use Null; chop 1 delta 0.
        let data = [0u8, 4, 3, 252, 0, 2, 1, 64 + 5, 5, 250, 0, 0];
        let initial = [VType::Object(9)];
        let frames = decode(&data, &initial).unwrap();
        let offsets: Vec<usize> = frames.iter().map(|f| f.offset).collect();
        assert_eq!(offsets, [3, 6, 12, 13]);
        assert_eq!(frames[1].locals, [VType::Object(9), VType::Integer]);
        assert_eq!(frames[2].stack, [VType::Null]);
        assert_eq!(frames[3].locals, [VType::Object(9)]);
        let compact = encode(&frames, Some(&initial)).unwrap();
        assert_eq!(
            compact, data,
            "the shortest form of each frame is the one it was read in"
        );
        assert_eq!(decode(&compact, &initial).unwrap(), frames);
        let full = encode(&frames, None).unwrap();
        assert_eq!(
            full[2], 255,
            "a first frame with no initial frame to go by is written in full"
        );
        assert_eq!(decode(&full, &initial).unwrap(), frames);
    }
}
