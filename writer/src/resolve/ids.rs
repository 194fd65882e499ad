//! Linear IDs, each defined before its first use: classes (after their superclass and
//! interfaces, `java/lang/Object` 0 and `java/lang/Thread` 1), threads, objects.

use super::*;

impl<S: Sink> Resolver<S> {
    pub(super) fn class_id(&mut self, key: ClassKey, ticks: u64) -> io::Result<Option<ClassId>> {
        Ok(self.class_slot(key, ticks)?.and_then(|s| s.id))
    }

    /// Defines a class (after its superclass and interfaces) the first time it is needed.
    pub(super) fn class_slot(
        &mut self,
        key: ClassKey,
        ticks: u64,
    ) -> io::Result<Option<ClassSlot>> {
        if let Some(&slot) = self.classes.get(&key) {
            return Ok(Some(slot));
        }
        let Some(info) = self.symbols.class(key) else {
            return Ok(None);
        };
        let traced = self.config.filter.traces(&info.name);
        // Marked before recursing so that a cyclic description cannot loop.
        let pending = ClassSlot {
            id: None,
            traced,
            methods: 0,
        };
        self.classes.insert(key, pending);
        let superclass = match info.superclass {
            Some(k) => self.class_id(k, ticks)?,
            None => None,
        };
        let mut interfaces = Vec::with_capacity(info.interfaces.len());
        for &k in &info.interfaces {
            if let Some(id) = self.class_id(k, ticks)? {
                interfaces.push(id);
            }
        }
        let Some(id) = self.assign_class_id(&info.name, ticks)? else {
            return Ok(Some(pending));
        };
        self.write_class(id, &info, superclass, interfaces, ticks)?;
        let slot = ClassSlot {
            id: Some(id),
            traced,
            methods: info.methods.len(),
        };
        self.classes.insert(key, slot);
        Ok(Some(slot))
    }

    pub(super) fn assign_class_id(
        &mut self,
        name: &str,
        ticks: u64,
    ) -> io::Result<Option<ClassId>> {
        let reserved = match name {
            "java/lang/Object" => Some(CLASS_OBJECT),
            "java/lang/Thread" => Some(CLASS_THREAD),
            _ => None,
        };
        if let Some(id) = reserved {
            if !self.classes.values().any(|s| s.id == Some(id)) {
                return Ok(Some(id));
            }
        }
        if self.next_class >= self.max_classes {
            self.counts.classes_over_limit += 1;
            if self.counts.classes_over_limit == 1 {
                let text = format!(
                    "more than {} classes: further classes are not traced",
                    self.max_classes
                );
                self.warnings.push(text.clone());
                self.emit(Event::UserEvent {
                    ticks,
                    text: format!("jlive: {}", text),
                })?;
            }
            return Ok(None);
        }
        let id = self.next_class;
        self.next_class += 1;
        Ok(Some(id))
    }

    pub(super) fn write_class(
        &mut self,
        id: ClassId,
        info: &ClassInfo,
        superclass: Option<ClassId>,
        interfaces: Vec<ClassId>,
        ticks: u64,
    ) -> io::Result<()> {
        self.counts.classes += 1;
        self.emit(Event::ClassDefine(Box::new(ClassDef {
            ticks,
            id,
            name: info.name.clone(),
            source_file: info.source_file.clone().unwrap_or_default(),
            superclass,
            interfaces,
            methods: info.methods.clone(),
            fields: info.fields.clone(),
        })))
    }

    /// Object and Thread take IDs 0 and 1 in every file, whatever the registry knows.
    pub(super) fn define_reserved_classes(&mut self, ticks: u64) -> io::Result<()> {
        for (name, id) in [
            ("java/lang/Object", CLASS_OBJECT),
            ("java/lang/Thread", CLASS_THREAD),
        ] {
            if self.classes.values().any(|s| s.id == Some(id)) {
                continue;
            }
            match self.symbols.class_by_name(name) {
                Some(key) => {
                    self.class_slot(key, ticks)?;
                }
                None => {
                    let info = ClassInfo {
                        name: name.to_string(),
                        ..ClassInfo::default()
                    };
                    let superclass = (id != CLASS_OBJECT).then_some(CLASS_OBJECT);
                    self.write_class(id, &info, superclass, Vec::new(), ticks)?;
                    self.classes.insert(
                        u32::MAX - id,
                        ClassSlot {
                            id: Some(id),
                            traced: true,
                            methods: 0,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// The ID of a thread, defined the first time.
    pub(super) fn thread_id(&mut self, key: ThreadKey, ticks: u64) -> io::Result<ThreadId> {
        if let Some(id) = self.state(key).id {
            return Ok(id);
        }
        let id = self.next_thread;
        self.next_thread += 1;
        self.counts.threads += 1;
        self.state(key).id = Some(id);
        let info = self.symbols.thread(key).unwrap_or_else(|| ThreadInfo {
            name: format!("thread-{}", key),
            ..ThreadInfo::default()
        });
        if info.hash != 0 {
            self.thread_hashes.insert(info.hash, id);
        }
        self.emit(Event::ThreadDefine(Box::new(ThreadDef {
            ticks,
            id,
            name: info.name,
            hash: info.hash,
            group: info.group,
            parent: info.parent,
        })))?;
        Ok(id)
    }

    pub(super) fn object_defined(&self, object: u32) -> bool {
        self.objects.contains_key(&object)
    }

    /// The definition of an object new to this file (its class, and an array's element,
    /// defined first), marked as defined; None when it is defined already, or its class is
    /// unknown or not traced.
    pub(super) fn object_def(
        &mut self,
        object: u32,
        class: ClassKey,
        length: u32,
        ticks: u64,
    ) -> io::Result<Option<ObjectDef>> {
        if object == NO_OBJECT || object == 0 || self.object_defined(object) {
            return Ok(None);
        }
        let Some(info) = self.symbols.class(class) else {
            return Ok(None);
        };
        let Some(class_id) = self.class_id(class, ticks)? else {
            return Ok(None);
        };
        let element = match info.array {
            None => None,
            Some(ArrayKind::Primitive(d)) => Some(Element::Primitive(d)),
            Some(ArrayKind::Objects(e)) => Some(Element::Class(
                self.class_id(e, ticks)?.unwrap_or(CLASS_OBJECT),
            )),
        };
        self.objects.insert(object, class);
        Ok(Some(ObjectDef {
            ticks,
            object,
            class: class_id,
            array: element.map(|element| ArrayDef {
                length: if length == NOT_ARRAY { 0 } else { length },
                element,
            }),
        }))
    }

    pub(super) fn object_alloc(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let Some(object) = self.object_def(r.arg, r.key as ClassKey, r.extra, r.ticks)? else {
            return Ok(());
        };
        let thread = self.thread_id(thread, r.ticks)?;
        self.emit(Event::Alloc { thread, object })
    }

    pub(super) fn object_free(&mut self, r: &Record) -> io::Result<()> {
        if !self.object_defined(r.arg) {
            return Ok(());
        }
        self.objects.remove(&r.arg);
        self.emit(Event::Free {
            ticks: r.ticks,
            object: r.arg,
        })
    }
}
