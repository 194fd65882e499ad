//! `monitors=on`: the call sites of Object.notify/notifyAll and Thread.sleep become
//! calls of JliveTrampoline's methods with the same stack effect, which record around the
//! original call (see JliveTrampoline.java):
//!
//! ```text
//!   invokevirtual|invokeinterface  X.notify()V     →  invokestatic T.notify(Object)V  [nop nop]
//!   invokevirtual|invokeinterface  X.notifyAll()V  →  invokestatic T.notifyAll(Object)V
//!   invokestatic    Thread.sleep(J)V / (JI)V       →  invokestatic T.sleep(J[, I])V
//! ```
//!
//! Each replacement has the length of the instruction it replaces (an invokeinterface's last two
//! bytes become `nop`s) and pops and pushes the same, so no offset, handler or stack map frame
//! moves. `notify` and `notifyAll` are final in Object: whatever class a call names, it is
//! Object's. A sleep is rewritten when the class the call names is a Thread whose `sleep` of
//! that descriptor is Thread's: java/lang/Thread, the class being rewritten if it extends
//! Thread and declares no such `sleep` of its own, or one the caller of [`hook_calls`] knows to
//! be one (a class that hides Thread.sleep with its own keeps its calls); JDK 17's Thread.sleep(long) is native, so its calls are where it can be seen
//! (where Thread's sleep methods have code, [`crate::rewrite::hook_thread_methods`] hooks
//! them, and a call of both is recorded once). Thread.start and join are hooked in Thread
//! itself, which a call through a subclass's name reaches too. Object.wait, monitor contention
//! and thread start and end have JVMTI events of their own.

use super::classfile::{ClassFile, Code, ConstantPool, Result};
use super::code::{self, INVOKESTATIC};
use super::rewrite::TRAMPOLINE;

const INVOKEVIRTUAL: u8 = 182;
const INVOKEINTERFACE: u8 = 185;
const NOP: u8 = 0;

/// The names of the methods whose calls are rewritten: a class whose constant pool has none of
/// them is left at once.
const NAMES: [&[u8]; 3] = [b"notify", b"notifyAll", b"sleep"];

/// What a call becomes: the trampoline's name and descriptor.
fn replacement(
    op: u8,
    owner: &[u8],
    name: &[u8],
    desc: &[u8],
    is_thread: &dyn Fn(&[u8], &[u8]) -> bool,
) -> Option<(&'static str, &'static str)> {
    const OBJECT: &str = "(Ljava/lang/Object;)V";
    match (op, name, desc) {
        (INVOKEVIRTUAL | INVOKEINTERFACE, b"notify", b"()V") => Some(("notify", OBJECT)),
        (INVOKEVIRTUAL | INVOKEINTERFACE, b"notifyAll", b"()V") => Some(("notifyAll", OBJECT)),
        _ if !is_thread(owner, desc) => None,
        (INVOKESTATIC, b"sleep", b"(J)V") => Some(("sleep", "(J)V")),
        (INVOKESTATIC, b"sleep", b"(JI)V") => Some(("sleep", "(JI)V")),
        _ => None,
    }
}

/// The class with its concurrency calls rewritten, or None when it has none. `is_thread(owner,
/// descriptor)` tells whether a class (internal name) other than java/lang/Thread and the class
/// itself is known to extend Thread without declaring a `sleep` of that descriptor.
pub fn hook_calls(
    class: &[u8],
    is_thread: &dyn Fn(&[u8], &[u8]) -> bool,
) -> Result<Option<Vec<u8>>> {
    // The names stand in the constant pool as plain bytes: a class without them is not parsed
    // (most classes: their load pays a scan of their bytes, not a parse).
    let mentions = |name: &[u8]| class.windows(name.len()).any(|w| w == name);
    if !mentions(b"notify") && !mentions(b"sleep") {
        return Ok(None);
    }
    let mut cf = ClassFile::parse(class)?;
    let named = cf.pool.entries.iter().any(|c| match c {
        super::classfile::Constant::Utf8(s) => NAMES.contains(&s.as_ref()),
        _ => false,
    });
    if !named {
        return Ok(None);
    }
    let this = cf.pool.class_name(cf.this_class)?.to_vec();
    let superclass = cf.super_name()?.map(|s| s.into_owned()).unwrap_or_default();
    // The sleep descriptors this class declares itself (hiding Thread's).
    let mut own_sleeps = Vec::new();
    for m in &cf.methods {
        if cf.pool.utf8(m.name)? == b"sleep" {
            own_sleeps.push(cf.pool.utf8(m.descriptor)?.to_vec());
        }
    }
    // The class itself inherits Thread's sleep through its superclass, unless it declares one.
    let thread = |owner: &[u8], desc: &[u8]| {
        if owner == b"java/lang/Thread" {
            true
        } else if owner == this.as_slice() {
            !own_sleeps.iter().any(|d| d == desc)
                && (superclass == "java/lang/Thread" || is_thread(superclass.as_bytes(), desc))
        } else {
            is_thread(owner, desc)
        }
    };
    let mut added: Vec<((&str, &str), u16)> = Vec::new();
    let mut changed = false;
    let mut methods = std::mem::take(&mut cf.methods);
    for m in &mut methods {
        for a in &mut m.attributes {
            if !cf.pool.is_utf8(a.name, b"Code") {
                continue;
            }
            let mut body = Code::parse(&a.data)?;
            let mut bytes = body.code.to_vec();
            let mut hooked = false;
            let mut pc = 0;
            while pc < body.code.len() {
                let at = pc;
                let op = body.code[at];
                pc += code::length(&body.code, at)?;
                if !matches!(op, INVOKEVIRTUAL | INVOKEINTERFACE | INVOKESTATIC) || pc > bytes.len()
                {
                    continue;
                }
                let i = code::Insn {
                    pc: at,
                    op,
                    len: pc - at,
                };
                let index = u16::from_be_bytes([bytes[i.pc + 1], bytes[i.pc + 2]]);
                let Ok((owner, name, desc)) = cf.pool.member_ref(index) else {
                    continue;
                };
                let Some(target) = replacement(i.op, owner, name, desc, &thread) else {
                    continue;
                };
                let method = match added.iter().find(|(t, _)| *t == target) {
                    Some(&(_, m)) => m,
                    None => {
                        let m = add_trampoline(&mut cf.pool, target)?;
                        added.push((target, m));
                        m
                    }
                };
                bytes[i.pc] = INVOKESTATIC;
                bytes[i.pc + 1..i.pc + 3].copy_from_slice(&method.to_be_bytes());
                if i.op == INVOKEINTERFACE {
                    bytes[i.pc + 3] = NOP;
                    bytes[i.pc + 4] = NOP;
                }
                hooked = true;
            }
            if hooked {
                body.code = bytes.into();
                a.data = body.write().into();
                changed = true;
            }
        }
    }
    cf.methods = methods;
    Ok(changed.then(|| cf.write()))
}

fn add_trampoline(pool: &mut ConstantPool, (name, desc): (&str, &str)) -> Result<u16> {
    pool.add_method_ref(TRAMPOLINE, name, desc)
}
