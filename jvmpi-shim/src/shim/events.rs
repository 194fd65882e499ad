//! Events built from JVMTI callbacks, requests for the defining events, raw monitors.

use super::*;
use crate::abi::{self, event, Event, EventData};
use crate::ffi;
use crate::monitor::RawMonitor;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{self, ACC_STATIC};
use jlive_jvm::refs::{Class, Local, MethodId, Ref};
use jni_sys::{jint, jlong, JNIEnv};
use std::ffi::{c_void, CString};
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Shim {
    /// Hands one event to the agent.
    pub fn send(&self, env: *mut JNIEnv, event_type: jint, u: EventData) {
        let mut e = Event {
            event_type,
            env_id: env,
            u,
        };
        ffi::deliver(&mut e);
    }

    pub(super) fn arena_new(&self, env: Option<*mut JNIEnv>) {
        self.send(
            env.unwrap_or(ptr::null_mut()),
            event::ARENA_NEW,
            EventData {
                new_arena: abi::NewArena {
                    arena_id: ARENA,
                    arena_name: ARENA_NAME.as_ptr(),
                },
            },
        );
    }

    /// VMInit: the thread that delivers GC events starts, classes loaded before now get their
    /// CLASS_LOAD, then JVM_INIT_DONE.
    pub fn vm_init(&'static self, jni: Jni<'_>) {
        self.live.store(true, Ordering::Release);
        self.thread(jni);
        if self.on(event::ARENA_NEW) {
            self.arena_new(Some(jni.raw()));
        }
        if self.on(event::CLASS_LOAD) {
            for class in self.jvmti.loaded_classes(jni).unwrap_or_default() {
                let prepared = self.jvmti.class_status(&class).is_ok_and(|s| {
                    s & (jvmti::CLASS_STATUS_PREPARED | jvmti::CLASS_STATUS_ARRAY) != 0
                });
                let primitive = self
                    .jvmti
                    .class_status(&class)
                    .is_ok_and(|s| s & jvmti::CLASS_STATUS_PRIMITIVE != 0);
                if prepared && !primitive {
                    self.class_id(jni, &class);
                }
                jni.delete_local(class);
            }
        }
        if self.on(event::COMPILED_METHOD_LOAD) {
            let _ = self
                .jvmti
                .generate_events(jvmti::EVENT_COMPILED_METHOD_LOAD);
        }
        if self.on(event::OBJECT_ALLOC) {
            self.retire_tlabs();
        }
        let vm = self.vm;
        self.gc.lock().running = true;
        let spawned = std::thread::Builder::new()
            .name("jlive JVMPI GC".into())
            .spawn(move || {
                OWN.with(|o| o.set(true));
                let ran = vm
                    .attach_daemon(c"jlive JVMPI GC")
                    .and_then(|attached| attached.with(|jni| self.gc_thread(jni)));
                if ran.is_none() {
                    self.gc.lock().running = false;
                    self.gc_delivered.notify_all();
                }
            });
        if spawned.is_err() {
            self.gc.lock().running = false;
        }
        if self.on(event::JVM_INIT_DONE) {
            self.send(
                jni.raw(),
                event::JVM_INIT_DONE,
                EventData {
                    id: ptr::null_mut(),
                },
            );
        }
        if let Some((init, _)) = crate::vm_hooks() {
            init();
        }
    }

    /// SampledObjectAlloc at interval 0 samples every allocation only once a thread's
    /// allocation buffer was refilled after the interval was set: a collection retires every
    /// buffer, so that from here on no allocation goes unseen.
    pub(super) fn retire_tlabs(&self) {
        let _ = self.jvmti.force_garbage_collection();
    }

    /// VMDeath: the GC thread stops (after the batch it may be delivering), what it left is
    /// delivered here, then JVM_SHUT_DOWN: no GC event reaches the agent after it.
    pub fn vm_death(&self, jni: Jni<'_>) {
        self.dead.store(true, Ordering::Release);
        self.gc_signal.notify_all();
        // The host's control thread first: no `jlive ctl dump` after this.
        if let Some((_, death)) = crate::vm_hooks() {
            death();
        }
        self.wait_gc(Duration::from_secs(10), |q| {
            !q.running && q.reserved == 0 && !q.delivering
        });
        if self.gc_events() {
            if let Some(freed) = self.claim_batch(true) {
                self.deliver_claimed(jni, freed);
            }
        }
        if self.on(event::JVM_SHUT_DOWN) {
            self.thread(jni);
            self.send(
                jni.raw(),
                event::JVM_SHUT_DOWN,
                EventData {
                    id: ptr::null_mut(),
                },
            );
        }
    }

    /// DATA_DUMP_REQUEST (or DATA_RESET_REQUEST) on the calling thread, asked from outside.
    pub fn data_request(&self, dump: bool) -> Result<String, String> {
        let ev = if dump {
            event::DATA_DUMP_REQUEST
        } else {
            event::DATA_RESET_REQUEST
        };
        let name = if dump {
            "DATA_DUMP_REQUEST"
        } else {
            "DATA_RESET_REQUEST"
        };
        if !self.is_live() {
            return Err("the JVM is not running (or is shutting down)".into());
        }
        if !self.on(ev) {
            return Err(format!("the agent has not enabled {}", name));
        }
        self.vm
            .with_current(|jni| {
                self.thread(jni);
                self.send(
                    jni.raw(),
                    ev,
                    EventData {
                        id: ptr::null_mut(),
                    },
                );
            })
            .ok_or("this thread is not attached to the JVM")?;
        Ok(format!("{} sent", name))
    }

    pub fn method(&self, jni: Jni<'_>, thread: &Local<'_>, method: MethodId, entry: bool) {
        if Self::own_thread() {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        let ev = if entry {
            event::METHOD_ENTRY
        } else {
            event::METHOD_EXIT
        };
        if self.on(ev) {
            let id = method.as_raw() as *mut c_void;
            self.send(jni.raw(), ev, EventData { id });
        }
        if !entry {
            return;
        }
        if self.on(event::METHOD_ENTRY2) {
            let receiver = if self.jvmti.method_modifiers(method).unwrap_or(0) & ACC_STATIC != 0 {
                0
            } else {
                match self.jvmti.local_instance(jni, thread, 0) {
                    Some(o) => {
                        let id = self.object_id(&o);
                        jni.delete_local(o);
                        id
                    }
                    None => 0,
                }
            };
            self.send(
                jni.raw(),
                event::METHOD_ENTRY2,
                EventData {
                    method_entry2: abi::MethodEntry2 {
                        method_id: method.as_raw(),
                        obj_id: id_ptr(receiver),
                    },
                },
            );
        }
    }

    pub fn class_prepare(&self, jni: Jni<'_>, class: &Class<'_>) {
        if Self::own_thread() {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        self.class_id(jni, class);
    }

    /// What OBJECT_ALLOC says of an object of `class`: (is_array, class_id).
    pub(crate) fn kind_of(&self, jni: Jni<'_>, class: &Class<'_>) -> (jint, u64) {
        let id = self.class_id(jni, class);
        if let Some(k) = self.kinds.lock().get(&id) {
            return *k;
        }
        let signature = self.jvmti.class_signature(class).unwrap_or_default();
        let kind = array_kind(&signature);
        let class_id = match kind {
            abi::NORMAL_OBJECT if signature == "Ljava/lang/Class;" => 0,
            abi::NORMAL_OBJECT => id,
            abi::CLASS => match jni.component_type(class) {
                Some(c) => {
                    let e = self.class_id(jni, &c);
                    jni.delete_local(c);
                    e
                }
                None => 0,
            },
            _ => 0,
        };
        self.kinds.lock().insert(id, (kind, class_id));
        (kind, class_id)
    }

    /// OBJECT_ALLOC for a new object, or one the agent asked about (`requested`).
    pub fn object_alloc(
        &self,
        jni: Jni<'_>,
        object: &Local<'_>,
        class: &Class<'_>,
        size: jlong,
        requested: jint,
    ) {
        if Self::own_thread() {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        let (kind, class_id) = self.kind_of(jni, class);
        let tag = self.object_tag(object);
        let id = (tag & !7) as u64;
        if requested == 0 {
            if tag & ALLOCATED != 0 {
                return;
            }
            let _ = self.jvmti.set_tag(object, tag | ALLOCATED);
            self.known_objects.fetch_add(1, Ordering::Relaxed);
        }
        self.send(
            jni.raw(),
            event::OBJECT_ALLOC | requested,
            EventData {
                obj_alloc: abi::ObjAlloc {
                    arena_id: ARENA,
                    class_id: id_ptr(class_id),
                    is_array: kind,
                    size: size.clamp(0, i64::from(jint::MAX)) as jint,
                    obj_id: id_ptr(id),
                },
            },
        );
    }

    pub fn monitor_event(
        &self,
        jni: Jni<'_>,
        ev: jint,
        object: &Local<'_>,
        timeout: Option<jlong>,
    ) {
        if Self::own_thread() || !self.on(ev) {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        let id = self.object_id(object);
        let u = match ev {
            event::MONITOR_WAIT => {
                WAIT_BEGAN.with(|w| w.set(Some(Instant::now())));
                self.waiting.lock().insert(jni.raw() as usize, id);
                EventData {
                    monitor_wait: abi::MonitorWait {
                        object: id_ptr(id),
                        timeout: timeout.unwrap_or(0),
                    },
                }
            }
            event::MONITOR_WAITED => {
                self.waiting.lock().remove(&(jni.raw() as usize));
                let waited = WAIT_BEGAN
                    .with(|w| w.take())
                    .map_or(0, |t| t.elapsed().as_millis() as jlong);
                EventData {
                    monitor_wait: abi::MonitorWait {
                        object: id_ptr(id),
                        timeout: waited,
                    },
                }
            }
            _ => EventData { id: id_ptr(id) },
        };
        self.send(jni.raw(), ev, u);
    }

    /// JNI_(WEAK_)GLOBALREF_ALLOC and _FREE for a reference the program or the agent made or
    /// deletes (the reference is still valid here).
    pub fn global_ref(&self, jni: Jni<'_>, ev: jint, reference: &impl Ref) {
        if !self.on(ev) || Self::own_thread() {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        let u = match ev {
            event::JNI_GLOBALREF_ALLOC | event::JNI_WEAK_GLOBALREF_ALLOC => EventData {
                globalref_alloc: abi::GlobalRefAlloc {
                    obj_id: id_ptr(self.object_id(reference)),
                    ref_id: reference.as_raw(),
                },
            },
            _ => EventData {
                id: reference.as_raw() as *mut c_void,
            },
        };
        self.send(jni.raw(), ev, u);
    }

    /// RequestEvent for CLASS_LOAD, THREAD_START and OBJECT_ALLOC (the defining events).
    pub fn request(&self, jni: Jni<'_>, ev: jint, id: u64) -> jint {
        let frame = jni.local_frame(16);
        let jni = frame.jni();
        match ev {
            event::CLASS_LOAD => {
                let Some(object) = self.object_of(jni, id) else {
                    return abi::FAIL;
                };
                // A class's ID is a tag with the class bit, and only a class carries it.
                let Ok(class) = jni.as_class(object) else {
                    return abi::FAIL;
                };
                let id = self.class_id(jni, &class);
                match self.class_load_data(jni, &class, id) {
                    Some(data) => {
                        self.send(
                            jni.raw(),
                            event::CLASS_LOAD | abi::REQUESTED_EVENT,
                            data.event(),
                        );
                        abi::SUCCESS
                    }
                    None => abi::FAIL,
                }
            }
            event::THREAD_START => match self.slot_by_id(id) {
                Some(slot) => {
                    self.send_thread_start(jni, &slot, abi::REQUESTED_EVENT);
                    abi::SUCCESS
                }
                None => abi::FAIL,
            },
            event::OBJECT_ALLOC => {
                let Some(object) = self.object_of(jni, id) else {
                    return abi::FAIL;
                };
                let Some(class) = jni.object_class(&object) else {
                    return abi::FAIL;
                };
                let size = self.jvmti.object_size(&object).unwrap_or(0);
                self.object_alloc(jni, &object, &class, size, abi::REQUESTED_EVENT);
                abi::SUCCESS
            }
            _ => abi::NOT_AVAILABLE,
        }
    }

    pub fn raw_monitor_create(&self, name: CString) -> Arc<RawMonitor> {
        let m = Arc::new(RawMonitor::new(name));
        self.monitors.lock().push(m.clone());
        m
    }

    /// A destroyed monitor leaves the live list but is never freed, so that its address
    /// cannot come back as another monitor's while the agent may still hold the old handle.
    pub fn raw_monitor_destroy(&self, m: *const RawMonitor) {
        let mut live = self.monitors.lock();
        if let Some(i) = live.iter().position(|x| Arc::as_ptr(x) == m) {
            let gone = live.swap_remove(i);
            self.destroyed.lock().push(gone);
        }
    }

    /// The live raw monitor at this address, if the agent's pointer is one of ours.
    pub fn raw_monitor(&self, m: *const RawMonitor) -> Option<Arc<RawMonitor>> {
        self.monitors
            .lock()
            .iter()
            .find(|x| Arc::as_ptr(x) == m)
            .cloned()
    }

    pub fn raw_monitor_contention(&self, m: &RawMonitor, ev: jint) {
        if !m.reported() || !self.on(ev) {
            return;
        }
        let env = self.vm.current_env_id().unwrap_or(ptr::null_mut());
        self.send(
            env,
            ev,
            EventData {
                raw_monitor: abi::RawMonitorEvent {
                    name: m.name.as_ptr(),
                    id: m as *const RawMonitor as *mut c_void,
                },
            },
        );
    }
}
