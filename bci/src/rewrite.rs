//! The method rewriter: every method with code gets
//!
//! ```text
//!   prologue      getstatic JliveTrampoline.gate ; ifeq body
//!                 sipush KEY (or ldc_w) ; invokestatic JliveTrampoline.enter0(I)V
//!                 (objects=on: aload_0 first and enterObject0(Object,I)V in instance
//!                 methods, enterConstructor0(I)V in constructors)
//!   body          the original code; each xreturn is now `goto exit`
//!   after each allocation     dup ; invokestatic JliveTrampoline.allocated(Object)V (alloc=on)
//!   exit          getstatic gate ; ifle ret ; push KEY ; invokestatic exit0(I)V ; ret: xreturn
//!   catch-all     the same with athrow for xreturn (last in the exception table)
//!   dead padding  iconst_0 ; lookupswitch (every target: that iconst_0)
//! ```
//!
//! `gate` is 0 while no burst records, so a paused traced call costs two loads and two
//! branches and no call; C2 compiles the calls away as never taken. The exit block and the
//! catch-all drop every local in their frames (nothing there reads one) and hold only the
//! value being returned (its Class constant is the class's own when it has one) or thrown, so
//! their frames go after the body's and the body's frames stay as they were; the prologue's
//! branch needs one same frame where the body begins.
//!
//! The padding (unless `inline=on`) makes every instrumented method longer than HotSpot's
//! FreqInlineSize, so that neither C1 nor C2 inlines it: a C2 compilation that inlines a
//! hundred instrumented methods holds hundreds of trampoline calls, each of which ends every
//! register's live range, and its register allocation takes up to a second (h2's
//! `MVMap.operate`, compiled three times). The trampolines cost far more than the calls that
//! inlining saves. The block is never reached; it costs ~300 bytes of metaspace per small
//! method.
//!
//! Constructors get two catch-all handlers: one for the code before super()/this(), whose
//! frame keeps `uninitializedThis` (JVMS §4.10.1.6 forbids covering it otherwise), and one
//! after. Branch targets, switch padding, the exception table, LineNumberTable,
//! LocalVariable(Type)Table and StackMapTable (each frame moved in the form it had, the
//! handlers' frames appended) are carried over.
//! A method that would outgrow the 64 KiB code limit (or a 16-bit branch) is left as it was.
//!
//! Calls of `@IntrinsicCandidate` methods (the caller of [`instrument_with`] names them; a
//! class's own are known to it) are wrapped where they are made, the call left as it was:
//!
//! ```text
//!   push KEY ; invokestatic JliveTrampoline.call(I)V     (callCritical with Weave::critical)
//!   invokevirtual|static|special|interface  the call
//!   push KEY ; invokestatic JliveTrampoline.called(I)V   (calledCritical)
//! ```
//!
//! KEY is the callee's. HotSpot may run its own code for such a call instead of the method's
//! bytecode, in compiled code and even in the interpreter (Math.sin), and then the callee's
//! entry and exit record nothing. `call` notes the time; `called` records the call, entry at
//! that time and exit now, only when nothing was recorded in between: when the bytecode ran,
//! its own records stand. Both read the gate themselves (no branch here, so no stack map frame
//! is needed), and an exception out of the call skips `called`: such a call is not recorded.
//!
//! Native methods (in classes seen at first load, where new methods may be added) are
//! renamed `$$jlive$$name` — JVMTI SetNativeMethodPrefix makes the JVM still bind them — and
//! a wrapper with the original name, flags and index calls them between entry and exit.

use super::classfile::{
    err, put_u2, put_u4, write_code_start, ClassFile, Code, ConstantPool, Handler, Reader, Result,
};
use super::code::{self, analyze, Analysis, Insn, OffsetMap};
use super::stackmap::{self, Frame, VType};

/// The class that holds the trampolines; in java.lang so that every module can read it.
pub const TRAMPOLINE: &str = "java/lang/JliveTrampoline";

use super::classfile::{
    ACC_NATIVE, ACC_PRIVATE, ACC_PROTECTED, ACC_PUBLIC, ACC_STATIC, ACC_SYNCHRONIZED, ACC_SYNTHETIC,
};

/// The prefix of renamed native methods (given to JVMTI SetNativeMethodPrefix).
pub const NATIVE_PREFIX: &str = "$$jlive$$";

/// What to weave in besides entries and exits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Weave {
    /// Receiver objects on entries of instance methods.
    pub objects: bool,
    /// Allocation sites.
    pub alloc: bool,
    /// Wrap native methods (only when the class is loaded for the first time).
    pub wrap_natives: bool,
    /// Leave methods short enough for the JIT to inline (no padding; `inline=on`).
    pub inlinable: bool,
    /// Call `enterCritical`/`exitCritical` (Java methods that reach the agent through FFM
    /// critical downcalls, JDK 22 and later) instead of the natives `enter0`/`exit0`, and
    /// `callCritical`/`calledCritical` around calls of intrinsic candidates.
    pub critical: bool,
    /// Record a leaf's entry and exit by one call at its entry, `leaf0` (`leafCritical`), and
    /// leave its returns as they are ([`code::is_leaf`]).
    pub leaves: bool,
}

/// The intrinsic candidates of other classes, by the call's owner, name and descriptor: the
/// callee's key when calls of it are to be wrapped (module comment).
pub type Callees<'a> = &'a dyn Fn(&[u8], &[u8], &[u8]) -> Option<u32>;

/// No callee of another class is wrapped.
pub fn no_callees(_: &[u8], _: &[u8], _: &[u8]) -> Option<u32> {
    None
}

/// HotSpot's FreqInlineSize (JDK 17 to 25, every 64-bit platform): neither compiler inlines a
/// method with more bytecode than this, however hot the call site.
pub const INLINE_LIMIT: usize = 325;

/// The result for one class.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub bytes: Vec<u8>,
    pub name: String,
    pub methods: u32,
    pub instrumented: u32,
    /// Instrumented methods padded past [`INLINE_LIMIT`].
    pub padded: u32,
    /// Instrumented methods that are leaves ([`Weave::leaves`]).
    pub leaves: u32,
    /// Methods marked `@IntrinsicCandidate`: a caller may run HotSpot's own code for them
    /// instead of their bytecode, so their callers record the calls too (module comment).
    pub intrinsic: u32,
    /// Those methods' names, descriptors and keys, for [`Callees`] of other classes.
    pub intrinsics: Vec<(String, String, u32)>,
    /// Calls of intrinsic candidates wrapped in this class.
    pub call_sites: u32,
    pub native: u32,
    /// (method name + descriptor, reason) of methods left as they were.
    pub skipped: Vec<(String, String)>,
}

/// A constant the woven code refers to.
#[derive(Clone, Copy)]
enum Ref {
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
struct Refs {
    refs: [Option<u16>; 16],
    /// Thread's own methods hooked for monitors=on ([`hook_thread_methods`]): the entry and
    /// exit calls and the gate are the concurrency ones.
    sync: bool,
    /// The class's own Class constants (hash of the name, index), read once it is asked for
    /// a return type.
    classes: Option<Vec<(u64, u16)>>,
    /// [`Weave::critical`]: entries and exits go through the critical downcalls.
    critical: bool,
}

impl Refs {
    fn get(&mut self, pool: &mut ConstantPool, r: Ref) -> Result<u16> {
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
    fn class(&mut self, pool: &mut ConstantPool, name: &[u8]) -> Result<u16> {
        let classes = self.classes.get_or_insert_with(|| pool.read_classes());
        match pool.class_among(classes, name) {
            Some(index) => Ok(index),
            None => pool.add_class_bytes(name),
        }
    }

    /// `invokestatic` of trampoline `r`.
    fn call(&mut self, pool: &mut ConstantPool, r: Ref) -> Result<[u8; 3]> {
        Ok(call(self.get(pool, r)?))
    }

    /// The entry call of the method whose key `push` pushes: with objects=on an instance
    /// method passes its receiver, and a constructor's receiver follows once super() returns.
    /// `natives`: the natives themselves, else the Java trampolines that read the gate first.
    fn entry(
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
    fn exit(&mut self, pool: &mut ConstantPool, push: &[u8]) -> Result<Snippet> {
        Ok(Snippet::of(&[push, &self.call(pool, Ref::Exit)?]))
    }

    /// A method's prologue: the entry native, called only while the trampolines' `gate` is
    /// open for entries, not 0 (`getstatic; ifeq` past the call, to the first instruction).
    /// A leaf's (`leaf`) records its exit too (`leaf0`).
    fn gated_entry(
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
    fn gated_exit(&mut self, pool: &mut ConstantPool, push: &[u8], ret: u8) -> Result<Snippet> {
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

/// Instruments every method of a class; method `i` gets key `base + i`.
pub fn instrument(class: &[u8], base: u32, weave: Weave) -> Result<Outcome> {
    instrument_with(class, |_| Some(base), weave, &no_callees).map(|(o, _)| o)
}

/// Like [`instrument`], with the first key asked of `reserve(number of methods)` (returned),
/// and the calls of `callees` wrapped besides the class's own intrinsic candidates.
pub fn instrument_with(
    class: &[u8],
    reserve: impl FnOnce(u32) -> Option<u32>,
    weave: Weave,
    callees: Callees,
) -> Result<(Outcome, u32)> {
    let mut cf = ClassFile::parse(class)?;
    let natives = cf
        .methods
        .iter()
        .filter(|m| m.access & ACC_NATIVE != 0)
        .count() as u32;
    let Some(base) = reserve(cf.methods.len() as u32 + natives) else {
        return err("no method keys left");
    };
    let name = cf.name()?.into_owned();
    let mut refs = Refs {
        critical: weave.critical,
        ..Refs::default()
    };
    let mut scratch = Scratch::default();
    // Class files before version 50 have no stack maps.
    let stack_maps = cf.major >= 50;
    let mut out = Outcome {
        name,
        methods: cf.methods.len() as u32,
        ..Outcome::default()
    };
    let mut methods = std::mem::take(&mut cf.methods);
    let mut renamed = Vec::new();
    for (index, m) in methods.iter().enumerate() {
        if super::classfile::is_intrinsic_candidate(&cf.pool, &m.attributes) {
            out.intrinsic += 1;
            out.intrinsics.push((
                cf.pool.text(m.name)?.into_owned(),
                cf.pool.text(m.descriptor)?.into_owned(),
                base + index as u32,
            ));
        }
    }
    let sites = call_sites(&cf.pool, out.name.as_bytes(), &out.intrinsics, callees);
    let class_name = out.name.clone();
    let fields: Vec<(u16, u16, u16)> = cf
        .fields
        .iter()
        .map(|f| (f.access, f.name, f.descriptor))
        .collect();

    for (index, m) in methods.iter_mut().enumerate() {
        let key = base + index as u32;
        // Named only when the method is left as it was.
        let (name_at, descriptor_at) = (m.name, m.descriptor);
        let mname = |pool: &ConstantPool| -> String {
            format!(
                "{}{}",
                pool.text(name_at).unwrap_or("?".into()),
                pool.text(descriptor_at).unwrap_or("?".into())
            )
        };
        let Some(at) = m
            .attributes
            .iter()
            .position(|a| cf.pool.is_utf8(a.name, b"Code"))
        else {
            if m.access & ACC_NATIVE == 0 {
                continue; // abstract
            }
            // Annotated natives stay as they are: a caller-sensitive one must keep its
            // caller's frame next to it, and an intrinsic candidate must stay native (HotSpot
            // warns about an @IntrinsicCandidate method it has no intrinsic for).
            let annotated = m
                .attributes
                .iter()
                .any(|a| cf.pool.is_utf8(a.name, b"RuntimeVisibleAnnotations"));
            if !weave.wrap_natives || annotated {
                out.native += 1;
                continue;
            }
            match wrap_native(
                &mut cf.pool,
                cf.this_class,
                m,
                key,
                &mut refs,
                weave,
                stack_maps,
            ) {
                Ok(native) => {
                    renamed.push(native);
                    out.instrumented += 1;
                }
                Err(e) => {
                    out.native += 1;
                    out.skipped.push((mname(&cf.pool), e.0));
                }
            }
            continue;
        };
        let method = MethodInfo {
            class: class_name.as_bytes(),
            fields: &fields,
            is_static: m.access & ACC_STATIC != 0,
            is_ctor: cf.pool.utf8(m.name)? == b"<init>",
            descriptor: m.descriptor,
            key,
            stack_maps,
        };
        match rewrite(
            &mut cf.pool,
            &method,
            &m.attributes[at].data,
            &mut refs,
            weave,
            &sites,
            &mut scratch,
        ) {
            Ok(Rewritten {
                data,
                padded,
                wrapped,
                leaf,
            }) => {
                m.attributes[at].data = data.into();
                out.instrumented += 1;
                out.padded += u32::from(padded);
                out.leaves += u32::from(leaf);
                out.call_sites += wrapped;
            }
            Err(e) => out.skipped.push((mname(&cf.pool), e.0)),
        }
    }
    methods.extend(renamed);
    out.methods = methods.len() as u32;
    cf.methods = methods;
    out.bytes = cf.write();
    Ok((out, base))
}

/// The callee's key of each Methodref and InterfaceMethodref of `pool` whose calls are wrapped
/// (u32::MAX: not), by constant index: those of `own` (the class `this`'s intrinsic
/// candidates) and those `callees` names.
fn call_sites(
    pool: &ConstantPool,
    this: &[u8],
    own: &[(String, String, u32)],
    callees: Callees,
) -> Vec<u32> {
    let mut keys = Vec::new();
    for index in 1..pool.entries.len() {
        if !matches!(
            pool.entries[index],
            super::classfile::Constant::Other(10 | 11, _)
        ) {
            continue;
        }
        let Ok((owner, name, desc)) = pool.member_ref(index as u16) else {
            continue;
        };
        let key = if owner == this {
            own.iter()
                .find(|(n, d, _)| n.as_bytes() == name && d.as_bytes() == desc)
                .map(|m| m.2)
        } else {
            callees(owner, name, desc)
        };
        if let Some(key) = key {
            keys.resize(index + 1, u32::MAX);
            keys[index] = key;
        }
    }
    keys
}

/// The methods of java/lang/Thread hooked for `monitors=on` and the key their entry and exit
/// pass (the agent's `capture::sync` numbers them): start (1), join (2) and sleep (3) in
/// every form that has code on this JDK. A call through a subclass's name reaches them too.
pub fn thread_hook(name: &[u8], descriptor: &[u8]) -> Option<u32> {
    match (name, descriptor) {
        (b"start", b"()V") => Some(1),
        (b"join", b"()V" | b"(J)V" | b"(JI)V" | b"(Ljava/time/Duration;)Z") => Some(2),
        (b"sleep", b"(J)V" | b"(JI)V" | b"(Ljava/time/Duration;)V") => Some(3),
        _ => None,
    }
}

/// `monitors=on`: java/lang/Thread with the methods of [`thread_hook`] woven as every method
/// is for method tracing, but calling `syncEnter0`/`syncEnterObject0` (with the receiver) and
/// `syncExit0` with the hook's key, behind `JliveTrampoline.syncGate`, and unpadded. None when
/// it has none of them.
pub fn hook_thread_methods(class: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut cf = ClassFile::parse(class)?;
    let mut refs = Refs {
        sync: true,
        ..Refs::default()
    };
    let mut scratch = Scratch::default();
    let weave = Weave {
        objects: true,
        inlinable: true,
        ..Weave::default()
    };
    let stack_maps = cf.major >= 50;
    let mut methods = std::mem::take(&mut cf.methods);
    let mut hooked = 0;
    for m in methods.iter_mut() {
        let Some(key) = thread_hook(cf.pool.utf8(m.name)?, cf.pool.utf8(m.descriptor)?) else {
            continue;
        };
        let Some(at) = m
            .attributes
            .iter()
            .position(|a| cf.pool.is_utf8(a.name, b"Code"))
        else {
            continue; // native (JDK 17's sleep(long)): its call sites are hooked instead
        };
        let method = MethodInfo {
            class: b"java/lang/Thread",
            fields: &[],
            is_static: m.access & ACC_STATIC != 0,
            is_ctor: false,
            descriptor: m.descriptor,
            key,
            stack_maps,
        };
        let Rewritten { data, .. } = rewrite(
            &mut cf.pool,
            &method,
            &m.attributes[at].data,
            &mut refs,
            weave,
            &[],
            &mut scratch,
        )?;
        m.attributes[at].data = data.into();
        hooked += 1;
    }
    cf.methods = methods;
    Ok((hooked > 0).then(|| cf.write()))
}

/// Turns native method `m` into a wrapper and returns the renamed native to append.
fn wrap_native<'a>(
    pool: &mut ConstantPool<'a>,
    this_class: u16,
    m: &mut super::classfile::Member<'a>,
    key: u32,
    refs: &mut Refs,
    weave: Weave,
    stack_maps: bool,
) -> Result<super::classfile::Member<'a>> {
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
    let (args, ret) = super::classfile::descriptor_slots(&desc)?;
    let mut attributes = Vec::new();
    if stack_maps {
        let thrown = [VType::Object(refs.get(pool, Ref::Throwable)?)];
        let frame = Frame {
            offset: handler,
            locals: &[],
            stack: &thrown,
        };
        attributes.push(super::classfile::Attribute {
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
    let native = super::classfile::Member {
        access: (m.access & !(ACC_PUBLIC | ACC_PROTECTED)) | ACC_PRIVATE | ACC_SYNTHETIC,
        name: target_name,
        descriptor: m.descriptor,
        attributes: Vec::new(),
    };
    m.access &= !(ACC_NATIVE | ACC_SYNCHRONIZED);
    m.attributes.push(super::classfile::Attribute {
        name: code_name,
        data: body.write().into(),
    });
    Ok(native)
}

struct MethodInfo<'c> {
    /// The internal name of its class.
    class: &'c [u8],
    /// The fields the class declares (`code::LeafScope::fields`).
    fields: &'c [(u16, u16, u16)],
    is_static: bool,
    is_ctor: bool,
    /// The method's descriptor (a Utf8 constant).
    descriptor: u16,
    key: u32,
    /// The class file has stack maps (version 50 or later).
    stack_maps: bool,
}

fn key_push(pool: &mut ConstantPool, key: u32) -> Result<[u8; 3]> {
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
struct Snippet {
    bytes: [u8; 16],
    len: usize,
}

impl Snippet {
    fn of(parts: &[&[u8]]) -> Snippet {
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
fn goto(out: &mut Vec<u8>, distance: usize, len: usize) {
    if len == 3 {
        out.push(code::GOTO);
        out.extend_from_slice(&(distance as u16).to_be_bytes());
    } else {
        out.push(code::GOTO_W);
        out.extend_from_slice(&(distance as u32).to_be_bytes());
    }
}

fn call(method: u16) -> [u8; 3] {
    [code::INVOKESTATIC, (method >> 8) as u8, method as u8]
}

/// Pads `code` past [`INLINE_LIMIT`] with a block that is never reached, `iconst_0;
/// lookupswitch` with every target on that `iconst_0`, and returns the block's offset (its
/// stack map frame has empty locals and stack). One instruction, so the verifier and HotSpot's
/// bytecode rewriter step over it at once.
fn pad_past_inlining(code: &mut Vec<u8>) -> Option<usize> {
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
const BACK: [u8; 4] = (-1i32).to_be_bytes();
const MAX_PADDING_PAIRS: usize = INLINE_LIMIT / 8 + 1;

/// The padding switch's pairs: keys 0, 1, 2, ..., each with target [`BACK`].
const PADDING_PAIRS: [u8; 8 * MAX_PADDING_PAIRS] = {
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

/// Where an original instruction lands.
#[derive(Clone, Copy)]
struct Place {
    /// Where it starts: where branches to it go.
    at: usize,
    /// Its length after re-padding (switches) or, for a return, the goto that replaces it,
    /// with what goes before it (a wrapped call).
    len: usize,
}

/// What one class's methods reuse, so that rewriting a method allocates little more than
/// its new Code attribute.
#[derive(Default)]
struct Scratch {
    insns: Vec<Insn>,
    /// The stack map frames' offsets and stack depths.
    depths: Vec<(usize, usize)>,
    places: Vec<Place>,
    /// Old code offset to instruction number (u32::MAX: inside an instruction); one entry
    /// past the end.
    index: Vec<u32>,
    /// The method's wrapped calls (`rewrite`).
    calls: Vec<(usize, Snippet, Snippet)>,
    code: Vec<u8>,
}

fn switch_pad(at: usize) -> usize {
    (4 - (at + 1) % 4) % 4
}

/// Places every instruction after a prologue, each return as a goto of `goto_len` bytes and
/// with `around(insn)` bytes (before, after) around each; returns the end of the moved code.
/// An instruction's place begins with what goes before it, where branches to it land.
fn layout(
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
fn return_type(
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
struct Rewritten {
    data: Vec<u8>,
    /// Padded past [`INLINE_LIMIT`].
    padded: bool,
    /// Calls of intrinsic candidates wrapped.
    wrapped: u32,
    /// A leaf: its exit recorded with its entry.
    leaf: bool,
}

/// What is woven around a method's body: its entry (the prologue), its exits (the exit
/// block, the catch-all's rethrow), and after an allocation or super().
struct Parts {
    analysis: Analysis,
    /// A leaf: its exit recorded with its entry, its returns kept, no exit block or handler.
    leaf: bool,
    prologue: Snippet,
    rethrow: Snippet,
    /// The method's return instruction (None: `return`-less, or a leaf).
    ret: Option<u8>,
    exit_block: Snippet,
    allocated: Snippet,
    /// objects=on: `this` reported right after super()/this() initialized it, at that pc.
    super_call: Option<usize>,
    constructed: Snippet,
    throwable: u16,
}

impl Parts {
    fn make(
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
    fn suffix_of(&self, i: &Insn, weave: Weave) -> &[u8] {
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
fn wrapped_calls(
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
struct Blocks {
    /// The end of the moved body: where the exit block begins.
    end: usize,
    catch_all: usize,
    /// A constructor's second handler, for the code before super()/this().
    catch_before_super: usize,
    /// Where the dead padding begins, if any.
    padding: Option<usize>,
}

fn rewrite(
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
fn handlers_and_frames<'t>(
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
fn code_attribute(
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
fn attribute_header(out: &mut Vec<u8>, name: u16) -> usize {
    put_u2(out, name);
    put_u4(out, 0);
    out.len() - 4
}

fn end_attribute(out: &mut [u8], length_at: usize) {
    let length = (out.len() - length_at - 4) as u32;
    out[length_at..length_at + 4].copy_from_slice(&length.to_be_bytes());
}

/// The Code attributes that hold bytecode offsets and are carried over.
enum Table {
    Lines,
    Locals,
    StackMap,
}

/// Writes one instruction at `at` with its branch offsets moved.
fn emit(out: &mut Vec<u8>, code: &[u8], i: &Insn, at: usize, map: &OffsetMap) -> Result<()> {
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
fn line_numbers(out: &mut Vec<u8>, data: &[u8], map: &OffsetMap) -> Result<()> {
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
fn local_variables(out: &mut Vec<u8>, data: &[u8], map: &OffsetMap) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends Utf8 constants to a class file assembled by hand.
    fn utf8s(class: &mut Vec<u8>, texts: &[&[u8]]) {
        for text in texts {
            class.push(1);
            class.extend_from_slice(&(text.len() as u16).to_be_bytes());
            class.extend_from_slice(text);
        }
    }

    #[test]
    fn a_class_without_code_gets_no_new_constants() {
        // interface I { void m(); }, assembled by hand: six constants, one abstract method.
        let mut class = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52, 0, 7];
        utf8s(&mut class, &[b"I", b"java/lang/Object", b"m", b"()V"]);
        class.extend_from_slice(&[7, 0, 1, 7, 0, 2]); // #5 Class I, #6 Class Object
        class.extend_from_slice(&[0x06, 0x01, 0, 5, 0, 6, 0, 0, 0, 0]); // interface, no fields
        class.extend_from_slice(&[0, 1, 0x04, 0x01, 0, 3, 0, 4, 0, 0]); // abstract m()V
        class.extend_from_slice(&[0, 0]);
        let out = instrument(&class, 0, Weave::default()).unwrap();
        assert_eq!(out.instrumented, 0);
        assert_eq!(out.bytes, class);
    }

    #[test]
    fn modified_utf8_names_pass_through_as_they_were() {
        // class C { static void m\0😀() {} }, assembled by hand: the name holds NUL (C0 80) and a
        // supplementary character (a surrogate pair, 6 bytes), which plain UTF-8 has otherwise.
        let name = b"m\xC0\x80\xED\xA0\xBD\xED\xB8\x80";
        let mut class = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52, 0, 8];
        utf8s(&mut class, &[b"C", b"java/lang/Object", name, b"()V"]);
        class.extend_from_slice(&[7, 0, 1, 7, 0, 2]); // #5 Class C, #6 Class Object
        class.extend_from_slice(&[1, 0, 4, b'C', b'o', b'd', b'e']); // #7 "Code"
        class.extend_from_slice(&[0x00, 0x21, 0, 5, 0, 6, 0, 0, 0, 0]); // no interfaces, fields
        class.extend_from_slice(&[0, 1, 0x00, 0x09, 0, 3, 0, 4, 0, 1]); // static m, one attribute
        class.extend_from_slice(&[0, 7, 0, 0, 0, 13]); // Code, 13 bytes:
        class.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, code::RETURN, 0, 0, 0, 0]); // return
        class.extend_from_slice(&[0, 0]);
        let out = instrument(&class, 0, Weave::default()).unwrap();
        assert_eq!(out.instrumented, 1);
        let cf = ClassFile::parse(&out.bytes).unwrap();
        let m = &cf.methods[0];
        assert_eq!(
            cf.pool.utf8(m.name).unwrap(),
            name,
            "the name's bytes as they were"
        );
        assert_eq!(cf.pool.text(m.name).unwrap(), "m\0\u{1F600}");
        assert!(cf.pool.is_utf8(m.attributes[0].name, b"Code"));
    }

    /// class C { static String m(boolean b) }, assembled by hand; with `extra` an int pushed
    /// first stays under the value at both returns (a same_locals_1_stack_item frame holds it
    /// at the branch target).
    fn class_with_extra_stack_at_a_return(extra: bool) -> Vec<u8> {
        let mut class = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52, 0, 11];
        utf8s(
            &mut class,
            &[b"C", b"java/lang/Object", b"m", b"(Z)Ljava/lang/String;"],
        );
        class.extend_from_slice(&[7, 0, 1, 7, 0, 2]); // #5 Class C, #6 Class Object
        utf8s(&mut class, &[b"Code", b"java/lang/String"]); // #7, #8
        class.extend_from_slice(&[7, 0, 8]); // #9 Class String
        utf8s(&mut class, &[b"StackMapTable"]); // #10
        class.extend_from_slice(&[0x00, 0x21, 0, 5, 0, 6, 0, 0, 0, 0]);
        class.extend_from_slice(&[0, 1, 0x00, 0x09, 0, 3, 0, 4, 0, 1]);
        // iconst_0 (or nop); iload_0; ifeq +5; aconst_null; areturn; aconst_null; areturn,
        // with a frame at 7 holding [int] (or nothing) on the stack.
        let first = if extra { 0x03 } else { 0x00 };
        let code = [first, 0x1A, 0x99, 0, 5, 0x01, 0xB0, 0x01, 0xB0];
        let table: Vec<u8> = if extra {
            vec![0, 10, 0, 0, 0, 4, 0, 1, 64 + 7, 1] // same_locals_1_stack_item int
        } else {
            vec![0, 10, 0, 0, 0, 3, 0, 1, 7] // same
        };
        class.extend_from_slice(&[0, 7]);
        class.extend_from_slice(&((8 + code.len() + 4 + table.len()) as u32).to_be_bytes());
        class.extend_from_slice(&[0, 2, 0, 1]); // max_stack, max_locals
        class.extend_from_slice(&(code.len() as u32).to_be_bytes());
        class.extend_from_slice(&code);
        class.extend_from_slice(&[0, 0, 0, 1]);
        class.extend_from_slice(&table);
        class.extend_from_slice(&[0, 0]);
        class
    }

    /// A return that leaves more than its value on the stack (which the verifier allows, and
    /// jlink's generated code does) cannot jump to the shared exit block: its method is left
    /// as it was, and said so.
    #[test]
    fn a_method_returning_from_a_deeper_stack_is_left_as_it_was() {
        let clean = instrument(
            &class_with_extra_stack_at_a_return(false),
            0,
            Weave::default(),
        );
        assert_eq!(clean.unwrap().instrumented, 1);
        let out = instrument(
            &class_with_extra_stack_at_a_return(true),
            0,
            Weave::default(),
        );
        let out = out.unwrap();
        assert_eq!(out.instrumented, 0);
        assert_eq!(
            out.skipped,
            [(
                "m(Z)Ljava/lang/String;".to_string(),
                "a return leaves more than its value on the operand stack".to_string()
            )]
        );
    }

    /// class C { static String m(boolean b) { return b ? null : null; } } with two areturns
    /// and a Class constant for String, assembled by hand (version 52: stack maps).
    fn two_returns() -> Vec<u8> {
        let mut class = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52, 0, 11];
        utf8s(
            &mut class,
            &[b"C", b"java/lang/Object", b"m", b"(Z)Ljava/lang/String;"],
        );
        class.extend_from_slice(&[7, 0, 1, 7, 0, 2]); // #5 Class C, #6 Class Object
        utf8s(&mut class, &[b"Code", b"java/lang/String"]); // #7, #8
        class.extend_from_slice(&[7, 0, 8]); // #9 Class String
        utf8s(&mut class, &[b"StackMapTable"]); // #10
        class.extend_from_slice(&[0x00, 0x21, 0, 5, 0, 6, 0, 0, 0, 0]); // no interfaces, fields
        class.extend_from_slice(&[0, 1, 0x00, 0x09, 0, 3, 0, 4, 0, 1]); // static m, one attribute

        // iload_0; ifeq +5; aconst_null; areturn; aconst_null; areturn — a same frame at 6.
        let code = [0x1A, 0x99, 0, 5, 0x01, 0xB0, 0x01, 0xB0];
        let table = [0, 10, 0, 0, 0, 3, 0, 1, 6];
        class.extend_from_slice(&[0, 7]);
        class.extend_from_slice(&((8 + code.len() + 4 + table.len()) as u32).to_be_bytes());
        class.extend_from_slice(&[0, 1, 0, 1]); // max_stack, max_locals
        class.extend_from_slice(&(code.len() as u32).to_be_bytes());
        class.extend_from_slice(&code);
        class.extend_from_slice(&[0, 0, 0, 1]); // no handlers, one attribute
        class.extend_from_slice(&table);
        class.extend_from_slice(&[0, 0]);
        class
    }

    #[test]
    fn returns_jump_to_one_gated_exit_and_the_prologue_skips_its_call_while_paused() {
        let weave = Weave {
            inlinable: true,
            ..Weave::default()
        };
        let out = instrument(&two_returns(), 7, weave).unwrap();
        assert_eq!(out.instrumented, 1);
        let cf = ClassFile::parse(&out.bytes).unwrap();
        let body = Code::parse(&cf.methods[0].attributes[0].data).unwrap();
        let insns = code::decode(&body.code).unwrap();
        let ops: Vec<u8> = insns.iter().map(|i| i.op).collect();
        #[rustfmt::skip]
        assert_eq!(ops, [
            code::GETSTATIC, code::IFEQ, code::SIPUSH, code::INVOKESTATIC, // prologue
            0x1A, 0x99, 0x01, code::GOTO, 0x01, code::GOTO, // body
            code::GETSTATIC, code::IFLE, code::SIPUSH, code::INVOKESTATIC, 0xB0, // exit
            code::GETSTATIC, code::IFLE, code::SIPUSH, code::INVOKESTATIC, code::ATHROW,
        ]);
        let at = |k: usize| insns[k].pc;
        let targets = |k: usize| code::targets(&body.code, &insns[k]).unwrap();
        assert_eq!(targets(1), [at(4)], "a closed gate skips the entry call");
        assert_eq!(targets(7), [at(10)], "each return jumps to the exit block");
        assert_eq!(targets(9), [at(10)]);
        assert_eq!(targets(11), [at(14)], "a closed gate skips the exit call");
        assert_eq!(
            &body.code[at(2)..at(2) + 3],
            &[code::SIPUSH, 0, 7],
            "the key"
        );
        let (owner, name, _) = cf
            .pool
            .member_ref(u16::from_be_bytes([
                body.code[at(0) + 1],
                body.code[at(0) + 2],
            ]))
            .unwrap();
        assert_eq!((owner, name), (TRAMPOLINE.as_bytes(), &b"gate"[..]));
        let frames = stackmap::decode(&body.attributes[0].data, &[VType::Integer]).unwrap();
        let offsets: Vec<usize> = frames.iter().map(|f| f.offset).collect();
        assert_eq!(offsets, [at(4), at(8), at(10), at(14), at(15), at(19)]);
        assert_eq!(
            frames[0].locals,
            [VType::Integer],
            "the body starts as the method did"
        );
        for exit in &frames[2..4] {
            assert!(exit.locals.is_empty());
            assert_eq!(
                exit.stack,
                [VType::Object(9)],
                "the class's own String constant"
            );
        }
    }

    /// A leaf (`m` calls nothing) calls `leaf0` where others call `enter0`, and keeps its
    /// returns: no exit block, no handler.
    #[test]
    fn a_leaf_records_its_exit_with_its_entry_and_keeps_its_returns() {
        for (critical, trampoline) in [(false, "leaf0"), (true, "leafCritical")] {
            let weave = Weave {
                inlinable: true,
                leaves: true,
                critical,
                ..Weave::default()
            };
            let out = instrument(&two_returns(), 7, weave).unwrap();
            assert_eq!(out.instrumented, 1);
            let cf = ClassFile::parse(&out.bytes).unwrap();
            let body = Code::parse(&cf.methods[0].attributes[0].data).unwrap();
            let insns = code::decode(&body.code).unwrap();
            let ops: Vec<u8> = insns.iter().map(|i| i.op).collect();
            #[rustfmt::skip]
            assert_eq!(ops, [
                code::GETSTATIC, code::IFEQ, code::SIPUSH, code::INVOKESTATIC, // prologue
                0x1A, 0x99, 0x01, 0xB0, 0x01, 0xB0, // the body as it was
            ]);
            assert!(body.handlers.is_empty());
            let called =
                u16::from_be_bytes([body.code[insns[3].pc + 1], body.code[insns[3].pc + 2]]);
            let (owner, name, _) = cf.pool.member_ref(called).unwrap();
            assert_eq!(
                (owner, name),
                (TRAMPOLINE.as_bytes(), trampoline.as_bytes())
            );
            let targets = code::targets(&body.code, &insns[5]).unwrap();
            assert_eq!(targets, [insns[8].pc], "the body's branch moved with it");
            let frames = stackmap::decode(&body.attributes[0].data, &[VType::Integer]).unwrap();
            let offsets: Vec<usize> = frames.iter().map(|f| f.offset).collect();
            assert_eq!(offsets, [insns[4].pc, insns[8].pc]);
        }
    }

    #[test]
    fn padding_lifts_every_short_method_past_the_inlining_limit() {
        for len in 0..=INLINE_LIMIT + 8 {
            // A method body of `nop`s ending in `return`.
            let mut code = vec![0u8; len];
            if let Some(last) = code.last_mut() {
                *last = code::RETURN;
            }
            let block = pad_past_inlining(&mut code);
            if len > INLINE_LIMIT {
                assert_eq!(block, None, "{} bytes need no padding", len);
                continue;
            }
            assert_eq!(block, Some(len));
            assert!(code.len() > INLINE_LIMIT, "{} -> {}", len, code.len());
            let insns = code::decode(&code).expect("the padded code decodes");
            let switch = insns.last().unwrap();
            assert_eq!(switch.op, code::LOOKUPSWITCH);
            assert_eq!(
                switch.pc + switch.len,
                code.len(),
                "the switch ends the code"
            );
            let targets = code::targets(&code, switch).unwrap();
            // default + at least one pair: HotSpot rejects a pairless switch at the end.
            assert!(targets.len() >= 2);
            assert!(
                targets.iter().all(|&t| t == len),
                "every target on iconst_0"
            );
            assert_eq!(code[len], code::ICONST_0);
        }
    }
}
