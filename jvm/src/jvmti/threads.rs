//! Threads: names and groups, states, CPU time, the agent's word per thread, stacks and
//! their local variables, monitors.

use super::{jthread, Jvmti, Result};
use crate::jni::Jni;
use crate::refs::{Local, MethodId, Ref};
use jni_sys::{jint, jlong, jobject};
use std::ffi::{c_char, c_void};
use std::ptr;

impl Jvmti {
    /// A thread's name and its thread group (a local reference of `jni`'s frame; None for a
    /// thread that has ended).
    pub fn thread_info<'l>(
        &self,
        jni: Jni<'l>,
        thread: &impl Ref,
    ) -> Result<(String, Option<Local<'l>>)> {
        let mut info = ThreadInfo::default();
        call!(
            self,
            9,
            (jthread, *mut ThreadInfo),
            thread.as_raw(),
            &mut info
        )?;
        if let Some(loader) = jni.adopt(info.context_class_loader) {
            jni.delete_local(loader);
        }
        Ok((self.take_string(info.name), jni.adopt(info.thread_group)))
    }

    /// A thread group's name and its parent group (a local reference of `jni`'s frame; None
    /// for the top group).
    pub fn thread_group_info<'l>(
        &self,
        jni: Jni<'l>,
        group: &impl Ref,
    ) -> Result<(String, Option<Local<'l>>)> {
        let mut info = ThreadGroupInfo {
            parent: ptr::null_mut(),
            name: ptr::null_mut(),
            max_priority: 0,
            is_daemon: 0,
        };
        call!(
            self,
            14,
            (jobject, *mut ThreadGroupInfo),
            group.as_raw(),
            &mut info
        )?;
        Ok((self.take_string(info.name), jni.adopt(info.parent)))
    }

    /// A thread's name, priority and thread group's name.
    pub fn thread_details(
        &self,
        jni: Jni<'_>,
        thread: &impl Ref,
    ) -> Result<(String, jint, String)> {
        self.details(jni, thread.as_raw())
    }

    /// The calling thread's name, priority and thread group's name.
    pub fn current_thread_details(&self, jni: Jni<'_>) -> Result<(String, jint, String)> {
        self.details(jni, ptr::null_mut())
    }

    /// GetThreadInfo of `thread` (null: the current thread), its group's name asked too.
    fn details(&self, jni: Jni<'_>, thread: jthread) -> Result<(String, jint, String)> {
        let frame = jni.local_frame(4);
        let jni = frame.jni();
        let mut info = ThreadInfo::default();
        call!(self, 9, (jthread, *mut ThreadInfo), thread, &mut info)?;
        let name = self.take_string(info.name);
        let _loader = jni.adopt(info.context_class_loader);
        let group = match jni.adopt(info.thread_group) {
            None => String::new(),
            Some(g) => self
                .thread_group_info(jni, &g)
                .map(|(n, _)| n)
                .unwrap_or_default(),
        };
        Ok((name, info.priority, group))
    }

    /// How many frames the current thread's stack holds.
    pub fn frame_count(&self) -> Option<jint> {
        let mut count: jint = 0;
        call!(self, 16, (jthread, *mut jint), ptr::null_mut(), &mut count).ok()?;
        Some(count)
    }

    /// The current thread's frames from `start` on, innermost first, at most `frames.len()`.
    /// Returns how many were filled.
    pub fn stack_trace(&self, start: jint, frames: &mut [FrameInfo]) -> usize {
        self.frames(ptr::null_mut(), start, frames)
    }

    /// A thread's frames from `start` on, innermost first (another thread's stack is read in
    /// a handshake). Returns how many were filled.
    pub fn stack_trace_of(
        &self,
        thread: &impl Ref,
        start: jint,
        frames: &mut [FrameInfo],
    ) -> usize {
        self.frames(thread.as_raw(), start, frames)
    }

    fn frames(&self, thread: jthread, start: jint, frames: &mut [FrameInfo]) -> usize {
        let mut count: jint = 0;
        let filled = call!(
            self,
            104,
            (jthread, jint, jint, *mut FrameInfo, *mut jint),
            thread,
            start,
            frames.len() as jint,
            frames.as_mut_ptr(),
            &mut count
        );
        match filled {
            Ok(()) => (count.max(0) as usize).min(frames.len()),
            Err(_) => 0,
        }
    }

    /// The current thread (a local reference of `jni`'s frame).
    pub fn current_thread<'l>(&self, jni: Jni<'l>) -> Option<Local<'l>> {
        let mut thread: jthread = ptr::null_mut();
        call!(self, 18, (*mut jthread), &mut thread).ok()?;
        jni.adopt(thread)
    }

    /// Every live platform thread, as local references of `jni`'s frame.
    pub fn all_threads<'l>(&self, jni: Jni<'l>) -> Result<Vec<Local<'l>>> {
        let (mut n, mut p): (jint, *mut jthread) = (0, ptr::null_mut());
        call!(self, 4, (*mut jint, *mut *mut jthread), &mut n, &mut p)?;
        Ok(self.take_locals(jni, p, n))
    }

    pub fn suspend_thread(&self, thread: &impl Ref) -> Result<()> {
        call!(self, 5, (jthread), thread.as_raw())
    }

    pub fn resume_thread(&self, thread: &impl Ref) -> Result<()> {
        call!(self, 6, (jthread), thread.as_raw())
    }

    /// JVMTI_THREAD_STATE_* bits of a thread.
    pub fn thread_state(&self, thread: &impl Ref) -> Result<jint> {
        self.query(17, thread, 0)
    }

    /// CPU time a thread has used, in nanoseconds (needs can_get_thread_cpu_time).
    pub fn thread_cpu_time(&self, thread: &impl Ref) -> Result<jlong> {
        self.query(137, thread, 0)
    }

    /// The word this environment keeps for a thread (0: none yet).
    pub fn thread_word(&self, thread: &impl Ref) -> Result<usize> {
        self.query(102, thread, ptr::null_mut::<c_void>())
            .map(|w| w as usize)
    }

    /// Keeps a word for a thread (JVMTI thread-local storage; a number, never dereferenced).
    pub fn set_thread_word(&self, thread: &impl Ref, word: usize) -> Result<()> {
        call!(
            self,
            103,
            (jthread, *const c_void),
            thread.as_raw(),
            word as *const c_void
        )
    }

    /// The objects whose monitors a thread holds (local references of `jni`'s frame;
    /// handshake).
    pub fn owned_monitors<'l>(&self, jni: Jni<'l>, thread: &impl Ref) -> Result<Vec<Local<'l>>> {
        let (mut n, mut p): (jint, *mut jobject) = (0, ptr::null_mut());
        call!(
            self,
            10,
            (jthread, *mut jint, *mut *mut jobject),
            thread.as_raw(),
            &mut n,
            &mut p
        )?;
        Ok(self.take_locals(jni, p, n))
    }

    /// The object whose monitor a thread waits to enter or waits on, if any.
    pub fn contended_monitor<'l>(&self, jni: Jni<'l>, thread: &impl Ref) -> Option<Local<'l>> {
        let object = self.query(11, thread, ptr::null_mut()).ok()?;
        jni.adopt(object)
    }

    /// GetObjectMonitorUsage, its arrays taken.
    fn usage(&self, object: &impl Ref) -> Result<(jthread, jint, Vec<jthread>, Vec<jthread>)> {
        let mut usage = MonitorUsage {
            owner: ptr::null_mut(),
            entry_count: 0,
            waiter_count: 0,
            waiters: ptr::null_mut(),
            notify_waiter_count: 0,
            notify_waiters: ptr::null_mut(),
        };
        call!(
            self,
            59,
            (jobject, *mut MonitorUsage),
            object.as_raw(),
            &mut usage
        )?;
        let waiters = self.take_array(usage.waiters, usage.waiter_count);
        let notify = self.take_array(usage.notify_waiters, usage.notify_waiter_count);
        Ok((usage.owner, usage.entry_count, waiters, notify))
    }

    /// The thread that owns an object's monitor, if one does (a local reference of `jni`'s
    /// frame).
    pub fn monitor_owner<'l>(&self, jni: Jni<'l>, object: &impl Ref) -> Option<Local<'l>> {
        let (owner, _, waiters, notify) = self.usage(object).ok()?;
        for t in waiters.into_iter().chain(notify) {
            if let Some(t) = jni.adopt(t) {
                jni.delete_local(t);
            }
        }
        jni.adopt(owner)
    }

    /// An object's monitor: owner, entry count, threads waiting to enter, threads waiting to
    /// be notified (local references of `jni`'s frame).
    pub fn monitor_usage<'l>(&self, jni: Jni<'l>, object: &impl Ref) -> Result<Monitor<'l>> {
        let (owner, entry_count, waiters, notify) = self.usage(object)?;
        Ok(Monitor {
            owner: jni.adopt(owner),
            entry_count,
            waiters: waiters.into_iter().filter_map(|t| jni.adopt(t)).collect(),
            notify_waiters: notify.into_iter().filter_map(|t| jni.adopt(t)).collect(),
        })
    }

    /// Local variable `slot` of the frame at `depth`, through JVMTI function `function`
    /// (GetLocalObject 21, GetLocalInt 22, GetLocalLong 23, GetLocalFloat 24, GetLocalDouble
    /// 25, whose value type is `T`): None where the frame has no such variable or cannot be
    /// read (a native frame).
    fn local<T: Copy>(
        &self,
        function: usize,
        thread: &impl Ref,
        depth: jint,
        slot: jint,
        zero: T,
    ) -> Option<T> {
        let mut v = zero;
        call!(
            self,
            function,
            (jthread, jint, jint, *mut T),
            thread.as_raw(),
            depth,
            slot,
            &mut v
        )
        .ok()?;
        Some(v)
    }

    /// An object local: None where it cannot be read, Some(None) for null.
    pub fn local_object<'l>(
        &self,
        jni: Jni<'l>,
        thread: &impl Ref,
        depth: jint,
        slot: jint,
    ) -> Option<Option<Local<'l>>> {
        let o = self.local(21, thread, depth, slot, ptr::null_mut())?;
        Some(jni.adopt(o))
    }

    pub fn local_int(&self, thread: &impl Ref, depth: jint, slot: jint) -> Option<jint> {
        self.local(22, thread, depth, slot, 0)
    }

    pub fn local_long(&self, thread: &impl Ref, depth: jint, slot: jint) -> Option<jlong> {
        self.local(23, thread, depth, slot, 0)
    }

    pub fn local_float(&self, thread: &impl Ref, depth: jint, slot: jint) -> Option<f32> {
        self.local(24, thread, depth, slot, 0.0)
    }

    pub fn local_double(&self, thread: &impl Ref, depth: jint, slot: jint) -> Option<f64> {
        self.local(25, thread, depth, slot, 0.0)
    }

    /// `this` of the frame at `depth` (a local reference of `jni`'s frame), or None for
    /// static and native frames.
    pub fn local_instance<'l>(
        &self,
        jni: Jni<'l>,
        thread: &impl Ref,
        depth: jint,
    ) -> Option<Local<'l>> {
        let mut object: jobject = ptr::null_mut();
        call!(
            self,
            155,
            (jthread, jint, *mut jobject),
            thread.as_raw(),
            depth,
            &mut object
        )
        .ok()?;
        jni.adopt(object)
    }
}

/// jvmtiFrameInfo: a frame's method and bytecode index (-1: none, a native frame).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FrameInfo {
    pub method: Option<MethodId>,
    pub location: jlong,
}

impl Default for FrameInfo {
    fn default() -> Self {
        FrameInfo {
            method: None,
            location: -1,
        }
    }
}

/// An object's monitor as [`Jvmti::monitor_usage`] reads it.
#[derive(Debug)]
pub struct Monitor<'l> {
    pub owner: Option<Local<'l>>,
    pub entry_count: jint,
    pub waiters: Vec<Local<'l>>,
    pub notify_waiters: Vec<Local<'l>>,
}

/// jvmtiMonitorUsage.
#[repr(C)]
struct MonitorUsage {
    owner: jthread,
    entry_count: jint,
    waiter_count: jint,
    waiters: *mut jthread,
    notify_waiter_count: jint,
    notify_waiters: *mut jthread,
}

/// jvmtiThreadInfo.
#[repr(C)]
struct ThreadInfo {
    name: *mut c_char,
    priority: jint,
    is_daemon: u8,
    thread_group: jobject,
    context_class_loader: jobject,
}

impl Default for ThreadInfo {
    fn default() -> Self {
        ThreadInfo {
            name: ptr::null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: ptr::null_mut(),
            context_class_loader: ptr::null_mut(),
        }
    }
}

/// jvmtiThreadGroupInfo.
#[repr(C)]
struct ThreadGroupInfo {
    parent: jobject,
    name: *mut c_char,
    max_priority: jint,
    is_daemon: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_laid_out_as_jvmtis() {
        assert_eq!(std::mem::size_of::<FrameInfo>(), 16);
        assert_eq!(std::mem::offset_of!(FrameInfo, location), 8);
    }
}
