//! The snippets woven in: constants they refer to, calls, key pushes, jumps, padding.

use super::*;

use crate::classfile::{ConstantPool, Result};
use crate::code::{self};

/// A constant the woven code refers to.
#[derive(Clone, Copy)]
pub(super) enum Ref {
    Enter,
    EnterObject,
    EnterConstructor,
    Constructed,
    Exit,
    Allocated,
    Throwable,
    StackMapTable,
    Enter0,
    EnterObject0,
    EnterConstructor0,
    Exit0,
    Gate,
    Call,
    Called,
    Leaf0,
}

/// The constants of [`Ref`], each added to the class's pool when first needed, so that a class
/// gets only what its woven code uses. This matters most at VM init: HotSpot merges a
/// retransformed class's new pool into the old one and looks for every constant it did not
/// have by scanning the whole old pool (`ConstantPool::find_matching_entry`).
#[derive(Default)]
pub(super) struct Refs {
    pub(super) refs: [Option<u16>; 16],
    /// Thread's own methods hooked for monitors=on ([`hook_thread_methods`]): the entry and
    /// exit calls and the gate are the concurrency ones.
    pub(super) sync: bool,
    /// The class's own Class constants (hash of the name, index), read once it is asked for
    /// a return type.
    pub(super) classes: Option<Vec<(u64, u16)>>,
    /// [`Weave::critical`]: entries and exits go through the critical downcalls.
    pub(super) critical: bool,
}

impl Refs {
    pub(super) fn get(&mut self, pool: &mut ConstantPool, r: Ref) -> Result<u16> {
        if let Some(index) = self.refs[r as usize] {
            return Ok(index);
        }
        let index = match r {
            Ref::Enter0 if self.sync => pool.add_method_ref(TRAMPOLINE, "syncEnter0", "(I)V"),
            Ref::EnterObject0 if self.sync => {
                pool.add_method_ref(TRAMPOLINE, "syncEnterObject0", "(Ljava/lang/Object;I)V")
            }
            Ref::Exit0 if self.sync => pool.add_method_ref(TRAMPOLINE, "syncExit0", "(I)V"),
            Ref::Enter0 if self.critical => {
                pool.add_method_ref(TRAMPOLINE, "enterCritical", "(I)V")
            }
            Ref::Exit0 if self.critical => pool.add_method_ref(TRAMPOLINE, "exitCritical", "(I)V"),
            Ref::Gate if self.sync => pool.add_field_ref(TRAMPOLINE, "syncGate", "I"),
            Ref::Enter => pool.add_method_ref(TRAMPOLINE, "enter", "(I)V"),
            Ref::EnterObject => {
                pool.add_method_ref(TRAMPOLINE, "enterObject", "(Ljava/lang/Object;I)V")
            }
            Ref::EnterConstructor => pool.add_method_ref(TRAMPOLINE, "enterConstructor", "(I)V"),
            Ref::Constructed => {
                pool.add_method_ref(TRAMPOLINE, "constructed", "(Ljava/lang/Object;I)V")
            }
            Ref::Exit => pool.add_method_ref(TRAMPOLINE, "exit", "(I)V"),
            Ref::Allocated => pool.add_method_ref(TRAMPOLINE, "allocated", "(Ljava/lang/Object;)V"),
            Ref::Throwable => pool.add_class("java/lang/Throwable"),
            Ref::StackMapTable => pool.add_utf8("StackMapTable"),
            Ref::Enter0 => pool.add_method_ref(TRAMPOLINE, "enter0", "(I)V"),
            Ref::EnterObject0 => {
                pool.add_method_ref(TRAMPOLINE, "enterObject0", "(Ljava/lang/Object;I)V")
            }
            Ref::EnterConstructor0 => pool.add_method_ref(TRAMPOLINE, "enterConstructor0", "(I)V"),
            Ref::Exit0 => pool.add_method_ref(TRAMPOLINE, "exit0", "(I)V"),
            Ref::Gate => pool.add_field_ref(TRAMPOLINE, "gate", "I"),
            Ref::Call if self.critical => pool.add_method_ref(TRAMPOLINE, "callCritical", "(I)V"),
            Ref::Called if self.critical => {
                pool.add_method_ref(TRAMPOLINE, "calledCritical", "(I)V")
            }
            Ref::Leaf0 if self.critical => pool.add_method_ref(TRAMPOLINE, "leafCritical", "(I)V"),
            Ref::Leaf0 => pool.add_method_ref(TRAMPOLINE, "leaf0", "(I)V"),
            Ref::Call => pool.add_method_ref(TRAMPOLINE, "call", "(I)V"),
            Ref::Called => pool.add_method_ref(TRAMPOLINE, "called", "(I)V"),
        }?;
        self.refs[r as usize] = Some(index);
        Ok(index)
    }

    /// A Class constant named `name`: the class's own if it has one, else an added one.
    pub(super) fn class(&mut self, pool: &mut ConstantPool, name: &[u8]) -> Result<u16> {
        let classes = self.classes.get_or_insert_with(|| pool.read_classes());
        match pool.class_among(classes, name) {
            Some(index) => Ok(index),
            None => pool.add_class_bytes(name),
        }
    }

    /// `invokestatic` of trampoline `r`.
    pub(super) fn call(&mut self, pool: &mut ConstantPool, r: Ref) -> Result<[u8; 3]> {
        Ok(call(self.get(pool, r)?))
    }

    /// The entry call of the method whose key `push` pushes: with objects=on an instance
    /// method passes its receiver, and a constructor's receiver follows once super() returns.
    /// `natives`: the natives themselves, else the Java trampolines that read the gate first.
    pub(super) fn entry(
        &mut self,
        pool: &mut ConstantPool,
        push: &[u8],
        weave: Weave,
        (is_static, is_ctor): (bool, bool),
        natives: bool,
    ) -> Result<Snippet> {
        let [plain, object, constructor] = if natives {
            [Ref::Enter0, Ref::EnterObject0, Ref::EnterConstructor0]
        } else {
            [Ref::Enter, Ref::EnterObject, Ref::EnterConstructor]
        };
        Ok(if weave.objects && !is_static && !is_ctor {
            Snippet::of(&[&[code::ALOAD_0], push, &self.call(pool, object)?])
        } else if weave.objects && is_ctor {
            Snippet::of(&[push, &self.call(pool, constructor)?])
        } else {
            Snippet::of(&[push, &self.call(pool, plain)?])
        })
    }

    /// The exit call of the method whose key `push` pushes.
    pub(super) fn exit(&mut self, pool: &mut ConstantPool, push: &[u8]) -> Result<Snippet> {
        Ok(Snippet::of(&[push, &self.call(pool, Ref::Exit)?]))
    }

    /// A method's prologue: the entry native, called only while the trampolines' `gate` is
    /// open for entries, not 0 (`getstatic; ifeq` past the call, to the first instruction).
    /// A leaf's (`leaf`) records its exit too (`leaf0`).
    pub(super) fn gated_entry(
        &mut self,
        pool: &mut ConstantPool,
        push: &[u8],
        weave: Weave,
        m: &MethodInfo,
        leaf: bool,
    ) -> Result<Snippet> {
        let call = if leaf {
            Snippet::of(&[push, &self.call(pool, Ref::Leaf0)?])
        } else {
            self.entry(pool, push, weave, (m.is_static, m.is_ctor), true)?
        };
        let gate = self.get(pool, Ref::Gate)?;
        let skip = 3 + call.len() as u8; // from the ifeq to the first instruction
        Ok(Snippet::of(&[
            &[code::GETSTATIC, (gate >> 8) as u8, gate as u8],
            &[code::IFEQ, 0, skip],
            &call,
        ]))
    }

    /// The block every return of a method jumps to (`ret`: its return instruction), and the
    /// catch-all handler (`athrow`): the exit native, called only while the trampolines'
    /// `gate` is open for exits, above 0 (`getstatic; ifle` past the call), then `ret`.
    pub(super) fn gated_exit(
        &mut self,
        pool: &mut ConstantPool,
        push: &[u8],
        ret: u8,
    ) -> Result<Snippet> {
        let call = Snippet::of(&[push, &self.call(pool, Ref::Exit0)?]);
        let gate = self.get(pool, Ref::Gate)?;
        Ok(Snippet::of(&[
            &[code::GETSTATIC, (gate >> 8) as u8, gate as u8],
            &[code::IFLE, 0, 3 + call.len() as u8],
            &call,
            &[ret],
        ]))
    }
}

pub(super) fn key_push(pool: &mut ConstantPool, key: u32) -> Result<[u8; 3]> {
    if key <= 0x7FFF {
        Ok([code::SIPUSH, (key >> 8) as u8, key as u8])
    } else {
        let i = pool.add_integer(key as i32)?;
        Ok([code::LDC_W, (i >> 8) as u8, i as u8])
    }
}

/// A few instructions woven in (at most 16 bytes), kept off the heap: one set is made per
/// method.
#[derive(Clone, Copy)]
pub(super) struct Snippet {
    pub(super) bytes: [u8; 16],
    pub(super) len: usize,
}

impl Snippet {
    pub(super) fn of(parts: &[&[u8]]) -> Snippet {
        let mut s = Snippet {
            bytes: [0; 16],
            len: 0,
        };
        for part in parts {
            s.bytes[s.len..s.len + part.len()].copy_from_slice(part);
            s.len += part.len();
        }
        s
    }
}

impl std::ops::Deref for Snippet {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A goto `distance` bytes ahead, of `len` bytes (3: goto, 5: goto_w).
pub(super) fn goto(out: &mut Vec<u8>, distance: usize, len: usize) {
    if len == 3 {
        out.push(code::GOTO);
        out.extend_from_slice(&(distance as u16).to_be_bytes());
    } else {
        out.push(code::GOTO_W);
        out.extend_from_slice(&(distance as u32).to_be_bytes());
    }
}

pub(super) fn call(method: u16) -> [u8; 3] {
    [code::INVOKESTATIC, (method >> 8) as u8, method as u8]
}

/// Pads `code` past [`INLINE_LIMIT`] with a block that is never reached, `iconst_0;
/// lookupswitch` with every target on that `iconst_0`, and returns the block's offset (its
/// stack map frame has empty locals and stack). One instruction, so the verifier and HotSpot's
/// bytecode rewriter step over it at once.
pub(super) fn pad_past_inlining(code: &mut Vec<u8>) -> Option<usize> {
    if code.len() > INLINE_LIMIT {
        return None;
    }
    let block = code.len();
    code.extend_from_slice(&[code::ICONST_0, code::LOOKUPSWITCH]);
    code.extend_from_slice(&[0; 3][..switch_pad(block + 1)]);
    // default, npairs, pairs. At least one pair: HotSpot rejects a lookupswitch without pairs
    // that ends the code ("Bad instruction").
    let pairs = (INLINE_LIMIT + 1)
        .saturating_sub(code.len() + 8)
        .div_ceil(8)
        .max(1);
    code.extend_from_slice(&BACK);
    code.extend_from_slice(&(pairs as i32).to_be_bytes());
    code.extend_from_slice(&PADDING_PAIRS[..8 * pairs]);
    Some(block)
}

/// Every padding target: the `iconst_0` right before the switch.
pub(super) const BACK: [u8; 4] = (-1i32).to_be_bytes();
pub(super) const MAX_PADDING_PAIRS: usize = INLINE_LIMIT / 8 + 1;

/// The padding switch's pairs: keys 0, 1, 2, ..., each with target [`BACK`].
pub(super) const PADDING_PAIRS: [u8; 8 * MAX_PADDING_PAIRS] = {
    let mut pairs = [0u8; 8 * MAX_PADDING_PAIRS];
    let mut k = 0;
    while k < MAX_PADDING_PAIRS {
        let key = (k as i32).to_be_bytes();
        let mut b = 0;
        while b < 4 {
            pairs[8 * k + b] = key[b];
            pairs[8 * k + 4 + b] = BACK[b];
            b += 1;
        }
        k += 1;
    }
    pairs
};
