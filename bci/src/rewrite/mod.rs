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

mod method;
mod native;
mod snippets;

use method::*;
use native::*;
use snippets::*;

use super::classfile::{err, ClassFile, ConstantPool, Result};

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

pub(super) struct MethodInfo<'c> {
    /// The internal name of its class.
    pub(super) class: &'c [u8],
    /// The fields the class declares (`code::LeafScope::fields`).
    pub(super) fields: &'c [(u16, u16, u16)],
    pub(super) is_static: bool,
    pub(super) is_ctor: bool,
    /// The method's descriptor (a Utf8 constant).
    pub(super) descriptor: u16,
    pub(super) key: u32,
    /// The class file has stack maps (version 50 or later).
    pub(super) stack_maps: bool,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classfile::Code;
    use crate::code;
    use crate::stackmap::{self, VType};

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
