//! Where a JVM class becomes a registry entry: name, methods in class-file order, fields,
//! superclass, interfaces, source file, array element. A registered class carries a JVMTI
//! tag with [`CLASS_TAG`] set and its key in the low bits, so a second lookup costs one
//! GetTag and object tags (plain IDs) never collide with class tags.

use super::registry::Registry;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{self, Jvmti};
use jlive_jvm::refs::{Class, Ref};
use jlive_writer::model::{FieldDef, Line, MethodDef};
use jlive_writer::record::{ArrayKind, ClassInfo, ClassKey, MethodKey};

/// Tag bit marking a class object.
pub const CLASS_TAG: i64 = 1 << 62;

/// Looks classes up and registers them on one JVM thread.
pub struct Classes<'a, 'cb> {
    pub jvmti: Jvmti,
    pub jni: Jni<'cb>,
    pub registry: &'a Registry,
}

impl<'a> Classes<'a, '_> {
    /// The same, for a nested frame's env.
    fn within<'f>(&self, jni: Jni<'f>) -> Classes<'a, 'f> {
        Classes {
            jvmti: self.jvmti,
            jni,
            registry: self.registry,
        }
    }

    /// The key of a class, registering it (after its superclass and interfaces) if needed.
    pub fn key(&self, class: &Class<'_>) -> Option<ClassKey> {
        if let Some(key) = self.tagged(class) {
            return Some(key);
        }
        let _serial = self.registry.register.lock();
        if let Some(key) = self.tagged(class) {
            return Some(key);
        }
        let key = self.registry.new_class_key();
        // Described before it is tagged: another thread that finds the tag also finds the
        // description. The class graph (superclass, interfaces, element) has no cycles.
        self.describe_into(class, key);
        self.jvmti.set_tag(class, CLASS_TAG | i64::from(key)).ok()?;
        Some(key)
    }

    /// ClassPrepare: registers the class, or fills in the methods of a class that was
    /// registered before it was prepared (an array's element class, for instance).
    pub fn prepared(&self, class: &Class<'_>) -> Option<ClassKey> {
        let key = self.key(class)?;
        if !self.registry.has_methods(key) {
            let _serial = self.registry.register.lock();
            self.describe_into(class, key);
        }
        Some(key)
    }

    /// ClassPrepare when classes register lazily ([`crate::options::Options::registers_lazily`]):
    /// only java/lang/Thread's subclasses are registered here (the concurrency hooks ask the
    /// registry whether a class inherits Thread's sleep); others when a record needs them.
    pub fn prepared_lazily(&self, class: &Class<'_>) -> Option<ClassKey> {
        let thread = self
            .registry
            .thread_class
            .get()
            .and_then(|t| t.as_slice().first());
        // Registered before it was prepared (as an interface of a Thread subclass, say): its
        // methods are filled in now.
        let described = self
            .tagged(class)
            .is_none_or(|k| self.registry.has_methods(k));
        match thread {
            Some(thread) if described && !self.extends(class, thread) => None,
            // Before VM init has found Thread: registered, as without laziness.
            _ => self.prepared(class),
        }
    }

    /// The first burst of a JVM that registered lazily: registers the prepared classes (and
    /// arrays) of `loaded`; a class registered before it was prepared (by a heap walk, say)
    /// gets its methods now.
    pub fn register_prepared(&self, loaded: &[Class<'_>]) {
        for class in loaded {
            let status = self.jvmti.class_status(class).unwrap_or(0);
            if status & jvmti::CLASS_STATUS_PRIMITIVE != 0 {
                continue;
            }
            if status & jvmti::CLASS_STATUS_ARRAY != 0 {
                self.key(class);
            } else if status & jvmti::CLASS_STATUS_PREPARED != 0 {
                self.prepared(class);
            }
        }
    }

    /// VM init with lazy registration: registers java/lang/Object, java/lang/Thread and the
    /// loaded subclasses of Thread, and keeps Thread for [`Classes::prepared_lazily`].
    pub fn register_threads(&self, loaded: &[Class<'_>]) {
        let named = |wanted: &str| {
            loaded
                .iter()
                .find(|c| self.jvmti.class_signature(*c).is_ok_and(|s| s == wanted))
        };
        if let Some(object) = named("Ljava/lang/Object;") {
            self.key(object);
        }
        let Some(thread) = named("Ljava/lang/Thread;") else {
            return;
        };
        for class in loaded {
            let frame = self.jni.local_frame(8);
            let inner = self.within(frame.jni());
            let status = self.jvmti.class_status(class).unwrap_or(0);
            if status & jvmti::CLASS_STATUS_PREPARED == 0 {
                continue; // registered when it is prepared
            }
            if inner.jni.is_same_object(class, thread) || inner.extends(class, thread) {
                inner.key(class);
            }
        }
        let _ = self
            .registry
            .thread_class
            .set(self.jni.global_classes(std::slice::from_ref(thread)));
    }

    /// Whether `class` is a subclass of `ancestor` (a local frame must be open: each
    /// superclass is a local reference).
    fn extends(&self, class: &Class<'_>, ancestor: &impl Ref) -> bool {
        let mut at = self.jni.superclass(class);
        for _ in 0..64 {
            let Some(s) = at else {
                return false;
            };
            if self.jni.is_same_object(&s, ancestor) {
                return true;
            }
            at = self.jni.superclass(&s);
        }
        false
    }

    fn tagged(&self, class: &Class<'_>) -> Option<ClassKey> {
        let tag = self.jvmti.tag(class).ok()?;
        (tag & CLASS_TAG != 0).then_some((tag & 0xFFFF_FFFF) as ClassKey)
    }

    fn describe_into(&self, class: &Class<'_>, key: ClassKey) {
        let frame = self.jni.local_frame(16);
        let this = self.within(frame.jni());
        this.describe(class, key);
    }

    fn describe(&self, class: &Class<'_>, key: ClassKey) {
        let Ok(signature) = self.jvmti.class_signature(class) else {
            return;
        };
        let name = internal_name(&signature);
        let status = self.jvmti.class_status(class).unwrap_or(0);
        let array = signature.starts_with('[');
        let prepared = status & jvmti::CLASS_STATUS_PREPARED != 0;
        let mut info = ClassInfo {
            name,
            superclass: self.jni.superclass(class).and_then(|s| self.key(&s)),
            source_file: self.jvmti.source_file_name(class),
            ..ClassInfo::default()
        };
        for interface in self
            .jvmti
            .implemented_interfaces(self.jni, class)
            .unwrap_or_default()
        {
            if let Some(k) = self.key(&interface) {
                info.interfaces.push(k);
            }
        }
        let mut method_keys: Vec<MethodKey> = Vec::new();
        if array {
            info.array = self.array_kind(class, &signature);
        } else if prepared {
            let lines = self.registry.wants_line_numbers();
            for m in self.jvmti.class_methods(class).unwrap_or_default() {
                let (name, signature) = self.jvmti.method_name(m).unwrap_or_default();
                let access = self.jvmti.method_modifiers(m).unwrap_or(0) as u16;
                let lines = if lines {
                    let table = self.jvmti.line_numbers(m).into_iter();
                    table.map(|(start, line)| Line { start, line }).collect()
                } else {
                    Vec::new()
                };
                info.methods.push(MethodDef {
                    name,
                    signature,
                    access,
                    lines,
                });
                method_keys.push(m.key() as MethodKey);
            }
            for f in self.jvmti.class_fields(class).unwrap_or_default() {
                let (name, signature) = self.jvmti.field_name(class, f).unwrap_or_default();
                let access = self.jvmti.field_modifiers(class, f).unwrap_or(0) as u16;
                info.fields.push(FieldDef {
                    name,
                    signature,
                    access,
                });
            }
        }
        self.registry.put_class(key, info, &method_keys);
    }

    fn array_kind(&self, class: &Class<'_>, signature: &str) -> Option<ArrayKind> {
        let element = signature.as_bytes().get(1).copied()?;
        if element == b'L' || element == b'[' {
            let component = self.jni.component_type(class)?;
            Some(ArrayKind::Objects(self.key(&component)?))
        } else {
            Some(ArrayKind::Primitive(element))
        }
    }

    /// Whether a registered class is an array class.
    pub fn is_array(&self, key: ClassKey) -> bool {
        use jlive_writer::record::Symbols;
        self.registry.class(key).is_some_and(|c| c.array.is_some())
    }
}

/// Runs `f` over the classes loaded so far. Their local references (one per class) live in a
/// frame of their own, popped when `f` returns: HotSpot runs callbacks (class loads) inside
/// the callback that asks, and -Xcheck:jni counts the references of the frames below a
/// callback's own against its capacity.
pub fn with_loaded_classes<R>(
    jvmti: Jvmti,
    jni: Jni<'_>,
    f: impl for<'f> FnOnce(Jni<'f>, Vec<Class<'f>>) -> R,
) -> R {
    let frame = jni.local_frame(16);
    let jni = frame.jni();
    let loaded = jvmti.loaded_classes(jni).unwrap_or_default();
    jni.ensure_local_capacity(loaded.len());
    f(jni, loaded)
}

/// `Ljava/lang/String;` → `java/lang/String`; array and primitive signatures stay as they are.
pub fn internal_name(signature: &str) -> String {
    match signature
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
    {
        Some(name) => name.to_string(),
        None => signature.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn internal_names() {
        assert_eq!(
            super::internal_name("Ljava/lang/Object;"),
            "java/lang/Object"
        );
        assert_eq!(super::internal_name("[I"), "[I");
        assert_eq!(
            super::internal_name("[Ljava/lang/String;"),
            "[Ljava/lang/String;"
        );
    }
}
