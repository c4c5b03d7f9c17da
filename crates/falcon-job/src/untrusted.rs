//! Reading files a workload could have written or replaced: never through a symbolic link, never a FIFO, device
//! or socket, never a file with another name elsewhere (a hard link could be Falcon's own database: opening and
//! closing it in the worker would drop SQLite's locks), never more than asked.
//!
//! Each open is `O_NOFOLLOW | O_NONBLOCK` (a FIFO put in a file's place cannot block the worker), then checked on
//! the open file (`fstat`): a regular file with one link, the one the caller looked at when it gives one.

use std::fs::{File, Metadata};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a regular file with a single link; `expected`: the `(device, inode)` a walk
/// saw, which the open file must still be.
pub fn open(path: &Path, expected: Option<(u64, u64)>) -> std::io::Result<(File, Metadata)> {
    use nix::libc::{O_NOCTTY, O_NOFOLLOW, O_NONBLOCK};
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(O_NOFOLLOW | O_NONBLOCK | O_NOCTTY).open(path).map_err(
            |e| match e.raw_os_error() {
                Some(nix::libc::ELOOP) => refused("a symbolic link: not followed"),
                _ => e,
            },
        )?;
    checked(file, expected)
}

/// A folder a job writes in (its artifact folder), opened as the root every file under it is read beneath; a
/// symbolic link in its place is refused.
pub fn open_folder(path: &Path) -> std::io::Result<File> {
    use nix::libc::{O_DIRECTORY, O_NOFOLLOW};
    std::fs::OpenOptions::new().read(true).custom_flags(O_DIRECTORY | O_NOFOLLOW).open(path).map_err(|e| {
        match e.raw_os_error() {
            Some(nix::libc::ELOOP) | Some(nix::libc::ENOTDIR) => {
                refused("a symbolic link or not a folder: not followed")
            }
            _ => e,
        }
    })
}

/// [`open`] of `relative` beneath the folder `root` ([`open_folder`]), through no symbolic link at all: a job that
/// turns a folder on the way into a link to elsewhere (between the walk and the read) gets the file refused, never
/// the link's target read.
pub fn open_beneath(root: &File, relative: &Path, expected: Option<(u64, u64)>) -> std::io::Result<(File, Metadata)> {
    use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
    let fd = openat2(root, relative, how).map_err(|e| match e {
        nix::errno::Errno::ELOOP | nix::errno::Errno::EXDEV => {
            refused("a path through a symbolic link (or out of the artifact folder): not followed")
        }
        e => std::io::Error::from_raw_os_error(e as i32),
    })?;
    checked(File::from(fd), expected)
}

/// The open file, if it is a regular, single-linked file and (when given) the one the caller saw.
fn checked(file: File, expected: Option<(u64, u64)>) -> std::io::Result<(File, Metadata)> {
    let meta = file.metadata()?;
    if let Some(why) = not_collectable(&meta) {
        return Err(refused(&why));
    }
    if expected.is_some_and(|(dev, ino)| (dev, ino) != (meta.dev(), meta.ino())) {
        return Err(refused("replaced by another file while it was read: not collected"));
    }
    Ok((file, meta))
}

/// Why a file with this metadata (from `lstat` or `fstat`) is not read, if it is not: not a regular file, or a
/// hard link.
pub fn not_collectable(meta: &Metadata) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_symlink() {
        return Some("a symbolic link: not followed".into());
    }
    if !t.is_file() {
        let kind = if t.is_fifo() {
            "a FIFO"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else if t.is_dir() {
            "a folder"
        } else {
            "an unknown kind"
        };
        return Some(format!("not a regular file ({kind}): not collected"));
    }
    if meta.nlink() > 1 {
        return Some(format!(
            "a hard link ({} names for one file): not collected, since its other names may be files the job must \
             not reach (Falcon collects only files the job alone wrote)",
            meta.nlink()
        ));
    }
    None
}

fn refused(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string())
}

/// At most `max` bytes of a small file (a pid, an exit status), read as [`open`] reads; `Ok(None)` when absent.
pub fn read_small(path: &Path, max: u64) -> std::io::Result<Option<String>> {
    let (file, _) = match open(path, None) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    file.take(max).read_to_string(&mut text)?;
    Ok(Some(text))
}

/// The most bytes of a log kept per snapshot: a longer log keeps its last part, under a first line saying so.
pub const MAX_LOG_BYTES: u64 = 64 << 20;

/// A log as a workload's process wrote it, its last [`MAX_LOG_BYTES`] when longer (a job can make its log
/// any length, holes included, through its own descriptor); `Ok(None)` when absent.
pub fn read_log(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let (mut file, meta) = match open(path, None) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = meta.len();
    let mut out = Vec::new();
    if len > MAX_LOG_BYTES {
        let skipped = len - MAX_LOG_BYTES;
        out.extend_from_slice(
            format!(
                "[falcon: this log is {len} bytes; the first {skipped} are left out, the last {MAX_LOG_BYTES} kept]\n"
            )
            .as_bytes(),
        );
        file.seek(SeekFrom::Start(skipped))?;
    }
    file.take(MAX_LOG_BYTES).read_to_end(&mut out)?;
    Ok(Some(out))
}

/// The bytes of `file` that hold data (its length less its holes), found with `SEEK_DATA`/`SEEK_HOLE`; a file
/// system that cannot tell reports no holes. Looks at 4096 extents at most (the rest counted as data). The
/// file's offset is back at its start after.
pub fn data_bytes(file: &File, len: u64) -> u64 {
    use nix::unistd::{lseek, Whence};
    let data = count_data(file, len);
    let _ = lseek(file, 0, Whence::SeekSet);
    data
}

fn count_data(file: &File, len: u64) -> u64 {
    use nix::unistd::{lseek, Whence};
    let (mut at, mut data) = (0i64, 0u64);
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    for _ in 0..4096 {
        if at >= len {
            return data;
        }
        // ENXIO: no data after `at`; any other error: count what was seen.
        let Ok(start) = lseek(file, at, Whence::SeekData) else { return data };
        let end = lseek(file, start, Whence::SeekHole).map_or(len, |e| e.min(len));
        data += (end - start).max(0) as u64;
        at = end;
    }
    data + (len - at).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_and_hard_links_are_refused_and_small_reads_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("plain"), b"42\n").unwrap();
        assert_eq!(read_small(&p("plain"), 64).unwrap().as_deref(), Some("42\n"));
        assert_eq!(read_small(&p("missing"), 64).unwrap(), None);
        std::os::unix::fs::symlink(p("plain"), p("link")).unwrap();
        assert!(open(&p("link"), None).unwrap_err().to_string().contains("symbolic link"));
        nix::unistd::mkfifo(&p("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(open(&p("fifo"), None).unwrap_err().to_string().contains("FIFO"));
        std::fs::hard_link(p("plain"), p("second")).unwrap();
        assert!(open(&p("plain"), None).unwrap_err().to_string().contains("hard link"));
        std::fs::write(p("big"), vec![b'x'; 1000]).unwrap();
        assert_eq!(read_small(&p("big"), 10).unwrap().unwrap().len(), 10);
        let meta = std::fs::metadata(p("big")).unwrap();
        let (_, m) = open(&p("big"), Some((meta.dev(), meta.ino()))).unwrap();
        assert_eq!(m.len(), 1000);
        assert!(open(&p("big"), Some((meta.dev(), meta.ino() + 1))).unwrap_err().to_string().contains("replaced"));
    }

    #[test]
    fn files_are_read_beneath_their_folder_and_through_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("artifacts"), dir.path().join("store"));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("sub/ok.txt"), b"mine").unwrap();
        std::fs::write(outside.join("falcon.db"), b"secret").unwrap();
        let folder = open_folder(&root).unwrap();
        let (mut f, _) = open_beneath(&folder, Path::new("sub/ok.txt"), None).unwrap();
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        assert_eq!(text, "mine");
        // A folder on the way swapped for a link to the store: refused, the store's file never opened.
        std::fs::rename(root.join("sub"), root.join("old")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("sub")).unwrap();
        let e = open_beneath(&folder, Path::new("sub/falcon.db"), None).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(open_beneath(&folder, Path::new("../store/falcon.db"), None).is_err(), "out of the folder");
        // The artifact folder itself a link: refused.
        std::os::unix::fs::symlink(&outside, dir.path().join("link")).unwrap();
        assert!(open_folder(&dir.path().join("link")).unwrap_err().to_string().contains("symbolic link"));
    }

    #[test]
    fn holes_are_not_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(1 << 30).unwrap();
        drop(f);
        let (file, meta) = open(&path, None).unwrap();
        assert_eq!(meta.len(), 1 << 30);
        assert!(data_bytes(&file, meta.len()) < 1 << 20, "a 1 GiB hole holds no data");
        std::fs::write(dir.path().join("full"), vec![7u8; 100_000]).unwrap();
        let (mut file, meta) = open(&dir.path().join("full"), None).unwrap();
        assert_eq!(data_bytes(&file, meta.len()), 100_000);
        let mut read = Vec::new();
        file.read_to_end(&mut read).unwrap();
        assert_eq!(read.len(), 100_000, "the offset is back at the start");
    }

    #[test]
    fn a_long_log_keeps_its_end_under_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_LOG_BYTES + 100).unwrap();
        drop(f);
        let log = read_log(&path).unwrap().unwrap();
        assert!(log.starts_with(b"[falcon: this log is "), "{:?}", &log[..40]);
        assert!(log.len() as u64 <= MAX_LOG_BYTES + 200);
    }
}
