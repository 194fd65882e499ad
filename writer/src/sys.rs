//! The writer's system calls that std does not wrap (fcntl's file status flags).

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

/// The file status flags of the open `file` (F_GETFL).
fn status_flags(file: &File) -> io::Result<libc::c_int> {
    // SAFETY: fcntl with F_GETFL only reads the flags of a descriptor `file` owns.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags)
}

/// Turns `O_DIRECT` on or off for the open `file` (EINVAL where its file system has no
/// direct I/O).
pub fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let flags = status_flags(file)?;
    let flags = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: fcntl with F_SETFL only sets the status flags of a descriptor `file` owns.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `file` was opened for both reading and writing.
pub fn is_read_write(file: &File) -> bool {
    status_flags(file).is_ok_and(|flags| flags & libc::O_ACCMODE == libc::O_RDWR)
}
