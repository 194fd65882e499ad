//! The Java APIs jlive calls (System properties, the collectors' counts, Runtime) and string
//! conversions, through the `jni` crate: none of them is on a hot path, and jni-rs checks
//! each call against its signature (checked at compile time by `jni_sig!`) and converts
//! strings to and from modified UTF-8.

use super::Jni;
use crate::refs::{JString, Ref};
use jni::objects::{JObject, JString as RsString};
use jni::{jni_sig, jni_str, JValue, Outcome};
use jni_sys::jint;

impl<'l> Jni<'l> {
    /// Runs `f` with jni-rs's `Env` for this thread, in a local frame that frees what it
    /// makes; None when it fails, throws (the exception is cleared) or panics.
    fn with_jni_rs<T>(
        &self,
        capacity: jint,
        f: impl FnOnce(&mut jni::Env<'_>) -> jni::errors::Result<T>,
    ) -> Option<T> {
        let frame = self.local_frame(capacity);
        let jni = frame.jni();
        // SAFETY: env is this thread's live JNIEnv (jni-sys 0.3 and 0.4, which jni-rs uses,
        // declare the same table); what jni-rs makes with it lives in the
        // frame just pushed, and nothing it makes leaves this call.
        let mut env = unsafe { jni::EnvUnowned::from_raw(jni.env().cast()) };
        let outcome = env.with_env(f).into_outcome();
        jni.clear_exception();
        match outcome {
            Outcome::Ok(t) => Some(t),
            Outcome::Err(_) | Outcome::Panic(_) => None,
        }
    }

    /// The text of a Java string.
    pub fn string(&self, s: &JString<'_>) -> Option<String> {
        let raw = s.as_raw();
        self.with_jni_rs(2, |env| {
            // SAFETY: raw is a live java.lang.String reference (a JString's promise), used
            // only inside this call.
            let s = unsafe { RsString::from_raw(env, raw) };
            // jni-rs's JString deletes nothing when dropped: the reference stays the caller's.
            s.try_to_string(env)
        })
    }

    /// A new Java string (a local reference of this frame; None if it cannot be made).
    pub fn new_string(&self, text: &str) -> Option<JString<'l>> {
        self.here();
        // SAFETY: env is this thread's live JNIEnv; the string it makes is a local reference
        // of the innermost frame (`here`), which is `'l`'s, handed over as raw below.
        let mut env = unsafe { jni::EnvUnowned::from_raw(self.env().cast()) };
        let made = env
            .with_env(|env| RsString::from_str(env, text).map(|s| s.into_raw()))
            .into_outcome();
        self.clear_exception();
        match made {
            // SAFETY: NewStringUTF made it, a String of the innermost frame.
            Outcome::Ok(raw) => unsafe { JString::from_raw(raw) },
            Outcome::Err(_) | Outcome::Panic(_) => None,
        }
    }

    /// `System.setProperty(key, value)`, or `System.clearProperty(key)` for None; false if
    /// it failed.
    pub fn set_system_property(&self, key: &str, value: Option<&str>) -> bool {
        self.with_jni_rs(4, |env| {
            let k = RsString::from_str(env, key)?;
            let system = jni_str!("java/lang/System");
            match value {
                Some(v) => {
                    let v = RsString::from_str(env, v)?;
                    env.call_static_method(
                        system,
                        jni_str!("setProperty"),
                        jni_sig!((key: JString, value: JString) -> JString),
                        &[JValue::Object(&k), JValue::Object(&v)],
                    )?;
                }
                None => {
                    env.call_static_method(
                        system,
                        jni_str!("clearProperty"),
                        jni_sig!((key: JString) -> JString),
                        &[JValue::Object(&k)],
                    )?;
                }
            }
            Ok(())
        })
        .is_some()
    }

    /// Each garbage collector's name and collection count
    /// (`ManagementFactory.getGarbageCollectorMXBeans()`); empty if any call fails.
    pub fn collection_counts(&self) -> Vec<(String, i64)> {
        self.with_jni_rs(16, |env| {
            let beans = env
                .call_static_method(
                    jni_str!("java/lang/management/ManagementFactory"),
                    jni_str!("getGarbageCollectorMXBeans"),
                    jni_sig!(() -> java.util.List),
                    &[],
                )?
                .l()?;
            let n = env
                .call_method(&beans, jni_str!("size"), jni_sig!(() -> jint), &[])?
                .i()?;
            let mut out = Vec::new();
            for i in 0..n.clamp(0, 64) {
                let bean = env
                    .call_method(
                        &beans,
                        jni_str!("get"),
                        jni_sig!((index: jint) -> java.lang.Object),
                        &[JValue::Int(i)],
                    )?
                    .l()?;
                let name = env
                    .call_method(
                        &bean,
                        jni_str!("getName"),
                        jni_sig!(() -> java.lang.String),
                        &[],
                    )?
                    .l()?;
                let name = env.cast_local::<RsString>(name)?;
                let count = env
                    .call_method(
                        &bean,
                        jni_str!("getCollectionCount"),
                        jni_sig!(() -> jlong),
                        &[],
                    )?
                    .j()?;
                out.push((name.try_to_string(env)?, count));
                env.delete_local_ref(name);
                env.delete_local_ref(bean);
            }
            Ok(out)
        })
        .unwrap_or_default()
    }

    /// `Runtime.getRuntime()`.
    fn runtime<'e>(env: &mut jni::Env<'e>) -> jni::errors::Result<JObject<'e>> {
        env.call_static_method(
            jni_str!("java/lang/Runtime"),
            jni_str!("getRuntime"),
            jni_sig!(() -> java.lang.Runtime),
            &[],
        )?
        .l()
    }

    /// `Runtime.getRuntime()`'s (totalMemory(), freeMemory()), in bytes.
    pub fn heap_memory(&self) -> Option<(i64, i64)> {
        self.with_jni_rs(4, |env| {
            let r = Self::runtime(env)?;
            let total = env
                .call_method(&r, jni_str!("totalMemory"), jni_sig!(() -> jlong), &[])?
                .j()?;
            let free = env
                .call_method(&r, jni_str!("freeMemory"), jni_sig!(() -> jlong), &[])?
                .j()?;
            Ok((total, free))
        })
    }

    /// `Runtime.getRuntime().halt(code)`: the JVM posts VM death and exits at once, without
    /// running shutdown hooks. Returns only if the call could not be made.
    pub fn halt(&self, code: jint) {
        self.with_jni_rs(4, |env| {
            let r = Self::runtime(env)?;
            env.call_method(
                &r,
                jni_str!("halt"),
                jni_sig!((status: jint) -> void),
                &[JValue::Int(code)],
            )?;
            Ok(())
        });
    }
}
