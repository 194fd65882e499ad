//! Creating a trace file: never through a symbolic link or into a file someone else made at
//! the path (a fresh file beside it, then renamed over the path), with the permissions asked
//! for. A device or a pipe at the path (or where a symbolic link there leads: `/dev/stdout`)
//! is written in place. The directory must let the user create files, as rolled files need.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

/// Creates the file `path`, its permissions `mode` (None: 0666 less the umask, as for any new
/// file). A file of the user's at the path is replaced, never written into; a symbolic link
/// there is replaced, not followed (the file it points to stays as it was); another user's
/// file is left alone (an error).
pub fn create(path: &str, mode: Option<u32>) -> io::Result<File> {
    let target = Path::new(path);
    let existing = fs::symlink_metadata(target).ok();
    if let Some(meta) = &existing {
        let kind = meta.file_type();
        if kind.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a directory", path),
            ));
        }
        if !kind.is_file() {
            // Opened without creating or truncating anything, and kept only if what was
            // opened is a device or a pipe (checked on the open file: no race).
            if let Ok(file) = OpenOptions::new().write(true).open(target) {
                let opened = file.metadata()?.file_type();
                if opened.is_char_device() || opened.is_fifo() || opened.is_block_device() {
                    return Ok(file);
                }
            }
        }
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if target.file_name().is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path),
        ));
    }
    static N: AtomicU32 = AtomicU32::new(0);
    loop {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let fresh = dir.join(format!(".jlive-{}-{}.new", std::process::id(), n));
        // O_CREAT | O_EXCL: fails on anything already there, a symbolic link included.
        // Readable too: a file written directly reads back the block a patch changes.
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode.unwrap_or(0o666))
            .open(&fresh)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < u32::MAX => continue,
            Err(e) => return Err(e),
        };
        let placed = place(&file, &fresh, target, existing.as_ref(), mode);
        if placed.is_err() {
            let _ = fs::remove_file(&fresh);
        }
        return placed.map(|()| file);
    }
}

/// Gives the fresh file its mode and its name, unless what is at the name is another user's.
fn place(
    file: &File,
    fresh: &Path,
    target: &Path,
    existing: Option<&fs::Metadata>,
    mode: Option<u32>,
) -> io::Result<()> {
    let uid = file.metadata()?.uid();
    if let Some(other) = existing.filter(|m| m.file_type().is_file() && m.uid() != uid) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to user {}: not replaced",
                target.display(),
                other.uid()
            ),
        ));
    }
    if let Some(m) = mode {
        // Exactly what was asked for, whatever the umask.
        file.set_permissions(Permissions::from_mode(m))?;
    }
    fs::rename(fresh, target)
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

    /// (Run as root, as CI does, it can make a file of another user's.)
    #[test]
    fn another_users_file_is_left_alone() {
        let dir = scratch("owner");
        let path = dir.join("t.trc");
        fs::write(&path, b"theirs").unwrap();
        if std::os::unix::fs::chown(&path, Some(65534), None).is_err() {
            println!("skipping: only root can give a file away");
            return;
        }
        let e = create(path.to_str().unwrap(), Some(0o600)).unwrap_err();
        assert!(e.to_string().contains("belongs to user 65534"), "{}", e);
        assert_eq!(fs::read(&path).unwrap(), b"theirs");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
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
    fn a_device_is_written_in_place_even_through_a_link() {
        let mut f = create("/dev/null", Some(0o600)).unwrap();
        f.write_all(b"x").unwrap();
        let null = fs::metadata("/dev/null").unwrap();
        assert!(null.file_type().is_char_device());
        let dir = scratch("device");
        let link = dir.join("out");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        create(link.to_str().unwrap(), Some(0o600)).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let _ = fs::remove_dir_all(&dir);
    }
}
