//! The writer's system calls that std does not wrap (fcntl's file status flags).

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

/// Turns `O_DIRECT` on or off for the open `file` (EINVAL where its file system has no
/// direct I/O).
pub fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl with F_GETFL/F_SETFL reads and sets flags of a descriptor `file` owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `file` was opened for both reading and writing.
pub fn is_read_write(file: &File) -> bool {
    // SAFETY: fcntl with F_GETFL only reads the flags of a descriptor `file` owns.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_ACCMODE == libc::O_RDWR
}
