//! Bytecode instructions: lengths, branch targets, and a small abstract interpretation of
//! the operand stack in slot units that tracks only where uninitialized objects are — enough
//! to find the super()/this() call of a constructor and the `<init>` call that completes each
//! `new`, so that instrumentation never touches an object before it is initialized.

use super::classfile::{
    descriptor_slots, err, field_slots, Code, ConstantPool, Result, ACC_FINAL, ACC_STATIC,
};

pub const ALOAD: u8 = 25;
pub const ALOAD_0: u8 = 42;
pub const GOTO: u8 = 167;
pub const JSR: u8 = 168;
pub const RET: u8 = 169;
pub const TABLESWITCH: u8 = 170;
pub const LOOKUPSWITCH: u8 = 171;
pub const IRETURN: u8 = 172;
pub const RETURN: u8 = 177;
pub const INVOKESPECIAL: u8 = 183;
pub const INVOKESTATIC: u8 = 184;
pub const NEW: u8 = 187;
pub const NEWARRAY: u8 = 188;
pub const ANEWARRAY: u8 = 189;
pub const ATHROW: u8 = 191;
pub const WIDE: u8 = 196;
pub const MULTIANEWARRAY: u8 = 197;
pub const GOTO_W: u8 = 200;
pub const JSR_W: u8 = 201;
pub const ICONST_0: u8 = 3;
pub const IFEQ: u8 = 153;
pub const IFLE: u8 = 158;
pub const GETSTATIC: u8 = 178;
pub const DUP: u8 = 89;
pub const SIPUSH: u8 = 17;
pub const LDC_W: u8 = 19;

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub pc: usize,
    pub op: u8,
    pub len: usize,
}

fn u2(code: &[u8], at: usize) -> Result<u16> {
    match code.get(at..at + 2) {
        Some(b) => Ok(u16::from_be_bytes([b[0], b[1]])),
        None => err("instruction cut short"),
    }
}

fn i4(code: &[u8], at: usize) -> Result<i32> {
    match code.get(at..at + 4) {
        Some(b) => Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => err("instruction cut short"),
    }
}

/// Fixed instruction lengths; 0 = variable (switches, wide), 255 = invalid opcode.
fn fixed_length(op: u8) -> u8 {
    match op {
        0..=15 => 1,
        16 => 2,
        17 => 3,
        18 => 2,
        19 | 20 => 3,
        21..=25 => 2,
        26..=53 => 1,
        54..=58 => 2,
        59..=131 => 1,
        132 => 3,
        133..=152 => 1,
        153..=168 => 3,
        169 => 2,
        170 | 171 => 0,
        172..=177 => 1,
        178..=184 => 3,
        185 | 186 => 5,
        187 => 3,
        188 => 2,
        189 => 3,
        190 | 191 => 1,
        192 | 193 => 3,
        194 | 195 => 1,
        196 => 0,
        197 => 4,
        198 | 199 => 3,
        200 | 201 => 5,
        _ => 255,
    }
}

/// The length of the instruction at `pc`.
pub fn length(code: &[u8], pc: usize) -> Result<usize> {
    let op = *code
        .get(pc)
        .ok_or_else(|| super::classfile::ClassError("pc past the code".into()))?;
    match fixed_length(op) {
        255 => err(format!("invalid opcode {} at {}", op, pc)),
        0 if op == WIDE => match code.get(pc + 1) {
            Some(132) => Ok(6),
            Some(_) => Ok(4),
            None => err("wide cut short"),
        },
        0 => {
            let base = (pc + 4) & !3;
            if op == TABLESWITCH {
                let low = i4(code, base + 4)?;
                let high = i4(code, base + 8)?;
                if high < low || (high as i64 - low as i64) > 65535 {
                    return err("bad tableswitch bounds");
                }
                Ok(base + 12 + 4 * (high - low + 1) as usize - pc)
            } else {
                let n = i4(code, base + 4)?;
                if !(0..=65535).contains(&n) {
                    return err("bad lookupswitch size");
                }
                Ok(base + 8 + 8 * n as usize - pc)
            }
        }
        n => Ok(n as usize),
    }
}

/// Where an old code offset lands in the rewritten code (an error for an offset inside an
/// instruction).
pub type OffsetMap<'a> = dyn Fn(usize) -> Result<usize> + 'a;

/// Every instruction of a method's code, in order (the tests' way; the rewriter reuses a
/// vector with [`decode_into`]).
#[cfg(test)]
pub fn decode(code: &[u8]) -> Result<Vec<Insn>> {
    let mut v = Vec::new();
    decode_into(code, &mut v)?;
    Ok(v)
}

/// [`decode`] into a vector that is cleared first.
pub fn decode_into(code: &[u8], v: &mut Vec<Insn>) -> Result<()> {
    v.clear();
    v.reserve(code.len() / 2);
    let mut pc = 0;
    while pc < code.len() {
        let len = length(code, pc)?;
        if pc + len > code.len() {
            return err("last instruction cut short");
        }
        v.push(Insn {
            pc,
            op: code[pc],
            len,
        });
        pc += len;
    }
    Ok(())
}

/// Absolute branch targets of an instruction (switch: default first), for the tests.
#[cfg(test)]
pub fn targets(code: &[u8], i: &Insn) -> Result<Vec<usize>> {
    let mut t = Vec::new();
    each_target(code, i, |target| {
        t.push(target);
        Ok(())
    })?;
    Ok(t)
}

/// Calls `f` with each absolute branch target of an instruction (switch: default first),
/// without collecting them.
pub fn each_target(code: &[u8], i: &Insn, mut f: impl FnMut(usize) -> Result<()>) -> Result<()> {
    let rel = |off: i64| -> Result<usize> {
        let t = i.pc as i64 + off;
        if t < 0 || t as usize >= code.len() {
            return err(format!("branch at {} leaves the code", i.pc));
        }
        Ok(t as usize)
    };
    match i.op {
        153..=168 | 198 | 199 => f(rel(u2(code, i.pc + 1)? as i16 as i64)?),
        GOTO_W | JSR_W => f(rel(i4(code, i.pc + 1)? as i64)?),
        TABLESWITCH => {
            let base = (i.pc + 4) & !3;
            let low = i4(code, base + 4)?;
            let high = i4(code, base + 8)?;
            f(rel(i4(code, base)? as i64)?)?;
            for k in 0..=(high - low) as usize {
                f(rel(i4(code, base + 12 + 4 * k)? as i64)?)?;
            }
            Ok(())
        }
        LOOKUPSWITCH => {
            let base = (i.pc + 4) & !3;
            let n = i4(code, base + 4)? as usize;
            f(rel(i4(code, base)? as i64)?)?;
            for k in 0..n {
                f(rel(i4(code, base + 12 + 8 * k)? as i64)?)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether control can fall through to the next instruction.
pub fn falls_through(op: u8) -> bool {
    !matches!(
        op,
        GOTO | GOTO_W | TABLESWITCH | LOOKUPSWITCH | IRETURN..=RETURN | ATHROW | RET
    )
}

/// invokevirtual, invokespecial, invokestatic, invokeinterface.
pub fn is_invoke(op: u8) -> bool {
    (182..=185).contains(&op)
}

pub fn is_return(op: u8) -> bool {
    (IRETURN..=RETURN).contains(&op)
}

/// What a stack slot holds, as far as initialization is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Other,
    /// `this` in a constructor before super()/this().
    This,
    /// The result of the `new` at this pc, not yet initialized.
    New(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    stack: Vec<Slot>,
    this_init: bool,
}

/// What the analysis found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The pc of the invokespecial that initializes `this` (constructors).
    pub super_call: Option<usize>,
    /// Pcs after which a newly created, initialized object or array is on top of the stack:
    /// newarray/anewarray/multianewarray, and the `<init>` call completing a `new` whose
    /// reference was duplicated. In increasing order.
    pub allocations: Vec<usize>,
}

/// Runs the analysis over the whole method (all paths, exception handlers included). When
/// the allocations are not wanted, a constructor whose super()/this() call comes before any
/// branch or exception handler (javac's constructors) is only read up to that call: every
/// path goes through it, so it is the one.
pub fn analyze(
    code: &Code,
    pool: &ConstantPool,
    insns: &[Insn],
    is_ctor: bool,
    want_allocations: bool,
) -> Result<Analysis> {
    if is_ctor && !want_allocations {
        if let Some(super_call) = straight_super_call(code, pool, insns)? {
            return Ok(Analysis {
                super_call: Some(super_call),
                allocations: Vec::new(),
            });
        }
    }
    analyze_paths(code, pool, insns, is_ctor)
}

/// Whether every return leaves only its value on the operand stack. javac's code always does;
/// generated code may leave more (jlink's SystemModules returns from under 300 values), which
/// the verifier allows but a shared exit block, whose frame declares only the value, does not.
/// The depth is known at the entry (0) and at each stack map frame (`frames`: offset, depth
/// in slots), and stepped through from there; code after a goto, return, throw or switch
/// has a frame when it is reachable (class files of version 50 on).
pub fn returns_leave_only_their_value(
    code: &Code,
    pool: &ConstantPool,
    insns: &[Insn],
    frames: &[(usize, usize)],
) -> Result<bool> {
    let mut state = State {
        stack: Vec::new(),
        this_init: true,
    };
    let mut known = true;
    let mut next_frame = frames.iter().peekable();
    let (mut result, mut allocations) = (Analysis::default(), Default::default());
    for insn in insns {
        while next_frame.peek().is_some_and(|&&(at, _)| at < insn.pc) {
            next_frame.next();
        }
        if let Some(&&(at, depth)) = next_frame.peek() {
            if at == insn.pc {
                state.stack.clear();
                push(&mut state.stack, depth);
                known = true;
            }
        }
        if !known {
            continue;
        }
        if is_return(insn.op) {
            let value = match insn.op {
                RETURN => 0,
                173 | 175 => 2, // lreturn, dreturn
                _ => 1,
            };
            if state.stack.len() != value {
                return Ok(false);
            }
        }
        if !falls_through(insn.op) || matches!(insn.op, GOTO | GOTO_W) {
            known = false;
            continue;
        }
        step(
            &code.code,
            pool,
            insn,
            &mut state,
            &mut result,
            &mut allocations,
        )?;
    }
    Ok(true)
}

/// What a leaf may read besides its locals and constants (see [`is_leaf`]).
pub struct LeafScope<'a> {
    /// The internal name of the method's class.
    pub this: &'a [u8],
    /// The method is static (local 0 is not `this`).
    pub is_static: bool,
    /// The fields the class declares: access flags and the Utf8 constants of their names and
    /// descriptors.
    pub fields: &'a [(u16, u16, u16)],
}

/// Whether a method is a leaf whose entry and exit can be recorded together, by one call at
/// its entry: nothing can be recorded between them and it runs a few instructions at most.
/// So its code calls no method and can make the JVM run no Java code: it allocates nothing,
/// names no other class (whose resolution may load it, whose initialization runs its
/// `<clinit>`), and cannot throw an exception the JVM makes (whose constructor is Java code):
/// no array access, no division of integers, only fields the class declares (so that their
/// resolution cannot fail, whatever was compiled against what), those of `this` (`aload_0`
/// right before, local 0 never stored) and statics, and no final one written. Every branch
/// goes forward and no handler is declared, so it runs each instruction at most once.
/// Getters, setters, flag tests and arithmetic helpers are such leaves: a third of javac's
/// calls. (Time the thread spends stopped at a leaf's return, at a safepoint, counts to its
/// caller.)
pub fn is_leaf(code: &Code, pool: &ConstantPool, insns: &[Insn], scope: &LeafScope) -> bool {
    // Most methods call one: known at a glance, before any constant is read.
    let possible =
        |op: u8| matches!(op, 0..=45 | 54..=107 | 110 | 111 | 114..=167 | 170..=181 | 198..=200);
    if !code.handlers.is_empty()
        || code.code.len() > LEAF_CODE
        || !insns.iter().all(|i| possible(i.op))
    {
        return false;
    }
    let mut targets = Vec::new();
    for i in insns {
        let forward = each_target(&code.code, i, |t| {
            targets.push(t);
            if t > i.pc {
                Ok(())
            } else {
                err("backward")
            }
        });
        if forward.is_err() {
            return false;
        }
    }
    let targeted = |pc: usize| targets.contains(&pc);
    // A field of `this`: its Fieldref names the class, and `this` was pushed right before
    // the instruction (`before` instructions before it), on every path that reaches it.
    let this_field = |k: usize, before: usize| -> bool {
        if scope.is_static || k < before || (k + 1 - before..=k).any(|j| targeted(insns[j].pc)) {
            return false;
        }
        insns[k - before].op == ALOAD_0 && declared(code, pool, &insns[k], scope, false)
    };
    insns.iter().enumerate().all(|(k, i)| match i.op {
        // Constants, loads, stack shuffles, arithmetic without division of integers,
        // conversions, comparisons, branches (forward, checked above), returns.
        0..=17 | 21..=45 | 87..=107 | 110 | 111 | 114..=167 | 170..=177 | 198..=200 => true,
        // ldc of a number or a String (a Class, MethodType, MethodHandle or dynamic constant
        // may run Java code to resolve).
        18..=20 => {
            let index = if i.op == 18 {
                u16::from(code.code[i.pc + 1])
            } else {
                u2(&code.code, i.pc + 1).unwrap_or(0)
            };
            matches!(
                pool.entries.get(usize::from(index)),
                Some(super::classfile::Constant::Other(3..=6 | 8, _))
            )
        }
        // Stores, except into local 0 of an instance method (`this` no longer).
        54..=57 | 59..=74 | 76..=78 => true,
        58 => scope.is_static || code.code[i.pc + 1] != 0,
        75 => scope.is_static,
        // getstatic, putstatic: the class's own statics. It is initialized, or being so by
        // this thread, since its method runs; but for an instance that escaped a <clinit>
        // still running on another thread (which this one then waits for) or one that failed
        // (whose NoClassDefFoundError is Java code run after the leaf's exit): rare enough.
        178 | 179 => declared(code, pool, i, scope, true),
        // getfield of `this`.
        180 => this_field(k, 1),
        // putfield on `this`, of a value pushed by one instruction (a constant or a load).
        181 => k >= 1 && matches!(insns[k - 1].op, 1..=45) && this_field(k, 2),
        _ => false,
    })
}

/// The longest code [`is_leaf`] reads (javac's leaves are a few dozen bytes).
const LEAF_CODE: usize = 512;

/// Whether the field of a field instruction is one the class declares, static or not as
/// asked, and not final if the instruction writes it.
fn declared(code: &Code, pool: &ConstantPool, i: &Insn, scope: &LeafScope, statics: bool) -> bool {
    let Some((owner, name, descriptor)) = field_owner(code, pool, i) else {
        return false;
    };
    let writes = matches!(i.op, 179 | 181);
    owner == scope.this
        && scope.fields.iter().any(|&(access, n, d)| {
            (access & ACC_STATIC != 0) == statics
                && !(writes && access & ACC_FINAL != 0)
                && pool.utf8(n).is_ok_and(|n| n == name)
                && pool.utf8(d).is_ok_and(|d| d == descriptor)
        })
}

/// The Fieldref of a field instruction: (owner, name, descriptor).
fn field_owner<'p>(
    code: &Code,
    pool: &'p ConstantPool,
    i: &Insn,
) -> Option<(&'p [u8], &'p [u8], &'p [u8])> {
    pool.member_ref(u2(&code.code, i.pc + 1).ok()?).ok()
}

/// The pc of a constructor's super()/this() call if it is reached from the entry without a
/// branch, a return, a throw or an instruction an exception handler covers.
fn straight_super_call(code: &Code, pool: &ConstantPool, insns: &[Insn]) -> Result<Option<usize>> {
    let mut state = State {
        stack: Vec::new(),
        this_init: false,
    };
    let mut result = Analysis::default();
    let mut allocations = std::collections::BTreeSet::new();
    for insn in insns {
        let covered = code
            .handlers
            .iter()
            .any(|h| (h.start as usize) <= insn.pc && insn.pc < h.end as usize);
        let mut branches = false;
        each_target(&code.code, insn, |_| {
            branches = true;
            Ok(())
        })?;
        if covered || branches || !falls_through(insn.op) {
            return Ok(None);
        }
        step(
            &code.code,
            pool,
            insn,
            &mut state,
            &mut result,
            &mut allocations,
        )?;
        if result.super_call.is_some() {
            return Ok(result.super_call);
        }
    }
    Ok(None)
}

/// The analysis proper: a state (the operand stack's uninitialized objects, and whether
/// `this` is initialized) is kept only where paths meet — the entry, branch targets and
/// exception handlers — and each straight run after one is stepped through again whenever
/// the state there changes, until nothing does.
fn analyze_paths(
    code: &Code,
    pool: &ConstantPool,
    insns: &[Insn],
    is_ctor: bool,
) -> Result<Analysis> {
    let bytes = &code.code;
    if insns.is_empty() {
        return err("a method without code");
    }
    let mut index = vec![usize::MAX; bytes.len() + 1];
    for (k, i) in insns.iter().enumerate() {
        index[i.pc] = k;
    }
    let at = |pc: usize, what: &str| -> Result<usize> {
        match index.get(pc) {
            Some(&k) if k != usize::MAX => Ok(k),
            _ => err(format!(
                "{} into the middle of an instruction at {}",
                what, pc
            )),
        }
    };
    let mut meets = vec![false; insns.len()];
    meets[0] = true;
    // Branch targets by instruction, flattened: those of insns[k] are
    // targets[first[k]..first[k + 1]].
    let mut first = Vec::with_capacity(insns.len() + 1);
    let mut targets = Vec::new();
    for insn in insns {
        first.push(targets.len());
        each_target(bytes, insn, |t| {
            let k = at(t, "branch")?;
            meets[k] = true;
            targets.push(k);
            Ok(())
        })?;
    }
    first.push(targets.len());
    let mut handlers = Vec::with_capacity(code.handlers.len());
    for h in &code.handlers {
        let k = *index.get(h.handler as usize).unwrap_or(&usize::MAX);
        if k == usize::MAX {
            return err("handler outside the code");
        }
        meets[k] = true;
        handlers.push((h.start as usize, h.end as usize, k));
    }

    let mut states: Vec<Option<State>> = vec![None; insns.len()];
    states[0] = Some(State {
        stack: Vec::new(),
        this_init: !is_ctor,
    });
    let mut work = vec![0usize];
    let mut result = Analysis::default();
    let mut allocations = std::collections::BTreeSet::new();
    // The state being stepped, and the states at a handler (by `this_init`): made once, so
    // that a step allocates only when it reaches a meeting point for the first time.
    let mut state = State {
        stack: Vec::new(),
        this_init: true,
    };
    let at_handler = [false, true].map(|this_init| State {
        stack: vec![Slot::Other],
        this_init,
    });
    let mut steps = 0usize;
    while let Some(start) = work.pop() {
        let Some(before) = &states[start] else {
            continue;
        };
        state.stack.clone_from(&before.stack);
        state.this_init = before.this_init;
        let mut k = start;
        loop {
            steps += 1;
            if steps > 50 * insns.len() + 1000 {
                return err("stack analysis does not converge");
            }
            let insn = insns[k];
            let this_init_before = state.this_init;
            step(
                bytes,
                pool,
                &insn,
                &mut state,
                &mut result,
                &mut allocations,
            )?;
            for &(from, to, hk) in &handlers {
                if from <= insn.pc && insn.pc < to {
                    let incoming = &at_handler[usize::from(this_init_before)];
                    merge(&mut states, &mut work, hk, incoming)?;
                }
            }
            for &t in &targets[first[k]..first[k + 1]] {
                merge(&mut states, &mut work, t, &state)?;
            }
            if !falls_through(insn.op) || insn.pc + insn.len >= bytes.len() {
                break;
            }
            k += 1;
            if meets[k] {
                merge(&mut states, &mut work, k, &state)?;
                break;
            }
        }
    }
    result.allocations = allocations.into_iter().collect();
    Ok(result)
}

fn merge(
    states: &mut [Option<State>],
    work: &mut Vec<usize>,
    k: usize,
    incoming: &State,
) -> Result<()> {
    match &mut states[k] {
        None => {
            states[k] = Some(incoming.clone());
            work.push(k);
        }
        Some(existing) => {
            if existing.stack.len() != incoming.stack.len() {
                return err("stack heights differ where paths meet");
            }
            let mut changed = false;
            for (a, b) in existing.stack.iter_mut().zip(&incoming.stack) {
                if a != b && *a != Slot::Other {
                    *a = Slot::Other;
                    changed = true;
                }
            }
            if existing.this_init && !incoming.this_init {
                existing.this_init = false;
                changed = true;
            }
            if changed {
                work.push(k);
            }
        }
    }
    Ok(())
}

fn pop(stack: &mut Vec<Slot>, n: usize) -> Result<()> {
    if stack.len() < n {
        return err("operand stack underflow");
    }
    stack.truncate(stack.len() - n);
    Ok(())
}

fn push(stack: &mut Vec<Slot>, n: usize) {
    stack.extend(std::iter::repeat_n(Slot::Other, n));
}

/// Applies one instruction to the state.
fn step(
    code: &[u8],
    pool: &ConstantPool,
    i: &Insn,
    s: &mut State,
    result: &mut Analysis,
    allocations: &mut std::collections::BTreeSet<usize>,
) -> Result<()> {
    let st = &mut s.stack;
    let cp = |at: usize| u2(code, at);
    let (pops, pushes): (usize, usize) = match i.op {
        0 => (0, 0),
        1..=8 => (0, 1),
        9 | 10 => (0, 2),
        11..=13 => (0, 1),
        14 | 15 => (0, 2),
        16 | 17 => (0, 1),
        18 => (0, pool.ldc_slots(u16::from(code[i.pc + 1]))),
        19 => (0, pool.ldc_slots(cp(i.pc + 1)?)),
        20 => (0, 2),
        21 | 23 => (0, 1),
        22 | 24 => (0, 2),
        ALOAD => {
            let this = code[i.pc + 1] == 0 && !s.this_init;
            st.push(if this { Slot::This } else { Slot::Other });
            (0, 0)
        }
        26..=29 | 34..=37 => (0, 1),
        30..=33 | 38..=41 => (0, 2),
        ALOAD_0 => {
            st.push(if s.this_init { Slot::Other } else { Slot::This });
            (0, 0)
        }
        43..=45 => (0, 1),
        46 | 48 | 50..=53 => (2, 1),
        47 | 49 => (2, 2),
        54 | 56 | 58 => (1, 0),
        55 | 57 => (2, 0),
        59..=62 | 67..=70 | 75..=78 => (1, 0),
        63..=66 | 71..=74 => (2, 0),
        79 | 81 | 83..=86 => (3, 0),
        80 | 82 => (4, 0),
        87 => (1, 0),
        88 => (2, 0),
        DUP..=95 => {
            shuffle(st, i.op)?;
            (0, 0)
        }
        96 | 98 | 100 | 102 | 104 | 106 | 108 | 110 | 112 | 114 => (2, 1),
        97 | 99 | 101 | 103 | 105 | 107 | 109 | 111 | 113 | 115 => (4, 2),
        116 | 118 => (1, 1),
        117 | 119 => (2, 2),
        120 | 122 | 124 => (2, 1),
        121 | 123 | 125 => (3, 2),
        126 | 128 | 130 => (2, 1),
        127 | 129 | 131 => (4, 2),
        132 => (0, 0),
        133 | 135 | 140 | 141 => (1, 2),
        134 | 139 | 145..=147 => (1, 1),
        136 | 137 | 142 | 144 => (2, 1),
        138 | 143 => (2, 2),
        148 | 151 | 152 => (4, 1),
        149 | 150 => (2, 1),
        153..=158 => (1, 0),
        159..=166 => (2, 0),
        GOTO | GOTO_W => (0, 0),
        TABLESWITCH | LOOKUPSWITCH => (1, 0),
        172 | 174 | 176 => (1, 0),
        173 | 175 => (2, 0),
        RETURN => (0, 0),
        178 => (0, field_slots(pool.member_ref(cp(i.pc + 1)?)?.2)),
        179 => (field_slots(pool.member_ref(cp(i.pc + 1)?)?.2), 0),
        180 => (1, field_slots(pool.member_ref(cp(i.pc + 1)?)?.2)),
        181 => (1 + field_slots(pool.member_ref(cp(i.pc + 1)?)?.2), 0),
        182 | 185 => {
            let (args, ret) = descriptor_slots(pool.member_ref(cp(i.pc + 1)?)?.2)?;
            (args + 1, ret)
        }
        INVOKESTATIC => {
            let (args, ret) = descriptor_slots(pool.member_ref(cp(i.pc + 1)?)?.2)?;
            (args, ret)
        }
        186 => {
            let (args, ret) = descriptor_slots(pool.dynamic_descriptor(cp(i.pc + 1)?)?)?;
            (args, ret)
        }
        INVOKESPECIAL => return invokespecial(code, pool, i, s, result, allocations),
        NEW => {
            st.push(Slot::New(i.pc));
            (0, 0)
        }
        NEWARRAY | ANEWARRAY => {
            allocations.insert(i.pc);
            (1, 1)
        }
        190 => (1, 1),
        ATHROW => (1, 0),
        192 | 193 => (1, 1),
        194 | 195 => (1, 0),
        WIDE => match code[i.pc + 1] {
            21 | 23 => (0, 1),
            ALOAD => {
                let this = cp(i.pc + 2)? == 0 && !s.this_init;
                st.push(if this { Slot::This } else { Slot::Other });
                (0, 0)
            }
            22 | 24 => (0, 2),
            54 | 56 | 58 => (1, 0),
            55 | 57 => (2, 0),
            132 => (0, 0),
            _ => return err("jsr/ret subroutines are not instrumented"),
        },
        MULTIANEWARRAY => {
            allocations.insert(i.pc);
            (code[i.pc + 3] as usize, 1)
        }
        198 | 199 => (1, 0),
        JSR | JSR_W | RET => return err("jsr/ret subroutines are not instrumented"),
        op => return err(format!("unknown opcode {}", op)),
    };
    pop(st, pops)?;
    push(st, pushes);
    Ok(())
}

/// The stack shuffles (dup, dup_x1, dup_x2, dup2, dup2_x1, dup2_x2, swap), slot by slot.
fn shuffle(st: &mut Vec<Slot>, op: u8) -> Result<()> {
    match op {
        DUP => {
            let t = top::<1>(st)?;
            st.extend(t);
        }
        90 => {
            let t = top::<2>(st)?;
            pop(st, 2)?;
            st.extend([t[1], t[0], t[1]]);
        }
        91 => {
            let t = top::<3>(st)?;
            pop(st, 3)?;
            st.extend([t[2], t[0], t[1], t[2]]);
        }
        92 => {
            let t = top::<2>(st)?;
            st.extend(t);
        }
        93 => {
            let t = top::<3>(st)?;
            pop(st, 3)?;
            st.extend([t[1], t[2], t[0], t[1], t[2]]);
        }
        94 => {
            let t = top::<4>(st)?;
            pop(st, 4)?;
            st.extend([t[2], t[3], t[0], t[1], t[2], t[3]]);
        }
        95 => {
            let t = top::<2>(st)?;
            pop(st, 2)?;
            st.extend([t[1], t[0]]);
        }
        _ => return err(format!("not a stack shuffle: {}", op)),
    }
    Ok(())
}

/// invokespecial: a constructor call marks its receiver initialized (`this`: the
/// super()/this() call; a `new` whose copy `dup` left on top: an allocation).
fn invokespecial(
    code: &[u8],
    pool: &ConstantPool,
    i: &Insn,
    s: &mut State,
    result: &mut Analysis,
    allocations: &mut std::collections::BTreeSet<usize>,
) -> Result<()> {
    let st = &mut s.stack;
    let (_, name, desc) = pool.member_ref(u2(code, i.pc + 1)?)?;
    let (args, ret) = descriptor_slots(desc)?;
    if st.len() < args + 1 {
        return err("operand stack underflow");
    }
    let receiver = st[st.len() - args - 1];
    pop(st, args + 1)?;
    let mut initializes_this = false;
    if name == b"<init>" && receiver != Slot::Other {
        // The copy that `dup` left is on top exactly when the top slot is the receiver.
        let copy_on_top = st.last() == Some(&receiver);
        for slot in st.iter_mut().filter(|x| **x == receiver) {
            *slot = Slot::Other;
        }
        match receiver {
            Slot::This => initializes_this = true,
            Slot::New(_) if copy_on_top => {
                allocations.insert(i.pc);
            }
            _ => {}
        }
    }
    push(st, ret);
    if initializes_this {
        s.this_init = true;
        result.super_call.get_or_insert(i.pc);
    }
    Ok(())
}

/// The top `N` slots, bottom first.
fn top<const N: usize>(st: &[Slot]) -> Result<[Slot; N]> {
    match st.len().checked_sub(N) {
        Some(at) => Ok(std::array::from_fn(|k| st[at + k])),
        None => err("operand stack underflow"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The analysis of a constructor `(I)V` whose code is `body`, in which the bytes 0xF0 0xF1
    /// stand for the index of the Methodref S.<init>(I)V.
    fn constructor(body: &[u8], handlers: Vec<crate::classfile::Handler>) -> Result<Analysis> {
        let mut pool = ConstantPool::default();
        pool.entries.push(crate::classfile::Constant::Gap);
        let init = pool.add_method_ref("S", "<init>", "(I)V")?.to_be_bytes();
        let code: Vec<u8> = body
            .iter()
            .map(|&b| match b {
                0xF0 => init[0],
                0xF1 => init[1],
                b => b,
            })
            .collect();
        let code = Code {
            max_stack: 2,
            max_locals: 2,
            code: code.into(),
            handlers,
            attributes: Vec::new(),
        };
        let insns = decode(&code.code)?;
        let quick = analyze(&code, &pool, &insns, true, false)?;
        let full = analyze(&code, &pool, &insns, true, true)?;
        assert_eq!(
            quick.super_call, full.super_call,
            "both paths find one call"
        );
        Ok(full)
    }

    /// super(x) found on the straight path (javac's constructors) and where paths meet
    /// (`super(x != 0 ? 1 : 2)`, or code before it covered by a handler), after an object made
    /// before it; allocations seen on every path.
    #[test]
    fn the_analysis_finds_super_and_allocations_on_every_path() {
        const ILOAD_1: u8 = 27;
        const IFEQ: u8 = 153;
        const ICONST_1: u8 = 4;
        const ICONST_2: u8 = 5;
        const POP: u8 = 87;
        let straight = [ALOAD_0, ILOAD_1, INVOKESPECIAL, 0xF0, 0xF1, RETURN];
        assert_eq!(constructor(&straight, vec![]).unwrap().super_call, Some(2));
        #[rustfmt::skip]
        let branches = [
            ALOAD_0, ILOAD_1, IFEQ, 0, 7, // 0: if x == 0 goto 9
            ICONST_1, GOTO, 0, 4,          // 5: 1, goto 10
            ICONST_2,                      // 9: 2
            INVOKESPECIAL, 0xF0, 0xF1,     // 10: super(1 or 2)
            ICONST_1, NEWARRAY, 10,        // 13: new int[1], an allocation at 14
            POP, RETURN,
        ];
        let found = constructor(&branches, vec![]).unwrap();
        assert_eq!(found.super_call, Some(10));
        assert_eq!(found.allocations, vec![14]);
        let covered = crate::classfile::Handler {
            start: 0,
            end: 2,
            handler: 6,
            catch_type: 0,
        };
        let handled = [ALOAD_0, ILOAD_1, INVOKESPECIAL, 0xF0, 0xF1, RETURN, ATHROW];
        assert_eq!(
            constructor(&handled, vec![covered]).unwrap().super_call,
            Some(2)
        );
        // An object made before super() is initialized first: the receiver tells them apart.
        #[rustfmt::skip]
        let made_first = [
            NEW, 0, 1, DUP, ILOAD_1,       // 0: new S, dup, x
            INVOKESPECIAL, 0xF0, 0xF1,     // 5: its <init>(x)
            POP,                           // 8
            ALOAD_0, ILOAD_1,              // 9: this, x
            INVOKESPECIAL, 0xF0, 0xF1,     // 11: super(x)
            RETURN,
        ];
        let found = constructor(&made_first, vec![]).unwrap();
        assert_eq!(found.super_call, Some(11));
        assert_eq!(found.allocations, vec![5]);
        let without = [ALOAD_0, POP, RETURN];
        assert!(constructor(&without, vec![]).unwrap().super_call.is_none());
    }

    #[test]
    fn lengths_of_switches_follow_alignment() {
        // tableswitch at pc 1: 2 padding bytes, default, low 0, high 1, two offsets.
        let mut code = vec![0u8, TABLESWITCH, 0, 0];
        for v in [20i32, 0, 1, 20, 20] {
            code.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(length(&code, 1).unwrap(), 3 + 20);
        let insns = decode(&code).unwrap();
        assert_eq!(insns.len(), 2);
    }

    /// Which code is a leaf: each case is (code, static method, leaf), in a class C that
    /// declares the int fields f, fin (final), s (static) and sfin (static final). In the
    /// code, 0xF0 0xNN stands for the constant named NN below.
    #[test]
    fn a_leaf_calls_nothing_and_can_make_the_jvm_run_no_java_code() {
        use crate::classfile::Constant;
        use std::borrow::Cow;
        let mut pool = ConstantPool::default();
        pool.entries.push(Constant::Gap);
        let mut field = |owner: &str, name: &str| pool.add_field_ref(owner, name, "I").unwrap();
        let refs = [
            field("C", "f"),         // F0 00
            field("C", "fin"),       // F0 01
            field("C", "s"),         // F0 02
            field("C", "sfin"),      // F0 03
            field("C", "inherited"), // F0 04
            field("D", "f"),         // F0 05
        ];
        let text = pool.add_utf8("text").unwrap();
        let mut other = |tag: u8, payload: Vec<u8>| {
            pool.entries.push(Constant::Other(tag, Cow::Owned(payload)));
            (pool.entries.len() - 1) as u16
        };
        let constants = [
            other(8, text.to_be_bytes().to_vec()),  // F0 06: a String
            other(16, text.to_be_bytes().to_vec()), // F0 07: a MethodType
            other(7, text.to_be_bytes().to_vec()),  // F0 08: a Class
        ];
        let number = pool.add_integer(7).unwrap(); // F0 09
        let call = pool.add_method_ref("C", "g", "()V").unwrap(); // F0 0A
        let mut all = refs.to_vec();
        all.extend(constants);
        all.extend([number, call]);
        let mut declare = |access: u16, name: &str| {
            (
                access,
                pool.add_utf8(name).unwrap(),
                pool.add_utf8("I").unwrap(),
            )
        };
        let fields = [
            declare(0, "f"),
            declare(ACC_FINAL, "fin"),
            declare(ACC_STATIC, "s"),
            declare(ACC_STATIC | ACC_FINAL, "sfin"),
        ];
        // Whether this code, with these handlers, is a leaf of C.
        let leaf_of = |code: Vec<u8>, handlers, is_static| {
            let code = Code {
                max_stack: 4,
                max_locals: 3,
                code: code.into(),
                handlers,
                attributes: Vec::new(),
            };
            let insns = decode(&code.code).unwrap();
            let scope = LeafScope {
                this: b"C",
                is_static,
                fields: &fields,
            };
            is_leaf(&code, &pool, &insns, &scope)
        };
        #[rustfmt::skip]
        let cases: &[(&[u8], bool, bool)] = &[
            // Leaves.
            (&[0x2A, 0xB4, 0xF0, 0x00, 0xAC], false, true),          // return this.f
            (&[0x2A, 0x1B, 0xB5, 0xF0, 0x00, 0xB1], false, true),    // this.f = i
            (&[0x2A, 0xB4, 0xF0, 0x01, 0xAC], false, true),          // return this.fin
            (&[0xB2, 0xF0, 0x02, 0x04, 0x60, 0xB3, 0xF0, 0x02, 0xB1], true, true), // s += 1
            (&[0x1B, 0x99, 0, 5, 0x04, 0xAC, 0x03, 0xAC], true, true), // forward branch
            (&[0x12, 0xF0, 0x09, 0xAC], true, true),                 // ldc 7
            (&[0x12, 0xF0, 0x06, 0xB0], true, true),                 // ldc "text"
            // Not leaves.
            (&[0x2C, 0xB4, 0xF0, 0x00, 0xAC], false, false),         // another object's field
            (&[0x2A, 0xB4, 0xF0, 0x00, 0xAC], true, false),          // local 0 is no `this`
            (&[0x2C, 0x4B, 0x2A, 0xB4, 0xF0, 0x00, 0xAC], false, false), // this = other
            // other; if (i != 0) goto L; pop; this; L: getfield f — `this` or not.
            (&[0x2C, 0x1B, 0x9A, 0, 5, 0x57, 0x2A, 0xB4, 0xF0, 0x00, 0xAC], false, false),
            (&[0x2A, 0x59, 0xB5, 0xF0, 0x00, 0xB1], false, false),   // dup; putfield
            (&[0x2B, 0x2A, 0x00, 0xB5, 0xF0, 0x00, 0xB1], false, false), // nop; putfield
            (&[0x2A, 0x1B, 0xB5, 0xF0, 0x01, 0xB1], false, false),   // this.fin = i
            (&[0x2A, 0xB4, 0xF0, 0x02, 0xAC], false, false),         // a static as an instance field
            (&[0xB2, 0xF0, 0x00, 0xAC], true, false),                // an instance field as a static
            (&[0x1B, 0xB3, 0xF0, 0x03, 0xB1], true, false),          // sfin = i
            (&[0xB2, 0xF0, 0x04, 0xAC], true, false),                // a static it does not declare
            (&[0xB2, 0xF0, 0x05, 0xAC], true, false),                // another class's static
            (&[0x12, 0xF0, 0x07, 0xB0], true, false),                // ldc a MethodType
            (&[0x12, 0xF0, 0x08, 0xB0], true, false),                // ldc a Class
            (&[0x1B, 0x1B, 0x6C, 0xAC], true, false),                // idiv
            (&[0x1B, 0x1B, 0x6D, 0xAC], true, false),                // ldiv
            (&[0x1B, 0x1B, 0x70, 0xAC], true, false),                // irem
            (&[0x1B, 0x1B, 0x71, 0xAC], true, false),                // lrem
            (&[0x2C, 0x1B, 0x2E, 0xAC], true, false),                // iaload
            (&[0x2C, 0x1B, 0x1B, 0x4F, 0xB1], true, false),          // iastore
            (&[0x2C, 0xBE, 0xAC], true, false),                      // arraylength
            (&[0xC4, 0x84, 0, 1, 0, 1, 0xB1], true, false),          // wide iinc
            (&[0x1B, 0x99, 0, 6, 0xA7, 0xFF, 0xFC, 0xB1], true, false), // a backward goto
            (&[0xB8, 0xF0, 0x0A, 0xB1], true, false),                // invokestatic
            (&[0xBB, 0xF0, 0x08, 0xB0], true, false),                // new
            (&[0x2C, 0xC2, 0xB1], true, false),                      // monitorenter
            (&[0x2C, 0xBF], true, false),                            // athrow
        ];
        for (n, &(body, is_static, leaf)) in cases.iter().enumerate() {
            let mut code = Vec::new();
            let mut bytes = body.iter();
            while let Some(&b) = bytes.next() {
                if b == 0xF0 {
                    let at = all[usize::from(*bytes.next().unwrap())];
                    code.extend_from_slice(&at.to_be_bytes());
                } else {
                    code.push(b);
                }
            }
            // ldc takes a one-byte index.
            if code[0] == 0x12 {
                code.remove(1);
            }
            assert_eq!(leaf_of(code, Vec::new(), is_static), leaf, "case {}", n);
        }
        // A getter with a handler is not one either.
        let getter = [0x2A, 0xB4]
            .into_iter()
            .chain(refs[0].to_be_bytes())
            .chain([0xAC]);
        let handler = crate::classfile::Handler {
            start: 0,
            end: 4,
            handler: 4,
            catch_type: 0,
        };
        assert!(!leaf_of(getter.collect(), vec![handler], false));
        // At most LEAF_CODE bytes.
        for (len, leaf) in [(LEAF_CODE, true), (LEAF_CODE + 1, false)] {
            let mut body = vec![0u8; len];
            body[len - 1] = RETURN;
            assert_eq!(leaf_of(body, Vec::new(), false), leaf, "{} bytes", len);
        }
    }
}
