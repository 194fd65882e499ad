//! What the writer learns of the JVM's classes, methods and threads: the agent's registry,
//! seen through [`Symbols`], in the agent's keys.

use super::{ClassKey, MethodKey, ThreadKey};
use std::sync::Arc;

/// JVM access flags the formats look at.
pub mod access {
    pub const STATIC: u16 = 0x0008;
    pub const SYNCHRONIZED: u16 = 0x0020;
    pub const NATIVE: u16 = 0x0100;
    pub const ABSTRACT: u16 = 0x0400;
}

/// A line-number table entry: the line of the code from bytecode index `start` on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Line {
    pub start: u32,
    pub line: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodDef {
    pub name: String,
    pub signature: String,
    /// JVM access flags (`ACC_STATIC` 0x0008, `ACC_NATIVE` 0x0100, ...).
    pub access: u16,
    /// Empty when the format or the JVM gave none.
    pub lines: Vec<Line>,
}

impl MethodDef {
    /// The first and last source lines of the method (0, 0 without a line table).
    pub fn line_range(&self) -> (u32, u32) {
        let lines = self.lines.iter().map(|l| l.line);
        (lines.clone().min().unwrap_or(0), lines.max().unwrap_or(0))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldDef {
    pub name: String,
    pub signature: String,
    pub access: u16,
}

impl MethodDef {
    /// The source line of bytecode index `location` (0 without a line table).
    pub fn line_at(&self, location: i64) -> u32 {
        let at = u32::try_from(location).ok();
        self.lines
            .iter()
            .filter(|l| at.is_some_and(|a| l.start <= a))
            .max_by_key(|l| l.start)
            .map_or(0, |l| l.line)
    }
}

/// A class as the JVM describes it, in the agent's keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassInfo {
    /// Internal form: `java/lang/String`, `[I`, `[Ljava/lang/String;`.
    pub name: String,
    /// In class-file order; a method's index here is its [`MethodRef::index`].
    pub methods: Vec<MethodDef>,
    pub fields: Vec<FieldDef>,
    pub superclass: Option<ClassKey>,
    pub interfaces: Vec<ClassKey>,
    pub source_file: Option<String>,
    pub array: Option<ArrayKind>,
}

/// What an array class holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayKind {
    /// A primitive array, by its JVM descriptor character (`I`, `J`, `Z`, ...).
    Primitive(u8),
    /// An array of references to this element class.
    Objects(ClassKey),
}

/// A thread as the JVM describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    pub name: String,
    /// The thread object's identity hash code (0 when unknown).
    pub hash: u32,
    /// Its thread group's name and that group's parent's (empty when unknown).
    pub group: String,
    pub parent: String,
}

/// Where a method lives: its class and its index in the class's method list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodRef {
    pub class: ClassKey,
    pub index: u16,
}

/// The writer's view of the agent's registry. Lookups may take a lock; the writer caches.
pub trait Symbols: Send + Sync {
    fn method(&self, key: MethodKey) -> Option<MethodRef>;
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>>;
    fn class_by_name(&self, name: &str) -> Option<ClassKey>;
    fn thread(&self, key: ThreadKey) -> Option<ThreadInfo>;
    /// A thread ended and was written: the writer will not ask for it again (what keeps the
    /// registry of 100,000 short-lived virtual threads bounded).
    fn thread_ended(&self, _key: ThreadKey) {}
}
