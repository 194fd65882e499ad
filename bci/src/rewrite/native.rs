//! Native methods: renamed with a prefix, a Java wrapper of the old name calls them.

use super::*;

use crate::classfile::{Code, ConstantPool, Handler, Result};
use crate::code::{self};
use crate::stackmap::{self, Frame, VType};

/// Turns native method `m` into a wrapper and returns the renamed native to append.
pub(super) fn wrap_native<'a>(
    pool: &mut ConstantPool<'a>,
    this_class: u16,
    m: &mut crate::classfile::Member<'a>,
    key: u32,
    refs: &mut Refs,
    weave: Weave,
    stack_maps: bool,
) -> Result<crate::classfile::Member<'a>> {
    let mut prefixed = NATIVE_PREFIX.as_bytes().to_vec();
    prefixed.extend_from_slice(pool.utf8(m.name)?);
    let desc = pool.utf8(m.descriptor)?.to_vec();
    let is_static = m.access & ACC_STATIC != 0;
    let target_name = pool.add_utf8_bytes(&prefixed)?;
    let target = pool.add_method_ref_in(this_class, target_name, m.descriptor)?;
    let push = key_push(pool, key)?;
    let mut code = refs
        .entry(pool, &push, weave, (is_static, false), false)?
        .to_vec();
    let begin = code.len();
    let mut slot: usize = 0;
    if !is_static {
        code.push(code::ALOAD_0);
        slot = 1;
    }
    let b = desc.as_slice();
    let mut i = 1;
    while b[i] != b')' {
        let (load, size) = match b[i] {
            b'J' => (22u8, 2),
            b'F' => (23, 1),
            b'D' => (24, 2),
            b'L' | b'[' => (25, 1),
            _ => (21, 1),
        };
        while b[i] == b'[' {
            i += 1;
        }
        if b[i] == b'L' {
            i += b[i..].iter().position(|&c| c == b';').unwrap_or(0);
        }
        i += 1;
        if slot <= 0xFF {
            code.extend_from_slice(&[load, slot as u8]);
        } else {
            code.extend_from_slice(&[code::WIDE, load, (slot >> 8) as u8, slot as u8]);
        }
        slot += size;
    }
    let invoke = if is_static {
        code::INVOKESTATIC
    } else {
        code::INVOKESPECIAL
    };
    code.extend_from_slice(&[invoke, (target >> 8) as u8, target as u8]);
    let end = code.len();
    let exit = refs.exit(pool, &push)?;
    code.extend_from_slice(&exit);
    code.push(match b.get(i + 1) {
        Some(b'V') => code::RETURN,
        Some(b'J') => 173,
        Some(b'F') => 174,
        Some(b'D') => 175,
        Some(b'L' | b'[') => 176,
        _ => code::IRETURN,
    });
    let handler = code.len();
    code.extend_from_slice(&exit);
    code.push(code::ATHROW);
    let (args, ret) = crate::classfile::descriptor_slots(&desc)?;
    let mut attributes = Vec::new();
    if stack_maps {
        let thrown = [VType::Object(refs.get(pool, Ref::Throwable)?)];
        let frame = Frame {
            offset: handler,
            locals: &[],
            stack: &thrown,
        };
        attributes.push(crate::classfile::Attribute {
            name: refs.get(pool, Ref::StackMapTable)?,
            data: {
                let mut table = Vec::new();
                stackmap::encode(&mut table, &[frame])?;
                table.into()
            },
        });
    }
    let body = Code {
        max_stack: (args + 1).max(ret + 1).max(2) as u16 + 1,
        max_locals: slot as u16,
        code: code.into(),
        handlers: vec![Handler {
            start: begin as u16,
            end: end as u16,
            handler: handler as u16,
            catch_type: 0,
        }],
        attributes,
    };
    let code_name = pool.add_utf8("Code")?;
    let native = crate::classfile::Member {
        access: (m.access & !(ACC_PUBLIC | ACC_PROTECTED)) | ACC_PRIVATE | ACC_SYNTHETIC,
        name: target_name,
        descriptor: m.descriptor,
        attributes: Vec::new(),
    };
    m.access &= !(ACC_NATIVE | ACC_SYNCHRONIZED);
    m.attributes.push(crate::classfile::Attribute {
        name: code_name,
        data: body.write().into(),
    });
    Ok(native)
}
