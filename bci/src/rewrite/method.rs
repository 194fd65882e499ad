//! One method's code, rewritten: the layout of the new code, the probes, the handlers,
//! stack maps and line tables moved to the new offsets.

use super::*;

use crate::classfile::{
    err, put_u2, put_u4, write_code_start, Code, ConstantPool, Handler, Reader, Result,
};
use crate::code::{self, analyze, Analysis, Insn, OffsetMap};
use crate::stackmap::{self, Frame, VType};

/// Where an original instruction lands.
#[derive(Clone, Copy)]
pub(super) struct Place {
    /// Where it starts: where branches to it go.
    pub(super) at: usize,
    /// Its length after re-padding (switches) or, for a return, the goto that replaces it,
    /// with what goes before it (a wrapped call).
    pub(super) len: usize,
}

/// What one class's methods reuse, so that rewriting a method allocates little more than
/// its new Code attribute.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) insns: Vec<Insn>,
    /// The stack map frames' offsets and stack depths.
    pub(super) depths: Vec<(usize, usize)>,
    pub(super) places: Vec<Place>,
    /// Old code offset to instruction number (u32::MAX: inside an instruction); one entry
    /// past the end.
    pub(super) index: Vec<u32>,
    /// The method's wrapped calls (`rewrite`).
    pub(super) calls: Vec<(usize, Snippet, Snippet)>,
    pub(super) code: Vec<u8>,
}

pub(super) fn switch_pad(at: usize) -> usize {
    (4 - (at + 1) % 4) % 4
}

/// Places every instruction after a prologue, each return as a goto of `goto_len` bytes and
/// with `around(insn)` bytes (before, after) around each; returns the end of the moved code.
/// An instruction's place begins with what goes before it, where branches to it land.
pub(super) fn layout(
    insns: &[Insn],
    places: &mut Vec<Place>,
    prologue: usize,
    goto_len: usize,
    around: impl Fn(&Insn) -> (usize, usize),
) -> usize {
    places.clear();
    places.reserve(insns.len());
    let mut pos = prologue;
    for i in insns {
        let len = if matches!(i.op, code::TABLESWITCH | code::LOOKUPSWITCH) {
            i.len - switch_pad(i.pc) + switch_pad(pos)
        } else if code::is_return(i.op) {
            goto_len
        } else {
            i.len
        };
        let (before, after) = around(i);
        places.push(Place {
            at: pos,
            len: before + len,
        });
        pos += before + len + after;
    }
    pos
}

/// The verification type a method's return instruction `ret` returns (None: `return`): for
/// `areturn`, a Class constant of the descriptor's return type.
pub(super) fn return_type(
    pool: &mut ConstantPool,
    refs: &mut Refs,
    descriptor: u16,
    ret: u8,
) -> Result<Option<VType>> {
    Ok(match ret {
        code::IRETURN => Some(VType::Integer),
        173 => Some(VType::Long),
        174 => Some(VType::Float),
        175 => Some(VType::Double),
        176 => {
            let d = pool.utf8(descriptor)?;
            let Some(close) = d.iter().position(|&b| b == b')') else {
                return err("bad method descriptor");
            };
            let name = match &d[close + 1..] {
                [b'L', name @ .., b';'] => name.to_vec(),
                array @ [b'[', ..] => array.to_vec(),
                _ => return err("areturn in a method that returns no reference"),
            };
            Some(VType::Object(refs.class(pool, &name)?))
        }
        _ => None,
    })
}

/// A method's new Code attribute, and what was done to it.
pub(super) struct Rewritten {
    pub(super) data: Vec<u8>,
    /// Padded past [`INLINE_LIMIT`].
    pub(super) padded: bool,
    /// Calls of intrinsic candidates wrapped.
    pub(super) wrapped: u32,
    /// A leaf: its exit recorded with its entry.
    pub(super) leaf: bool,
}

/// What is woven around a method's body: its entry (the prologue), its exits (the exit
/// block, the catch-all's rethrow), and after an allocation or super().
pub(super) struct Parts {
    pub(super) analysis: Analysis,
    /// A leaf: its exit recorded with its entry, its returns kept, no exit block or handler.
    pub(super) leaf: bool,
    pub(super) prologue: Snippet,
    pub(super) rethrow: Snippet,
    /// The method's return instruction (None: `return`-less, or a leaf).
    pub(super) ret: Option<u8>,
    pub(super) exit_block: Snippet,
    pub(super) allocated: Snippet,
    /// objects=on: `this` reported right after super()/this() initialized it, at that pc.
    pub(super) super_call: Option<usize>,
    pub(super) constructed: Snippet,
    pub(super) throwable: u16,
}

impl Parts {
    pub(super) fn make(
        pool: &mut ConstantPool,
        m: &MethodInfo<'_>,
        code: &Code,
        insns: &[Insn],
        depths: &mut Vec<(usize, usize)>,
        refs: &mut Refs,
        weave: Weave,
    ) -> Result<Parts> {
        let analysis = if m.is_ctor || weave.alloc {
            match analyze(code, pool, insns, m.is_ctor, weave.alloc) {
                Ok(a) => a,
                Err(e) if m.is_ctor => return Err(e),
                Err(_) => Analysis::default(),
            }
        } else {
            Analysis::default()
        };
        if m.is_ctor && analysis.super_call.is_none() {
            return err("constructor without a super() or this() call");
        }
        // A leaf records its exit with its entry: its returns stay, it gets no exit block and
        // no handler. (With objects=on, an instance method's entry passes its receiver.)
        let leaf = weave.leaves
            && !refs.sync
            && !m.is_ctor
            && (m.is_static || !weave.objects)
            && code::is_leaf(
                code,
                pool,
                insns,
                &code::LeafScope {
                    this: m.class,
                    is_static: m.is_static,
                    fields: m.fields,
                },
            );
        let push = key_push(pool, m.key)?;
        let prologue = refs.gated_entry(pool, &push, weave, m, leaf)?;
        let rethrow = if leaf {
            Snippet::of(&[])
        } else {
            refs.gated_exit(pool, &push, code::ATHROW)?
        };
        let ret = insns
            .iter()
            .find(|i| code::is_return(i.op))
            .map(|i| i.op)
            .filter(|_| !leaf);
        if ret.is_some() {
            // Every return jumps to one exit block, whose frame holds only the value returned.
            depths.clear();
            for a in &code.attributes {
                if pool.utf8(a.name)? == b"StackMapTable" {
                    stackmap::stack_depths(&a.data, depths)?;
                }
            }
            let clean = code::returns_leave_only_their_value(code, pool, insns, depths);
            if clean == Ok(false) {
                return err("a return leaves more than its value on the operand stack");
            }
        }
        let exit_block = match ret {
            Some(ret) => refs.gated_exit(pool, &push, ret)?,
            None => Snippet::of(&[]),
        };
        let allocated = if weave.alloc && !analysis.allocations.is_empty() {
            Snippet::of(&[&[code::DUP], &refs.call(pool, Ref::Allocated)?])
        } else {
            Snippet::of(&[])
        };
        let super_call = analysis.super_call.filter(|_| m.is_ctor && weave.objects);
        let constructed = if super_call.is_some() {
            Snippet::of(&[&[code::ALOAD_0], &push, &refs.call(pool, Ref::Constructed)?])
        } else {
            Snippet::of(&[])
        };
        let throwable = if leaf {
            0
        } else {
            refs.get(pool, Ref::Throwable)?
        };
        Ok(Parts {
            analysis,
            leaf,
            prologue,
            rethrow,
            ret,
            exit_block,
            allocated,
            super_call,
            constructed,
            throwable,
        })
    }

    /// What goes right after instruction `i`: the allocation's report, or `this`'s.
    pub(super) fn suffix_of(&self, i: &Insn, weave: Weave) -> &[u8] {
        if self.super_call == Some(i.pc) {
            &self.constructed
        } else if weave.alloc && self.analysis.allocations.binary_search(&i.pc).is_ok() {
            &self.allocated
        } else {
            &[]
        }
    }
}

/// The wrapped calls of intrinsic candidates (`sites`: the callee's key by constant-pool
/// index, or u32::MAX): (pc, what goes before, what goes after), in code order.
pub(super) fn wrapped_calls(
    pool: &mut ConstantPool,
    refs: &mut Refs,
    code: &Code,
    insns: &[Insn],
    sites: &[u32],
    calls: &mut Vec<(usize, Snippet, Snippet)>,
) -> Result<()> {
    calls.clear();
    for i in insns.iter().filter(|i| code::is_invoke(i.op)) {
        let at = u16::from_be_bytes([code.code[i.pc + 1], code.code[i.pc + 2]]);
        if let Some(&key) = sites.get(usize::from(at)).filter(|&&k| k != u32::MAX) {
            let push = key_push(pool, key)?;
            calls.push((
                i.pc,
                Snippet::of(&[&push, &refs.call(pool, Ref::Call)?]),
                Snippet::of(&[&push, &refs.call(pool, Ref::Called)?]),
            ));
        }
    }
    Ok(())
}

/// Where the blocks after the moved body begin.
pub(super) struct Blocks {
    /// The end of the moved body: where the exit block begins.
    pub(super) end: usize,
    pub(super) catch_all: usize,
    /// A constructor's second handler, for the code before super()/this().
    pub(super) catch_before_super: usize,
    /// Where the dead padding begins, if any.
    pub(super) padding: Option<usize>,
}

pub(super) fn rewrite(
    pool: &mut ConstantPool,
    m: &MethodInfo<'_>,
    data: &[u8],
    refs: &mut Refs,
    weave: Weave,
    sites: &[u32],
    scratch: &mut Scratch,
) -> Result<Rewritten> {
    let code = Code::parse(data)?;
    let Scratch {
        insns,
        depths,
        places,
        index,
        calls,
        code: out,
    } = scratch;
    code::decode_into(&code.code, insns)?;
    if insns
        .iter()
        .any(|i| matches!(i.op, code::JSR | code::JSR_W | code::RET))
    {
        return err("uses jsr/ret subroutines");
    }
    let parts = Parts::make(pool, m, &code, insns, depths, refs, weave)?;
    wrapped_calls(pool, refs, &code, insns, sites, calls)?;
    let call_at = |i: &Insn| -> Option<&(usize, Snippet, Snippet)> {
        if calls.is_empty() || !code::is_invoke(i.op) {
            return None;
        }
        calls
            .binary_search_by_key(&i.pc, |c| c.0)
            .ok()
            .map(|k| &calls[k])
    };
    // Each return becomes a goto to the exit block after the body: a goto_w once the body
    // outgrows a 16-bit offset. A leaf's stay.
    let mut goto_len = if parts.leaf { 1 } else { 3 };
    let around = |i: &Insn| match call_at(i) {
        Some((_, before, after)) => (before.len(), after.len() + parts.suffix_of(i, weave).len()),
        None => (0, parts.suffix_of(i, weave).len()),
    };
    let prologue_len = parts.prologue.len();
    let mut end = layout(insns, places, prologue_len, goto_len, around);
    if parts.ret.is_some() && end > 0x7FFF {
        goto_len = 5;
        end = layout(insns, places, prologue_len, goto_len, around);
    }
    index.clear();
    index.resize(code.code.len() + 1, u32::MAX);
    for (k, i) in insns.iter().enumerate() {
        index[i.pc] = k as u32;
    }
    let old_end = code.code.len();
    let map = |old: usize| -> Result<usize> {
        if old == old_end {
            return Ok(end);
        }
        match index.get(old) {
            Some(&k) if k != u32::MAX => Ok(places[k as usize].at),
            _ => err(format!("offset {} is not an instruction", old)),
        }
    };

    // The body, the exit block, two handlers and the padding.
    out.clear();
    out.reserve(end + parts.exit_block.len() + 2 * parts.rethrow.len() + INLINE_LIMIT + 16);
    out.extend_from_slice(&parts.prologue);
    for (i, place) in insns.iter().zip(places.iter()) {
        let call = call_at(i);
        if let Some((_, before, _)) = call {
            out.extend_from_slice(before);
        }
        if code::is_return(i.op) && parts.leaf {
            out.push(i.op);
        } else if code::is_return(i.op) {
            goto(out, end - place.at, goto_len);
        } else {
            emit(out, &code.code, i, out.len(), &map)?;
        }
        if let Some((_, _, after)) = call {
            out.extend_from_slice(after);
        }
        out.extend_from_slice(parts.suffix_of(i, weave));
    }
    debug_assert_eq!(out.len(), end);
    out.extend_from_slice(&parts.exit_block);
    let catch_all = out.len();
    out.extend_from_slice(&parts.rethrow);
    let catch_before_super = out.len();
    if m.is_ctor {
        out.extend_from_slice(&parts.rethrow);
    }
    if out.len() > 0xFFFF {
        return err("would outgrow the 64 KiB code limit");
    }
    let padding = if weave.inlinable {
        None
    } else {
        pad_past_inlining(out)
    };
    let blocks = Blocks {
        end,
        catch_all,
        catch_before_super,
        padding,
    };
    let super_at = |pc: usize| places[index[pc] as usize];
    let thrown = [VType::Object(parts.throwable)];
    let returned = match parts.ret {
        Some(ret) => return_type(pool, refs, m.descriptor, ret)?,
        None => None,
    };
    let after = [thrown.as_slice(), returned.as_slice()];
    let (handlers, frames) = handlers_and_frames(m, &code, &parts, &blocks, &map, super_at, after)?;
    let body = (out.as_slice(), prologue_len);
    let data = code_attribute(pool, refs, m, &code, body, &handlers, &frames, &map)?;
    Ok(Rewritten {
        data,
        padded: padding.is_some(),
        wrapped: calls.len() as u32,
        leaf: parts.leaf,
    })
}

/// The exception table (the original handlers moved, the catch-alls added) and the frames of
/// the blocks after the body: each block has two, at its start and at its return or athrow,
/// where its gate's branch lands; locals are dropped (no instruction there reads one), the
/// stack holds what is thrown or returned (`after`: those two).
pub(super) fn handlers_and_frames<'t>(
    m: &MethodInfo<'_>,
    code: &Code,
    parts: &Parts,
    b: &Blocks,
    map: &OffsetMap,
    super_at: impl Fn(usize) -> Place,
    [thrown, returned]: [&'t [VType]; 2],
) -> Result<(Vec<Handler>, Vec<Frame<'t>>)> {
    let mut handlers = Vec::with_capacity(code.handlers.len() + 2);
    for h in &code.handlers {
        handlers.push(Handler {
            start: map(h.start as usize)? as u16,
            end: map(h.end as usize)? as u16,
            handler: map(h.handler as usize)? as u16,
            catch_type: h.catch_type,
        });
    }
    let begin = parts.prologue.len();
    let mut frames = Vec::with_capacity(7);
    let mut block = |start: usize, len: usize, locals, stack| {
        for offset in [start, start + len - 1] {
            frames.push(Frame {
                offset,
                locals,
                stack,
            });
        }
    };
    if parts.ret.is_some() {
        block(b.end, parts.exit_block.len(), &[], returned);
    }
    if !parts.leaf {
        block(b.catch_all, parts.rethrow.len(), &[], thrown);
    }
    match parts.analysis.super_call.filter(|_| m.is_ctor) {
        Some(pc) => {
            // The super()/this() call itself stays uncovered: HotSpot checks a handler that
            // covers it against the frame after the call (this initialized) with the
            // uninitialized flag still set, which no frame can satisfy. An exception from it
            // leaves without an exit record; the writer unwinds such frames by key.
            let call = super_at(pc);
            let after_super = call.at + call.len;
            if begin < call.at {
                handlers.push(Handler {
                    start: begin as u16,
                    end: call.at as u16,
                    handler: b.catch_before_super as u16,
                    catch_type: 0,
                });
            }
            if after_super < b.end {
                handlers.push(Handler {
                    start: after_super as u16,
                    end: b.end as u16,
                    handler: b.catch_all as u16,
                    catch_type: 0,
                });
            }
            block(
                b.catch_before_super,
                parts.rethrow.len(),
                &[VType::UninitializedThis],
                thrown,
            );
        }
        None if parts.leaf => {}
        None => handlers.push(Handler {
            start: begin as u16,
            end: b.end as u16,
            handler: b.catch_all as u16,
            catch_type: 0,
        }),
    }
    if let Some(offset) = b.padding {
        frames.push(Frame {
            offset,
            locals: &[],
            stack: &[],
        });
    }
    Ok((handlers, frames))
}

/// The new Code attribute, written once: header, code `out` (its body from `begin`, after the
/// prologue), exception table, the tables whose offsets move (the stack map with `frames`
/// added after the body).
#[allow(clippy::too_many_arguments)]
pub(super) fn code_attribute(
    pool: &mut ConstantPool,
    refs: &mut Refs,
    m: &MethodInfo<'_>,
    code: &Code,
    (out, begin): (&[u8], usize),
    handlers: &[Handler],
    frames: &[Frame<'_>],
    map: &OffsetMap,
) -> Result<Vec<u8>> {
    let tables: usize = code.attributes.iter().map(|a| 6 + a.data.len()).sum();
    let mut new = Vec::with_capacity(16 + out.len() + 8 * handlers.len() + tables + 64);
    let max_stack = code.max_stack.saturating_add(2).max(2);
    write_code_start(&mut new, max_stack, code.max_locals, out, handlers);
    let count_at = new.len();
    put_u2(&mut new, 0);
    let mut count = 0u16;
    let mut had_stack_map = false;
    for a in &code.attributes {
        let table = match pool.utf8(a.name)? {
            b"LineNumberTable" => Table::Lines,
            b"LocalVariableTable" | b"LocalVariableTypeTable" => Table::Locals,
            b"StackMapTable" => Table::StackMap,
            // Offsets inside type annotations and unknown attributes would go stale: drop them.
            _ => continue,
        };
        let length_at = attribute_header(&mut new, a.name);
        match table {
            Table::Lines => line_numbers(&mut new, &a.data, map)?,
            Table::Locals => local_variables(&mut new, &a.data, map)?,
            Table::StackMap => {
                had_stack_map = true;
                stackmap::remap(&mut new, &a.data, map, Some(begin), frames)?;
            }
        }
        end_attribute(&mut new, length_at);
        count += 1;
    }
    if !had_stack_map && m.stack_maps {
        let length_at = attribute_header(&mut new, refs.get(pool, Ref::StackMapTable)?);
        stackmap::encode_after_prologue(&mut new, begin, frames)?;
        end_attribute(&mut new, length_at);
        count += 1;
    }
    new[count_at..count_at + 2].copy_from_slice(&count.to_be_bytes());
    Ok(new)
}

/// An attribute's name and a length to be filled in by [`end_attribute`]; returns where the
/// length goes.
pub(super) fn attribute_header(out: &mut Vec<u8>, name: u16) -> usize {
    put_u2(out, name);
    put_u4(out, 0);
    out.len() - 4
}

pub(super) fn end_attribute(out: &mut [u8], length_at: usize) {
    let length = (out.len() - length_at - 4) as u32;
    out[length_at..length_at + 4].copy_from_slice(&length.to_be_bytes());
}

/// The Code attributes that hold bytecode offsets and are carried over.
pub(super) enum Table {
    Lines,
    Locals,
    StackMap,
}

/// Writes one instruction at `at` with its branch offsets moved.
pub(super) fn emit(
    out: &mut Vec<u8>,
    code: &[u8],
    i: &Insn,
    at: usize,
    map: &OffsetMap,
) -> Result<()> {
    debug_assert_eq!(out.len(), at);
    let rel = |target: usize| -> Result<i64> { Ok(map(target)? as i64 - at as i64) };
    match i.op {
        153..=168 | 198 | 199 => code::each_target(code, i, |target| {
            let off = rel(target)?;
            let Ok(off) = i16::try_from(off) else {
                return err("a branch would outgrow its 16-bit offset");
            };
            out.push(i.op);
            out.extend_from_slice(&off.to_be_bytes());
            Ok(())
        }),
        code::GOTO_W | code::JSR_W => code::each_target(code, i, |target| {
            out.push(i.op);
            out.extend_from_slice(&(rel(target)? as i32).to_be_bytes());
            Ok(())
        }),
        code::TABLESWITCH | code::LOOKUPSWITCH => {
            out.push(i.op);
            out.extend_from_slice(&[0; 3][..switch_pad(at)]);
            let base = (i.pc + 4) & !3;
            // Default first, then (lookupswitch: each key and) each target.
            let mut k = 0;
            code::each_target(code, i, |target| {
                if k == 0 {
                    out.extend_from_slice(&(rel(target)? as i32).to_be_bytes());
                    let counts = if i.op == code::TABLESWITCH { 8 } else { 4 }; // low, high | npairs
                    out.extend_from_slice(&code[base + 4..base + 4 + counts]);
                } else {
                    if i.op == code::LOOKUPSWITCH {
                        let key_at = base + 8 * k;
                        out.extend_from_slice(&code[key_at..key_at + 4]);
                    }
                    out.extend_from_slice(&(rel(target)? as i32).to_be_bytes());
                }
                k += 1;
                Ok(())
            })
        }
        _ => {
            out.extend_from_slice(&code[i.pc..i.pc + i.len]);
            Ok(())
        }
    }
}

/// Copies a LineNumberTable with its offsets moved.
pub(super) fn line_numbers(out: &mut Vec<u8>, data: &[u8], map: &OffsetMap) -> Result<()> {
    let mut r = Reader::new(data);
    let n = r.u2()?;
    put_u2(out, n);
    for _ in 0..n {
        let start = r.u2()? as usize;
        let line = r.u2()?;
        put_u2(out, if start == 0 { 0 } else { map(start)? as u16 });
        put_u2(out, line);
    }
    Ok(())
}

/// Copies a LocalVariable(Type)Table with its ranges moved.
pub(super) fn local_variables(out: &mut Vec<u8>, data: &[u8], map: &OffsetMap) -> Result<()> {
    let mut r = Reader::new(data);
    let n = r.u2()?;
    put_u2(out, n);
    for _ in 0..n {
        let start = r.u2()? as usize;
        let length = r.u2()? as usize;
        let rest = r.bytes(6)?;
        let new_start = if start == 0 { 0 } else { map(start)? };
        let new_end = map(start + length)?;
        put_u2(out, new_start as u16);
        put_u2(out, (new_end - new_start) as u16);
        out.extend_from_slice(rest);
    }
    Ok(())
}
