//! Typed JNI references and JVM IDs.
//!
//! A raw `jobject` is a handle the JVM dereferences: a stale or forged one is a wild memory
//! access inside the JVM, and a handle of the wrong kind (a String where JNI expects a
//! Class) is too. So nothing above this crate holds raw handles: each is typed here, once, at
//! the edge where the JVM hands it over (an `unsafe fn from_raw` whose `# Safety` says what
//! the JVM promised), and the types carry what was promised from then on:
//!
//! - [`Local<'l>`]: a reference valid for `'l`, the frame of the callback or native that
//!   received it or of the [`crate::jni::LocalFrame`] it was made in. Not `Copy`: deleting it
//!   ([`crate::jni::Jni::delete_local`]) consumes it. [`Class`] and [`JString`] are locals
//!   known to be a `java.lang.Class` and a `java.lang.String`.
//! - [`Global`]: a global reference kept for the life of the VM (never deleted, so `Copy`
//!   and usable on every thread); [`OwnedGlobal`] one that is deleted once, by its owner.
//! - [`MethodId`], [`FieldId`]: IDs the JVM handed out. JVMTI answers INVALID_METHODID for a
//!   method whose class was unloaded since, so an ID stays safe to pass to JVMTI.

use jni_sys::{jclass, jfieldID, jmethodID, jobject, jstring};
use std::marker::PhantomData;
use std::ptr::NonNull;

mod sealed {
    pub trait Sealed {}
}

/// A live JNI reference (local or global): what the JNI and JVMTI wrappers take.
pub trait Ref: sealed::Sealed {
    /// The handle, for the JVM's functions only.
    fn as_raw(&self) -> jobject;
}

/// `Ref` for a handle type, its raw handle read by the closure-like expression.
macro_rules! impl_ref {
    ($name:ty, |$s:ident| $raw:expr) => {
        impl sealed::Sealed for $name {}
        impl Ref for $name {
            fn as_raw(&self) -> jobject {
                let $s = self;
                $raw
            }
        }
    };
}

/// A live local reference, valid for `'l` on the thread that has it.
#[repr(transparent)]
pub struct Local<'l> {
    raw: NonNull<jni_sys::_jobject>,
    /// Tied to a frame of one thread: neither `Send` nor `Sync`.
    _frame: PhantomData<*const &'l ()>,
}

impl<'l> Local<'l> {
    /// Types a reference the JVM handed over; None for null.
    ///
    /// # Safety
    /// `raw` is null, or a live local reference of the calling thread that stays live for
    /// `'l`: an argument of the JNI native or JVMTI callback now running, or the result of a
    /// JNI or JVMTI function called in the frame `'l` names. No other `Local` of the same
    /// handle is deleted while this one lives.
    pub unsafe fn from_raw(raw: jobject) -> Option<Local<'l>> {
        NonNull::new(raw).map(|raw| Local {
            raw,
            _frame: PhantomData,
        })
    }

    /// The handle, given back to the JVM (a native's result): no longer this crate's to track.
    pub fn into_raw(self) -> jobject {
        self.raw.as_ptr()
    }
}

impl_ref!(Local<'_>, |s| s.raw.as_ptr());

impl std::fmt::Debug for Local<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Local({:p})", self.raw)
    }
}

/// A local reference known to be of one class: `$name` for `$class`, from handles of type
/// `$raw`.
macro_rules! typed_local {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $class:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Debug)]
        pub struct $name<'l>(Local<'l>);

        impl<'l> $name<'l> {
            #[doc = concat!("Types a `", $class, "` reference the JVM handed over; None for null.")]
            ///
            /// # Safety
            #[doc = concat!("As [`Local::from_raw`], and `raw` (if not null) refers to a `", $class, "`.")]
            pub unsafe fn from_raw(raw: $raw) -> Option<$name<'l>> {
                // SAFETY: the caller's contract, which includes Local::from_raw's.
                unsafe { Local::from_raw(raw) }.map($name)
            }

            #[doc = concat!("A local reference known to be a `", $class, "`.")]
            ///
            /// # Safety
            #[doc = concat!("`local` refers to a `", $class, "`.")]
            pub unsafe fn from_local(local: Local<'l>) -> $name<'l> {
                $name(local)
            }

            pub fn into_raw(self) -> $raw {
                self.0.into_raw()
            }
        }

        impl<'l> std::ops::Deref for $name<'l> {
            type Target = Local<'l>;
            fn deref(&self) -> &Local<'l> {
                &self.0
            }
        }

        impl<'l> From<$name<'l>> for Local<'l> {
            fn from(c: $name<'l>) -> Local<'l> {
                c.0
            }
        }

        impl_ref!($name<'_>, |s| s.0.as_raw());
    };
}

typed_local!(
    /// A local reference to a `java.lang.Class`.
    Class,
    jclass,
    "java.lang.Class"
);

typed_local!(
    /// A local reference to a `java.lang.String`.
    JString,
    jstring,
    "java.lang.String"
);

/// A live reference of any kind (local, global, weak global) that someone else owns,
/// borrowed for `'a`: usable, never deleted through it.
#[repr(transparent)]
pub struct Borrowed<'a> {
    raw: NonNull<jni_sys::_jobject>,
    _borrow: PhantomData<*const &'a ()>,
}

impl<'a> Borrowed<'a> {
    /// Types a reference someone else owns; None for null.
    ///
    /// # Safety
    /// `raw` is null or a live reference usable on the calling thread, not deleted during
    /// `'a`.
    pub unsafe fn from_raw(raw: jobject) -> Option<Borrowed<'a>> {
        NonNull::new(raw).map(|raw| Borrowed {
            raw,
            _borrow: PhantomData,
        })
    }
}

impl_ref!(Borrowed<'_>, |s| s.raw.as_ptr());

/// A reference known to be a `java.lang.Class` (local or global).
pub trait ClassRef: Ref {}
impl ClassRef for Class<'_> {}
impl ClassRef for GlobalClass {}
impl<T: ClassRef> ClassRef for &T {}

/// A global reference to a class, deleted once by its owner (see [`OwnedGlobal`]).
#[derive(Debug)]
pub struct GlobalClass(pub(crate) OwnedGlobal);

impl_ref!(GlobalClass, |s| s.0.as_raw());

/// A global reference kept for the life of the VM: never deleted, valid on every thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Global(NonNull<jni_sys::_jobject>);

// SAFETY: a global reference is valid on every thread attached to the JVM until deleted,
// which a `Global` never is; only the JVM dereferences it.
unsafe impl Send for Global {}
// SAFETY: as above; it is only read.
unsafe impl Sync for Global {}

impl Global {
    /// # Safety
    /// `raw` is a global reference that nothing deletes.
    pub(crate) unsafe fn from_raw(raw: jobject) -> Option<Global> {
        NonNull::new(raw).map(Global)
    }
}

impl_ref!(Global, |s| s.0.as_ptr());

/// A global reference deleted once, by whoever owns it ([`crate::jni::Jni::delete_global`]);
/// dropped otherwise, it stays (a leaked handle, never a dangling one).
#[derive(Debug)]
pub struct OwnedGlobal(NonNull<jni_sys::_jobject>);

// SAFETY: as Global's: valid on every thread until its owner deletes it, consuming it.
unsafe impl Send for OwnedGlobal {}
// SAFETY: as above; shared, it is only read.
unsafe impl Sync for OwnedGlobal {}

impl OwnedGlobal {
    /// # Safety
    /// `raw` is a global reference that only this value deletes.
    pub(crate) unsafe fn from_raw(raw: jobject) -> Option<OwnedGlobal> {
        NonNull::new(raw).map(OwnedGlobal)
    }
}

impl_ref!(OwnedGlobal, |s| s.0.as_ptr());

impl<T: Ref> sealed::Sealed for &T {}
impl<T: Ref> Ref for &T {
    fn as_raw(&self) -> jobject {
        (**self).as_raw()
    }
}

/// A method ID this JVM handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct MethodId(NonNull<jni_sys::_jmethodID>);

// SAFETY: a method ID is a number the JVM resolves on any thread; JVMTI answers an error for
// one whose class was unloaded (HotSpot keeps the slot).
unsafe impl Send for MethodId {}
// SAFETY: as above.
unsafe impl Sync for MethodId {}

impl MethodId {
    /// Types a method ID; None for null.
    ///
    /// # Safety
    /// `raw` is null or came from this JVM (an event's argument, a JVMTI or JNI result).
    pub unsafe fn from_raw(raw: jmethodID) -> Option<MethodId> {
        NonNull::new(raw).map(MethodId)
    }

    pub fn as_raw(self) -> jmethodID {
        self.0.as_ptr()
    }

    /// The ID as a number (a key in tables; never turned back into an ID).
    pub fn key(self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// A field ID this JVM handed out, for the class it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct FieldId(NonNull<jni_sys::_jfieldID>);

// SAFETY: as MethodId's.
unsafe impl Send for FieldId {}
// SAFETY: as above.
unsafe impl Sync for FieldId {}

impl FieldId {
    /// # Safety
    /// `raw` is null or came from this JVM.
    pub(crate) unsafe fn from_raw(raw: jfieldID) -> Option<FieldId> {
        NonNull::new(raw).map(FieldId)
    }

    pub fn as_raw(self) -> jfieldID {
        self.0.as_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_references_are_as_wide_as_the_handles() {
        use std::mem::size_of;
        assert_eq!(size_of::<Local>(), size_of::<jobject>());
        assert_eq!(size_of::<Option<Local>>(), size_of::<jobject>());
        assert_eq!(size_of::<Class>(), size_of::<jobject>());
        assert_eq!(size_of::<Option<MethodId>>(), size_of::<jmethodID>());
    }
}
