//! Reading and writing class files (JVMS §4), just far enough to rewrite method code:
//! the constant pool is kept as raw entries and grows by appending; fields and class
//! attributes pass through untouched; methods keep their attributes as raw bytes except Code.
//! Everything read borrows from the input bytes; only what changes is owned.
//!
//! ```text
//! ClassFile  u4 0xCAFEBABE, u2 minor, u2 major, u2 cp_count, cp_info[cp_count-1],
//!            u2 access, u2 this, u2 super, u2 n + u2[n] interfaces,
//!            u2 n + field_info[n], u2 n + method_info[n], u2 n + attribute_info[n]
//! member     u2 access, u2 name, u2 descriptor, u2 n + attribute_info[n]
//! attribute  u2 name, u4 length, u1[length]
//! Code       u2 max_stack, u2 max_locals, u4 n + u1[n] code,
//!            u2 n + (u2 start, u2 end, u2 handler, u2 catch_type)[n], u2 n + attribute_info[n]
//! ```

use std::borrow::Cow;
use std::fmt;

/// Access flags of classes, fields and methods (JVMS §4.1, §4.5, §4.6).
pub const ACC_PUBLIC: u16 = 0x0001;
pub const ACC_PRIVATE: u16 = 0x0002;
pub const ACC_PROTECTED: u16 = 0x0004;
pub const ACC_STATIC: u16 = 0x0008;
pub const ACC_FINAL: u16 = 0x0010;
pub const ACC_SYNCHRONIZED: u16 = 0x0020;
pub const ACC_NATIVE: u16 = 0x0100;
pub const ACC_ABSTRACT: u16 = 0x0400;
pub const ACC_SYNTHETIC: u16 = 0x1000;

/// Why a class file could not be read or rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassError(pub String);

impl fmt::Display for ClassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub type Result<T> = std::result::Result<T, ClassError>;

pub fn err<T>(message: impl Into<String>) -> Result<T> {
    Err(ClassError(message.into()))
}

/// A bounds-checked big-endian reader.
pub struct Reader<'a> {
    data: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => err(format!("class file cut short at byte {}", self.pos)),
        }
    }
    pub fn u1(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u2(&mut self) -> Result<u16> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub fn u4(&mut self) -> Result<u32> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// A constant pool entry, kept as its raw bytes (tag included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Constant<'a> {
    /// Its bytes as the class file holds them (modified UTF-8), checked and decoded only
    /// when the rewriter reads the text: most constants are written back unread.
    Utf8(Cow<'a, [u8]>),
    /// Any other entry: its tag and raw payload.
    Other(u8, Cow<'a, [u8]>),
    /// The unusable second slot of a Long or Double.
    Gap,
}

/// The constant pool: index 0 unused, entries 1..len.
///
/// The rewriter adds a few constants per class (the trampolines' Methodrefs, a key per method
/// past 32767) and shares them among its methods, but never looks among the class's own
/// constants: a class that already has "Code" or "(I)V" gets a second one, which is legal
/// (JVMS §4.4 asks no uniqueness), and no hash of every constant of every class is made.
#[derive(Clone, Debug, Default)]
pub struct ConstantPool<'a> {
    pub entries: Vec<Constant<'a>>,
    /// The number of entries read from the class: those from here on were added.
    read: usize,
}

impl Constant<'_> {
    /// Its size in a class file.
    fn size_hint(&self) -> usize {
        match self {
            Constant::Utf8(s) => 3 + s.len(),
            Constant::Other(_, p) => 1 + p.len(),
            Constant::Gap => 0,
        }
    }
    fn is(&self, tag: u8, payload: &[u8]) -> bool {
        match self {
            Constant::Utf8(s) => tag == 1 && s.as_ref() == payload,
            Constant::Other(t, p) => *t == tag && p.as_ref() == payload,
            Constant::Gap => false,
        }
    }
}

impl<'a> ConstantPool<'a> {
    fn read(r: &mut Reader<'a>) -> Result<ConstantPool<'a>> {
        let count = r.u2()? as usize;
        // Room for the constants the rewriter adds without growing the vector.
        let mut entries = Vec::with_capacity(count + 32);
        entries.push(Constant::Gap);
        while entries.len() < count {
            let tag = r.u1()?;
            let payload = match tag {
                1 => {
                    let n = r.u2()? as usize;
                    entries.push(Constant::Utf8(Cow::Borrowed(r.bytes(n)?)));
                    continue;
                }
                3 | 4 => r.bytes(4)?,
                5 | 6 => r.bytes(8)?,
                7 | 8 | 16 | 19 | 20 => r.bytes(2)?,
                9 | 10 | 11 | 12 | 17 | 18 => r.bytes(4)?,
                15 => r.bytes(3)?,
                _ => {
                    return err(format!(
                        "unknown constant pool tag {} at entry {}",
                        tag,
                        entries.len()
                    ))
                }
            };
            entries.push(Constant::Other(tag, Cow::Borrowed(payload)));
            if tag == 5 || tag == 6 {
                entries.push(Constant::Gap);
            }
        }
        let read = entries.len();
        Ok(ConstantPool { entries, read })
    }

    fn write(&self, out: &mut Vec<u8>) {
        put_u2(out, self.entries.len() as u16);
        for e in &self.entries[1..] {
            match e {
                Constant::Utf8(s) => {
                    out.push(1);
                    put_u2(out, s.len() as u16);
                    out.extend_from_slice(s);
                }
                Constant::Other(tag, payload) => {
                    out.push(*tag);
                    out.extend_from_slice(payload);
                }
                Constant::Gap => {}
            }
        }
    }

    /// The bytes of a Utf8 constant (modified UTF-8: plain UTF-8 except for NUL and
    /// supplementary characters); what descriptors and names are compared and parsed in.
    pub fn utf8(&self, index: u16) -> Result<&[u8]> {
        match self.entries.get(index as usize) {
            Some(Constant::Utf8(s)) => Ok(s),
            _ => err(format!("constant {} is not a Utf8", index)),
        }
    }

    /// Whether constant `index` is the Utf8 `text` (ASCII).
    pub fn is_utf8(&self, index: u16, text: &[u8]) -> bool {
        self.utf8(index).is_ok_and(|s| s == text)
    }

    /// The text of a Utf8 constant, decoded.
    pub fn text(&self, index: u16) -> Result<Cow<'_, str>> {
        let bytes = self.utf8(index)?;
        Ok(match std::str::from_utf8(bytes) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => Cow::Owned(decode_modified_utf8(bytes)),
        })
    }

    fn other(&self, index: u16, want: &[u8]) -> Result<&[u8]> {
        match self.entries.get(index as usize) {
            Some(Constant::Other(tag, payload)) if want.contains(tag) => Ok(payload),
            _ => err(format!("constant {} is not of tag {:?}", index, want)),
        }
    }

    fn u2_at(payload: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([payload[at], payload[at + 1]])
    }

    /// The internal name of a Class constant.
    pub fn class_name(&self, index: u16) -> Result<&[u8]> {
        self.utf8(self.class_name_index(index)?)
    }

    /// The Utf8 constant that names a Class constant.
    fn class_name_index(&self, index: u16) -> Result<u16> {
        Ok(Self::u2_at(self.other(index, &[7])?, 0))
    }

    /// (owner class, name, descriptor) of a Fieldref/Methodref/InterfaceMethodref.
    pub fn member_ref(&self, index: u16) -> Result<(&[u8], &[u8], &[u8])> {
        let p = self.other(index, &[9, 10, 11])?;
        let owner = self.class_name(Self::u2_at(p, 0))?;
        let (name, desc) = self.name_and_type(Self::u2_at(p, 2))?;
        Ok((owner, name, desc))
    }

    fn name_and_type(&self, index: u16) -> Result<(&[u8], &[u8])> {
        let p = self.other(index, &[12])?;
        Ok((self.utf8(Self::u2_at(p, 0))?, self.utf8(Self::u2_at(p, 2))?))
    }

    /// The descriptor of an InvokeDynamic (or Dynamic) constant.
    pub fn dynamic_descriptor(&self, index: u16) -> Result<&[u8]> {
        let p = self.other(index, &[17, 18])?;
        Ok(self.name_and_type(Self::u2_at(p, 2))?.1)
    }

    /// Whether an ldc constant is a Long or Double (two slots).
    pub fn is_wide(&self, index: u16) -> bool {
        matches!(
            self.entries.get(index as usize),
            Some(Constant::Other(5 | 6, _))
        )
    }

    /// The descriptor of a Dynamic constant loaded by ldc (its slot size matters).
    pub fn ldc_slots(&self, index: u16) -> usize {
        match self.entries.get(index as usize) {
            Some(Constant::Other(5 | 6, _)) => 2,
            Some(Constant::Other(17, _)) => match self.dynamic_descriptor(index) {
                Ok(b"J") | Ok(b"D") => 2,
                _ => 1,
            },
            _ => 1,
        }
    }

    fn push(&mut self, c: Constant<'a>) -> Result<u16> {
        let index = self.entries.len();
        if index >= 0xFFFF {
            return err("the constant pool is full");
        }
        self.entries.push(c);
        Ok(index as u16)
    }

    /// The index of an added entry equal to (tag, payload), if there is one.
    fn find(&self, tag: u8, payload: &[u8]) -> Option<u16> {
        let start = self.read.max(1);
        (start..self.entries.len())
            .find(|&i| self.entries[i].is(tag, payload))
            .map(|i| i as u16)
    }

    /// A Utf8 constant, shared with an equal one added before.
    pub fn add_utf8(&mut self, s: &str) -> Result<u16> {
        // UTF-8 without NUL and without 4-byte sequences (lead bytes 0xF0 and up) is already
        // modified UTF-8: every name the rewriter adds.
        if s.bytes().all(|b| b != 0 && b < 0xF0) {
            self.add_utf8_bytes(s.as_bytes())
        } else {
            self.add_utf8_bytes(&encode_modified_utf8(s))
        }
    }

    /// A Utf8 constant from bytes already in modified UTF-8.
    pub fn add_utf8_bytes(&mut self, bytes: &[u8]) -> Result<u16> {
        if let Some(i) = self.find(1, bytes) {
            return Ok(i);
        }
        self.push(Constant::Utf8(Cow::Owned(bytes.to_vec())))
    }

    fn add_other(&mut self, tag: u8, payload: Vec<u8>) -> Result<u16> {
        if let Some(i) = self.find(tag, &payload) {
            return Ok(i);
        }
        self.push(Constant::Other(tag, Cow::Owned(payload)))
    }

    pub fn add_class(&mut self, name: &str) -> Result<u16> {
        let n = self.add_utf8(name)?;
        self.add_other(7, n.to_be_bytes().to_vec())
    }

    /// A Class constant whose name is already in modified UTF-8.
    pub fn add_class_bytes(&mut self, name: &[u8]) -> Result<u16> {
        let n = self.add_utf8_bytes(name)?;
        self.add_other(7, n.to_be_bytes().to_vec())
    }

    /// (hash of the name, index) of every Class constant read from the class, for
    /// [`ConstantPool::class_among`].
    pub fn read_classes(&self) -> Vec<(u64, u16)> {
        (1..self.read)
            .filter(|&i| matches!(self.entries[i], Constant::Other(7, _)))
            .filter_map(|i| Some((name_hash(self.class_name(i as u16).ok()?), i as u16)))
            .collect()
    }

    /// The Class constant named `name` among `classes` (from [`ConstantPool::read_classes`]).
    pub fn class_among(&self, classes: &[(u64, u16)], name: &[u8]) -> Option<u16> {
        let hash = name_hash(name);
        classes
            .iter()
            .find(|&&(h, i)| h == hash && self.class_name(i).ok() == Some(name))
            .map(|&(_, i)| i)
    }

    /// A new Integer constant (the rewriter's are method keys, each used by one method, so
    /// there is nothing to share).
    pub fn add_integer(&mut self, v: i32) -> Result<u16> {
        self.push(Constant::Other(3, Cow::Owned(v.to_be_bytes().to_vec())))
    }

    pub fn add_method_ref(&mut self, owner: &str, name: &str, desc: &str) -> Result<u16> {
        let class = self.add_class(owner)?;
        let n = self.add_utf8(name)?;
        let d = self.add_utf8(desc)?;
        self.add_method_ref_in(class, n, d)
    }

    pub fn add_field_ref(&mut self, owner: &str, name: &str, desc: &str) -> Result<u16> {
        let class = self.add_class(owner)?;
        let n = self.add_utf8(name)?;
        let d = self.add_utf8(desc)?;
        self.add_member_ref(9, class, n, d)
    }

    /// A Methodref from a Class constant and Utf8 name and descriptor constants.
    pub fn add_method_ref_in(&mut self, class: u16, n: u16, d: u16) -> Result<u16> {
        self.add_member_ref(10, class, n, d)
    }

    /// A Fieldref (tag 9) or Methodref (10) and its NameAndType.
    fn add_member_ref(&mut self, tag: u8, class: u16, n: u16, d: u16) -> Result<u16> {
        let mut nat = n.to_be_bytes().to_vec();
        nat.extend_from_slice(&d.to_be_bytes());
        let nat = self.add_other(12, nat)?;
        let mut payload = class.to_be_bytes().to_vec();
        payload.extend_from_slice(&nat.to_be_bytes());
        self.add_other(tag, payload)
    }
}

/// FNV-1a of a name.
fn name_hash(name: &[u8]) -> u64 {
    name.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// An attribute: its name index and raw bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribute<'a> {
    pub name: u16,
    pub data: Cow<'a, [u8]>,
}

/// The annotation types HotSpot reads as "this method may be an intrinsic": JDK 16's name,
/// and JDK 9–15's.
const INTRINSIC_CANDIDATE: [&[u8]; 2] = [
    b"Ljdk/internal/vm/annotation/IntrinsicCandidate;",
    b"Ljdk/internal/HotSpotIntrinsicCandidate;",
];

/// Whether a member's RuntimeVisibleAnnotations name `@IntrinsicCandidate`: HotSpot may then
/// compile a call to it as code of its own, which runs none of the method's bytecode.
pub fn is_intrinsic_candidate(pool: &ConstantPool, attributes: &[Attribute]) -> bool {
    attributes
        .iter()
        .filter(|a| pool.is_utf8(a.name, b"RuntimeVisibleAnnotations"))
        .any(|a| {
            annotation_types(&a.data).is_ok_and(|types| {
                types
                    .iter()
                    .any(|&t| INTRINSIC_CANDIDATE.iter().any(|name| pool.is_utf8(t, name)))
            })
        })
}

/// The type (a Utf8 constant index) of each annotation of a Runtime*Annotations attribute:
/// `u2 count`, then per annotation `u2 type`, `u2 pairs`, each pair `u2 name` and a value.
fn annotation_types(data: &[u8]) -> Result<Vec<u16>> {
    let mut r = Reader::new(data);
    let n = r.u2()?;
    let mut types = Vec::with_capacity(n as usize);
    for _ in 0..n {
        types.push(skip_annotation(&mut r)?);
    }
    Ok(types)
}

/// Reads past one annotation; its type.
fn skip_annotation(r: &mut Reader) -> Result<u16> {
    let type_index = r.u2()?;
    for _ in 0..r.u2()? {
        r.u2()?; // the element's name
        skip_element_value(r)?;
    }
    Ok(type_index)
}

/// Reads past an element_value: a tag, then a constant, an enum, a class, a nested
/// annotation or an array of values.
fn skip_element_value(r: &mut Reader) -> Result<()> {
    match r.u1()? {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => {
            r.u2()?;
        }
        b'e' => {
            r.u2()?;
            r.u2()?;
        }
        b'@' => {
            skip_annotation(r)?;
        }
        b'[' => {
            for _ in 0..r.u2()? {
                skip_element_value(r)?;
            }
        }
        tag => return err(format!("unknown annotation element tag {}", tag)),
    }
    Ok(())
}

fn read_attributes<'a>(r: &mut Reader<'a>) -> Result<Vec<Attribute<'a>>> {
    let n = r.u2()? as usize;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.u2()?;
        let len = r.u4()? as usize;
        v.push(Attribute {
            name,
            data: Cow::Borrowed(r.bytes(len)?),
        });
    }
    Ok(v)
}

fn write_attributes(out: &mut Vec<u8>, attrs: &[Attribute]) {
    put_u2(out, attrs.len() as u16);
    for a in attrs {
        put_u2(out, a.name);
        put_u4(out, a.data.len() as u32);
        out.extend_from_slice(&a.data);
    }
}

/// A field or method.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    pub access: u16,
    pub name: u16,
    pub descriptor: u16,
    pub attributes: Vec<Attribute<'a>>,
}

fn read_members<'a>(r: &mut Reader<'a>) -> Result<Vec<Member<'a>>> {
    let n = r.u2()? as usize;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(Member {
            access: r.u2()?,
            name: r.u2()?,
            descriptor: r.u2()?,
            attributes: read_attributes(r)?,
        });
    }
    Ok(v)
}

fn write_members(out: &mut Vec<u8>, members: &[Member]) {
    put_u2(out, members.len() as u16);
    for m in members {
        put_u2(out, m.access);
        put_u2(out, m.name);
        put_u2(out, m.descriptor);
        write_attributes(out, &m.attributes);
    }
}

/// A parsed class file, borrowing from the bytes it was read from.
#[derive(Clone, Debug)]
pub struct ClassFile<'a> {
    pub minor: u16,
    pub major: u16,
    pub pool: ConstantPool<'a>,
    pub access: u16,
    pub this_class: u16,
    pub super_class: u16,
    pub interfaces: Vec<u16>,
    pub fields: Vec<Member<'a>>,
    pub methods: Vec<Member<'a>>,
    pub attributes: Vec<Attribute<'a>>,
}

/// The names and descriptors of a class file's methods, in its order.
pub fn method_names(data: &[u8]) -> Result<Vec<(String, String)>> {
    let cf = ClassFile::parse(data)?;
    cf.methods
        .iter()
        .map(|m| {
            Ok((
                cf.pool.text(m.name)?.into_owned(),
                cf.pool.text(m.descriptor)?.into_owned(),
            ))
        })
        .collect()
}

impl<'a> ClassFile<'a> {
    pub fn parse(data: &'a [u8]) -> Result<ClassFile<'a>> {
        let mut r = Reader::new(data);
        if r.u4()? != 0xCAFE_BABE {
            return err("not a class file (bad magic)");
        }
        let minor = r.u2()?;
        let major = r.u2()?;
        let pool = ConstantPool::read(&mut r)?;
        let access = r.u2()?;
        let this_class = r.u2()?;
        let super_class = r.u2()?;
        let n = r.u2()? as usize;
        let mut interfaces = Vec::with_capacity(n);
        for _ in 0..n {
            interfaces.push(r.u2()?);
        }
        let fields = read_members(&mut r)?;
        let methods = read_members(&mut r)?;
        let attributes = read_attributes(&mut r)?;
        if r.pos != data.len() {
            return err("bytes after the end of the class file");
        }
        Ok(ClassFile {
            minor,
            major,
            pool,
            access,
            this_class,
            super_class,
            interfaces,
            fields,
            methods,
            attributes,
        })
    }

    pub fn write(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size_hint());
        put_u4(&mut out, 0xCAFE_BABE);
        put_u2(&mut out, self.minor);
        put_u2(&mut out, self.major);
        self.pool.write(&mut out);
        put_u2(&mut out, self.access);
        put_u2(&mut out, self.this_class);
        put_u2(&mut out, self.super_class);
        put_u2(&mut out, self.interfaces.len() as u16);
        for &i in &self.interfaces {
            put_u2(&mut out, i);
        }
        write_members(&mut out, &self.fields);
        write_members(&mut out, &self.methods);
        write_attributes(&mut out, &self.attributes);
        out
    }

    /// About the size of the written class (a little more), so that `write` seldom grows
    /// its vector.
    fn size_hint(&self) -> usize {
        let pool: usize = self.pool.entries.iter().map(|e| e.size_hint()).sum();
        let attributes = |a: &[Attribute]| -> usize { a.iter().map(|a| 6 + a.data.len()).sum() };
        let members =
            |m: &[Member]| -> usize { m.iter().map(|m| 8 + attributes(&m.attributes)).sum() };
        64 + pool
            + 2 * self.interfaces.len()
            + members(&self.fields)
            + members(&self.methods)
            + attributes(&self.attributes)
    }

    pub fn name(&self) -> Result<Cow<'_, str>> {
        self.pool.text(self.pool.class_name_index(self.this_class)?)
    }

    /// The superclass's internal name (None for java/lang/Object).
    pub fn super_name(&self) -> Result<Option<Cow<'_, str>>> {
        if self.super_class == 0 {
            return Ok(None);
        }
        let name = self.pool.class_name_index(self.super_class)?;
        self.pool.text(name).map(Some)
    }
}

/// The Code attribute of a method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code<'a> {
    pub max_stack: u16,
    pub max_locals: u16,
    pub code: Cow<'a, [u8]>,
    pub handlers: Vec<Handler>,
    pub attributes: Vec<Attribute<'a>>,
}

/// An exception table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handler {
    pub start: u16,
    pub end: u16,
    pub handler: u16,
    pub catch_type: u16,
}

impl<'a> Code<'a> {
    pub fn parse(data: &'a [u8]) -> Result<Code<'a>> {
        let mut r = Reader::new(data);
        let max_stack = r.u2()?;
        let max_locals = r.u2()?;
        let len = r.u4()? as usize;
        let code = Cow::Borrowed(r.bytes(len)?);
        let n = r.u2()? as usize;
        let mut handlers = Vec::with_capacity(n);
        for _ in 0..n {
            handlers.push(Handler {
                start: r.u2()?,
                end: r.u2()?,
                handler: r.u2()?,
                catch_type: r.u2()?,
            });
        }
        let attributes = read_attributes(&mut r)?;
        Ok(Code {
            max_stack,
            max_locals,
            code,
            handlers,
            attributes,
        })
    }

    pub fn write(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.code.len() + 64);
        write_code_start(
            &mut out,
            self.max_stack,
            self.max_locals,
            &self.code,
            &self.handlers,
        );
        write_attributes(&mut out, &self.attributes);
        out
    }
}

/// A Code attribute's body up to its attributes: max_stack, max_locals, the code and the
/// exception table.
pub fn write_code_start(
    out: &mut Vec<u8>,
    max_stack: u16,
    max_locals: u16,
    code: &[u8],
    handlers: &[Handler],
) {
    put_u2(out, max_stack);
    put_u2(out, max_locals);
    put_u4(out, code.len() as u32);
    out.extend_from_slice(code);
    put_u2(out, handlers.len() as u16);
    for h in handlers {
        for v in [h.start, h.end, h.handler, h.catch_type] {
            put_u2(out, v);
        }
    }
}

pub fn put_u2(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_u4(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// JVM "modified UTF-8" to a String: NUL as C0 80, supplementary characters as surrogate
/// pairs. Invalid sequences become U+FFFD; round trips are exact for valid input.
pub fn decode_modified_utf8(bytes: &[u8]) -> String {
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            units.push(u16::from(b));
            i += 1;
        } else if b & 0xE0 == 0xC0 && i + 1 < bytes.len() {
            units.push((u16::from(b & 0x1F) << 6) | u16::from(bytes[i + 1] & 0x3F));
            i += 2;
        } else if b & 0xF0 == 0xE0 && i + 2 < bytes.len() {
            units.push(
                (u16::from(b & 0x0F) << 12)
                    | (u16::from(bytes[i + 1] & 0x3F) << 6)
                    | u16::from(bytes[i + 2] & 0x3F),
            );
            i += 3;
        } else {
            units.push(0xFFFD);
            i += 1;
        }
    }
    String::from_utf16_lossy(&units)
}

/// A String to JVM modified UTF-8.
pub fn encode_modified_utf8(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        match unit {
            0x0001..=0x007F => out.push(unit as u8),
            0x0000 | 0x0080..=0x07FF => {
                out.push(0xC0 | ((unit >> 6) as u8 & 0x1F));
                out.push(0x80 | (unit as u8 & 0x3F));
            }
            _ => {
                out.push(0xE0 | ((unit >> 12) as u8 & 0x0F));
                out.push(0x80 | ((unit >> 6) as u8 & 0x3F));
                out.push(0x80 | (unit as u8 & 0x3F));
            }
        }
    }
    out
}

/// Slots taken by the parameters of a method descriptor, and by its return value.
pub fn descriptor_slots(b: &[u8]) -> Result<(usize, usize)> {
    let bad = || {
        err(format!(
            "bad method descriptor {}",
            String::from_utf8_lossy(b)
        ))
    };
    if b.first() != Some(&b'(') {
        return bad();
    }
    let mut i = 1;
    let mut args = 0;
    while i < b.len() && b[i] != b')' {
        let (slots, next) = one_type(b, i)?;
        args += slots;
        i = next;
    }
    let ret = match b.get(i + 1) {
        Some(b'V') => 0,
        Some(_) => one_type(b, i + 1)?.0,
        None => return bad(),
    };
    Ok((args, ret))
}

/// Slots of one field type at `i`, and the index after it.
fn one_type(b: &[u8], mut i: usize) -> Result<(usize, usize)> {
    let slots = if matches!(b.get(i), Some(b'J' | b'D')) {
        2
    } else {
        1
    };
    while b.get(i) == Some(&b'[') {
        i += 1;
    }
    match b.get(i) {
        Some(b'L') => match b[i..].iter().position(|&c| c == b';') {
            Some(end) => Ok((1, i + end + 1)),
            None => err("unterminated class type in descriptor"),
        },
        Some(b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z') => Ok((slots, i + 1)),
        _ => err("bad type in descriptor"),
    }
}

/// Slots of a field descriptor.
pub fn field_slots(desc: &[u8]) -> usize {
    if desc == b"J" || desc == b"D" {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors() {
        assert_eq!(descriptor_slots(b"()V").unwrap(), (0, 0));
        assert_eq!(
            descriptor_slots(b"(IJ[Ljava/lang/String;D)J").unwrap(),
            (1 + 2 + 1 + 2, 2)
        );
        assert_eq!(
            descriptor_slots(b"([[D)Ljava/lang/Object;").unwrap(),
            (1, 1)
        );
        assert!(descriptor_slots(b"(L)V").is_err());
    }

    #[test]
    fn intrinsic_candidates_are_found_behind_other_annotations() {
        let pool = ConstantPool {
            read: 5,
            entries: vec![
                Constant::Gap,
                Constant::Utf8(Cow::Borrowed(b"RuntimeVisibleAnnotations")),
                Constant::Utf8(Cow::Borrowed(b"Ljava/lang/Deprecated;")),
                Constant::Utf8(Cow::Borrowed(b"since")),
                Constant::Utf8(Cow::Borrowed(INTRINSIC_CANDIDATE[0])),
            ],
        };
        // @Deprecated(since = "9", forRemoval = {nested @Deprecated, 'e' enum}) first, so
        // that finding the second annotation means reading past every kind of value.
        let mut data = vec![0, 2, 0, 2, 0, 2, 0, 3, b's', 0, 3, 0, 3, b'[', 0, 2];
        data.extend_from_slice(&[b'@', 0, 2, 0, 0, b'e', 0, 2, 0, 3]);
        data.extend_from_slice(&[0, 4, 0, 0]);
        let annotated = |data: &[u8]| {
            let attributes = [Attribute {
                name: 1,
                data: Cow::Owned(data.to_vec()),
            }];
            is_intrinsic_candidate(&pool, &attributes)
        };
        assert!(annotated(&data));
        // Only @Deprecated: not a candidate.
        let mut only = data[..data.len() - 4].to_vec();
        only[1] = 1;
        assert!(!annotated(&only));
        // A value cut short reads as no annotation rather than as a wrong one.
        assert!(!annotated(&data[..9]));
    }

    #[test]
    fn modified_utf8_round_trips() {
        for s in ["plain", "nul\0inside", "é ü €", "𝄞 clef"] {
            assert_eq!(decode_modified_utf8(&encode_modified_utf8(s)), s);
        }
        assert_eq!(encode_modified_utf8("\0"), [0xC0, 0x80]);
    }

    #[test]
    fn added_constants_are_shared_not_repeated() {
        let read = vec![
            Constant::Gap,
            Constant::Utf8(Cow::Borrowed(b"Code")),
            Constant::Other(7, Cow::Borrowed(&[0, 1])),
            Constant::Other(5, Cow::Borrowed(&[0; 8])),
            Constant::Gap,
        ];
        let mut pool = ConstantPool {
            read: read.len(),
            entries: read,
        };
        // The class's own constants are not looked at: a second "Code" is legal.
        assert_eq!(pool.add_utf8("Code").unwrap(), 5);
        assert_eq!(pool.add_other(7, vec![0, 1]).unwrap(), 6);
        // Added ones are shared.
        let s = pool.add_utf8("StackMapTable").unwrap();
        assert_eq!(s, 7);
        assert_eq!(pool.add_utf8("StackMapTable").unwrap(), s);
        assert_eq!(pool.add_utf8("Code").unwrap(), 5);
        let m = pool.add_method_ref("T", "enter", "(I)V").unwrap();
        assert_eq!(pool.add_method_ref("T", "enter", "(I)V").unwrap(), m);
        assert_ne!(pool.add_method_ref("T", "exit", "(I)V").unwrap(), m);
        // Keys are not: each method has its own.
        let k = pool.add_integer(42).unwrap();
        assert_ne!(pool.add_integer(42).unwrap(), k);
        // A Utf8 and an Integer with equal bytes are different constants.
        let t = pool.add_utf8("\0\0\0*").unwrap();
        assert_ne!(t, k);
        // T, its Class, enter, (I)V, NameAndType, Methodref, exit, NameAndType, Methodref.
        assert_eq!(pool.entries.len(), 8 + 9 + 3);
    }
}
