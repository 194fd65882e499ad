//! Creating a trace file: never through a symbolic link or into a file someone else made at
//! the path (a fresh file beside it, then renamed over the path), with the permissions asked
//! for. A device or a pipe at the path is written in place.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

/// Creates the file `path`, its permissions `mode` (None: 0666 less the umask, as for any new
/// file). What was at the path is replaced, never written: a symbolic link there is not
/// followed and the file it points to stays as it was.
pub fn create(path: &str, mode: Option<u32>) -> io::Result<File> {
    let target = Path::new(path);
    if let Ok(meta) = fs::symlink_metadata(target) {
        let kind = meta.file_type();
        if kind.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a directory", path),
            ));
        }
        if kind.is_char_device() || kind.is_fifo() || kind.is_block_device() {
            return OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(target);
        }
    }
    let name = target.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path),
        )
    })?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    static N: AtomicU32 = AtomicU32::new(0);
    loop {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let fresh = dir.join(format!(
            ".{}.{}-{}.new",
            name.to_string_lossy(),
            std::process::id(),
            n
        ));
        // O_CREAT | O_EXCL: fails on anything already there, a symbolic link included.
        let file = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode.unwrap_or(0o666))
            .open(&fresh)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < u32::MAX => continue,
            Err(e) => return Err(e),
        };
        let placed = match mode {
            // Exactly what was asked for, whatever the umask.
            Some(m) => file.set_permissions(Permissions::from_mode(m)),
            None => Ok(()),
        }
        .and_then(|()| fs::rename(&fresh, target));
        return match placed {
            Ok(()) => Ok(file),
            Err(e) => {
                let _ = fs::remove_file(&fresh);
                Err(e)
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("jlive-file-{}-{}", name, std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_symlink_at_the_path_is_replaced_not_followed() {
        let dir = scratch("link");
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let path = dir.join("t.trc");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let mut f = create(path.to_str().unwrap(), Some(0o600)).unwrap();
        f.write_all(b"trace").unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert!(!fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&path).unwrap(), b"trace");
        // A hard link is another name of the victim: replaced too, the victim left alone.
        fs::remove_file(&path).unwrap();
        fs::hard_link(&victim, &path).unwrap();
        create(path.to_str().unwrap(), None).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            2,
            "no fresh file left behind"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_mode_is_the_one_asked_for() {
        let dir = scratch("mode");
        let path = dir.join("t.trc");
        for mode in [0o600, 0o640, 0o644] {
            create(path.to_str().unwrap(), Some(mode)).unwrap();
            let got = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(got, mode);
        }
        let e = create(dir.to_str().unwrap(), Some(0o600)).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{}", e);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_device_is_written_in_place() {
        let mut f = create("/dev/null", Some(0o600)).unwrap();
        f.write_all(b"x").unwrap();
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }
}
