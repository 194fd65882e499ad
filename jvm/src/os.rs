//! The few operating-system calls the control socket and the writer thread need, behind safe
//! signatures.

use std::os::fd::RawFd;

/// Where a native library name leads: a path (with `/`) as it is; `NAME` → `libNAME.so`
/// (`NAME.so` as it is) in the first of `dirs` that holds it, else the file name alone, for
/// dlopen to search (LD_LIBRARY_PATH).
pub fn locate_library(name: &str, dirs: &[String]) -> String {
    if name.contains('/') {
        return name.to_string();
    }
    let file = if name.ends_with(".so") {
        name.to_string()
    } else {
        format!("lib{}.so", name)
    };
    dirs.iter()
        .map(|d| std::path::Path::new(d).join(&file))
        .find(|p| p.is_file())
        .map_or(file, |p| p.display().to_string())
}

/// CPU time the calling thread has used, in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_time() -> i64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: t is a valid timespec the call fills.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return 0;
    }
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// This machine's host name (empty if it has none).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf, which we own.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Lowers the calling thread's scheduling priority by `steps` nice levels (at most to 19). On
/// Linux nice(2) changes the calling thread only, not the process; raising a nice value needs
/// no privilege, so this cannot fail in a way worth reporting.
pub fn lower_thread_priority(steps: i32) {
    // SAFETY: nice has no memory preconditions; it only changes the calling thread's nice value.
    unsafe {
        libc::nice(steps);
    }
}

/// The effective user ID of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether a process with this pid exists (in this pid namespace). True where that cannot be
/// told (kill(2) answers EPERM for another user's process) and for pids kill(2) would read as
/// a process group or every process (0, or past i32::MAX).
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 sends nothing; kill only checks that the pid exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// poll(2) over `fds` for at most `timeout_ms`; the number of ready descriptors (0 on
/// timeout, negative on error).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> i32 {
    // SAFETY: fds is a valid, exclusively borrowed array of pollfd of the given length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }
}

/// The user ID of the process at the other end of a connected Unix socket (SO_PEERCRED).
pub fn peer_uid(fd: RawFd) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred and len are valid for getsockopt to fill; a bad fd only makes it fail.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// Registers this process for [`membarrier`]; false when the kernel (or a seccomp filter)
/// does not allow it.
pub fn membarrier_register() -> bool {
    // SAFETY: membarrier takes no pointers; an unknown command only returns an error.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
            0,
            0,
        )
    };
    rc == 0
}

/// Makes every running thread of this process execute a full memory barrier before it
/// returns (Linux membarrier, private expedited): the heavy side of an asymmetric fence whose
/// light side is a compiler fence. True on success.
pub fn membarrier() -> bool {
    // SAFETY: as in membarrier_register; the process registered before the first call.
    let rc = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) };
    rc == 0
}

/// How far below the thread pointer glibc's static TLS may reach: the initial modules' blocks
/// and the surplus kept for dlopen'ed ones, a few KiB in practice. Below that lies the stack.
const STATIC_TLS_SPAN: usize = 1 << 16;

/// Whether `addr`, the address of one of the calling thread's thread-locals, lies in static
/// TLS. On x86-64 (TLS variant II) static blocks sit just below the thread pointer, which is
/// what `pthread_self` returns; a block that glibc allocates lazily for a dlopen'ed module
/// comes from malloc instead. None where the layout differs.
pub fn in_static_tls(addr: usize) -> Option<bool> {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return None;
    }
    // SAFETY: pthread_self has no preconditions and cannot fail.
    let tp = unsafe { libc::pthread_self() } as usize;
    Some(addr < tp && tp - addr <= STATIC_TLS_SPAN)
}

/// The path of the shared library this code is in (libjlive.so), as the dynamic linker loaded
/// it.
pub fn own_library() -> Option<String> {
    let mut info: libc::Dl_info = empty_dl_info();
    // SAFETY: dladdr reads the address of a function of this library and fills `info`,
    // whose dli_fname then points at a string the linker keeps while the library is loaded.
    let found = unsafe { libc::dladdr(own_library as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: checked non-null above; NUL-terminated by the dynamic linker.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(path.to_string_lossy().into_owned())
}

/// Puts libjlive.so's symbols in the process's global scope (the JVM loads agents with
/// RTLD_LOCAL), so that a library loaded after it, such as a user trace library calling
/// `InstrumentSupportCurrentThreadDetails`, finds them. False if it cannot.
pub fn export_own_symbols() -> bool {
    let Some(path) = own_library().and_then(|p| std::ffi::CString::new(p).ok()) else {
        return false;
    };
    // SAFETY: the library is loaded already (RTLD_NOLOAD): this only raises its scope; the
    // handle's extra reference keeps it loaded, as the JVM does anyway.
    let handle = unsafe {
        libc::dlopen(
            path.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_GLOBAL,
        )
    };
    !handle.is_null()
}

/// Whether another libjlive.so than this one is mapped into the process (a copy at another
/// path, or a file replaced since it was loaded): two would share the control socket and the
/// trace file.
pub fn another_copy_loaded() -> bool {
    let Some(mine) = own_library() else {
        return false;
    };
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    // address perms offset dev inode path
    let inode_of = |path: &str| {
        maps.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6 && f[5..].join(" ") == path).then(|| (f[3].to_string(), f[4].to_string()))
        })
    };
    let ours = inode_of(&mine);
    maps.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() >= 6
            && f[5..].join(" ").contains("/libjlive.so")
            && Some((f[3].to_string(), f[4].to_string())) != ours
    })
}

fn empty_dl_info() -> libc::Dl_info {
    libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    }
}

/// The TSC (x86-64; None elsewhere). Whether it is a usable clock is the caller's to know.
#[inline(always)]
pub fn rdtsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64; it only reads a counter.
        return Some(unsafe { core::arch::x86_64::_rdtsc() });
    }
    #[allow(unreachable_code)]
    None
}

/// STORE CLOCK FAST, on s390x (None elsewhere).
#[inline(always)]
pub fn stckf() -> Option<u64> {
    #[cfg(target_arch = "s390x")]
    {
        let mut clock: u64 = 0;
        // SAFETY: STCKF stores the TOD clock into the 8 bytes at the address given, which is
        // `clock`, live and aligned for the instruction; it touches nothing else.
        unsafe {
            core::arch::asm!("stckf 0({0})", in(reg_addr) &mut clock, options(nostack));
        }
        return Some(clock);
    }
    #[allow(unreachable_code)]
    None
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::{in_static_tls, locate_library};

    thread_local!(static MINE: u64 = const { 7 });

    fn mine() -> Option<bool> {
        in_static_tls(MINE.with(|m| m as *const u64 as usize))
    }

    #[test]
    fn an_executables_thread_locals_are_static_and_the_heap_is_not() {
        assert_eq!(mine(), Some(true));
        assert_eq!(std::thread::spawn(mine).join().unwrap(), Some(true));
        let heap = Box::new(7u64);
        assert_eq!(in_static_tls(&*heap as *const u64 as usize), Some(false));
    }

    #[test]
    fn a_bare_name_is_looked_for_in_the_library_path() {
        let dir = std::env::temp_dir().join(format!("jlive-locate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libprof.so"), b"").unwrap();
        let path = vec!["/nonexistent".to_string(), dir.display().to_string()];
        assert_eq!(
            locate_library("prof", &path),
            dir.join("libprof.so").display().to_string()
        );
        assert_eq!(locate_library("other", &path), "libother.so");
        assert_eq!(locate_library("/a/b.so", &path), "/a/b.so");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
