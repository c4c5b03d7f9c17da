//! Reading the small text files a front end hands over (experiment specs, sweeps and their base specs):
//! regular files only, and never more than the limit, checked before reading, so `/dev/zero` cannot exhaust
//! memory and a FIFO cannot block the command. [`check_input`] refuses a FIFO, socket or device given to the
//! analysis commands (profiles, traces, accuracy, tensors, kernel bench) before anything opens it.

use crate::{AppError, Result};

/// MiB (what `--max-decompressed` takes) → bytes (what the readers take), saturating.
pub use falcon_analysis::limits::mib_to_bytes;
use falcon_core::ErrorKind;
use std::io::Read;
use std::path::Path;

/// A spec, sweep or base-spec file: at most the spec limit (1 MiB), UTF-8, regular.
pub fn read_spec_file(path: &Path) -> Result<String> {
    read_text_file(path, falcon_core::spec::MAX_BYTES as u64)
}

/// The text of a regular file of at most `limit` bytes.
pub fn read_text_file(path: &Path, limit: u64) -> Result<String> {
    let shown = path.display();
    // `metadata` follows symlinks and never opens the file, so a FIFO is seen for what it is before a read
    // could block on it.
    let meta = std::fs::metadata(path).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::NotFound { ErrorKind::NotFound } else { ErrorKind::Failure };
        AppError::new(kind, format!("reading {shown}: {e}"))
    })?;
    if !meta.is_file() {
        let what = if meta.is_dir() { "a directory" } else { "not a regular file (a device, FIFO or socket)" };
        return Err(AppError::new(ErrorKind::Failure, format!("reading {shown}: it is {what}"))
            .with_hint("give the path of a regular file"));
    }
    if meta.len() > limit {
        return Err(AppError::new(
            ErrorKind::Failure,
            format!("reading {shown}: the file is {} bytes; at most {limit} are accepted", meta.len()),
        ));
    }
    let file =
        std::fs::File::open(path).map_err(|e| AppError::new(ErrorKind::Failure, format!("reading {shown}: {e}")))?;
    // The file may grow after the check: never read more than the limit (plus one byte, to tell).
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AppError::new(ErrorKind::Failure, format!("reading {shown}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(AppError::new(
            ErrorKind::Failure,
            format!("reading {shown}: it grew past {limit} bytes while read"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        AppError::new(
            ErrorKind::Failure,
            format!("reading {shown}: not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Refuses an input path that exists but is neither a regular file nor a directory (a FIFO would block the
/// reader forever, a device like `/dev/zero` never ends).
pub fn check_input(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => Err(AppError::new(
            ErrorKind::Failure,
            format!("reading {}: it is not a regular file (a device, FIFO or socket)", path.display()),
        )
        .with_hint("give the path of a regular file or a directory")),
        _ => Ok(()),
    }
}

/// Whether an output file may be written at `path`: nothing there, or (with `force`) a regular file. A
/// symlink, directory, device or FIFO is never replaced: renaming over it would turn `/dev/full` into a file or
/// cut a link.
pub fn check_output_target(path: &Path, force: bool) -> Result<()> {
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AppError::new(ErrorKind::Failure, format!("cannot write {shown}: {e}"))),
        Ok(meta) if meta.file_type().is_file() => {
            if force {
                Ok(())
            } else {
                Err(AppError::new(ErrorKind::Conflict, format!("cannot write {shown}: it exists"))
                    .with_hint("pass --force to replace it, or pick another --output"))
            }
        }
        Ok(meta) => {
            let what = if meta.file_type().is_symlink() {
                "a symbolic link"
            } else if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file (a device, FIFO or socket)"
            };
            Err(AppError::new(ErrorKind::Conflict, format!("cannot write {shown}: it is {what}; it is never replaced"))
                .with_hint("pick another --output"))
        }
    }
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`: readers see the old file or
/// the whole new one, never a part. The caller has checked the target ([`check_output_target`]).
pub fn write_atomically(path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let failure = |what: &str, e: std::io::Error| {
        crate::AppError::new(falcon_core::ErrorKind::Failure, format!("{what} {}: {e}", path.display()))
    };
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_ref())?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(failure("writing", e));
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(failure("replacing", e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.yaml");
        std::fs::write(&ok, "name: x\n").unwrap();
        assert_eq!(read_text_file(&ok, 100).unwrap(), "name: x\n");
        assert_eq!(read_text_file(&ok, 3).unwrap_err().kind(), ErrorKind::Failure, "over the limit");
        assert_eq!(read_text_file(&dir.path().join("missing"), 100).unwrap_err().kind(), ErrorKind::NotFound);
        let e = read_text_file(dir.path(), 100).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_text_file(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let bin = dir.path().join("bin");
        std::fs::write(&bin, [0xff, 0xfe]).unwrap();
        assert!(read_text_file(&bin, 100).unwrap_err().to_string().contains("UTF-8"));
    }

    #[test]
    fn outputs_replace_only_regular_files_and_only_when_forced() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.html");
        assert!(check_output_target(&new, false).is_ok());
        std::fs::write(&new, "old").unwrap();
        assert_eq!(check_output_target(&new, false).unwrap_err().kind(), ErrorKind::Conflict);
        assert!(check_output_target(&new, true).is_ok());
        let link = dir.path().join("link.html");
        std::os::unix::fs::symlink(&new, &link).unwrap();
        assert!(check_output_target(&link, true).unwrap_err().to_string().contains("symbolic link"));
        assert!(check_output_target(Path::new("/dev/full"), true).unwrap_err().to_string().contains("not a regular"));
        assert!(check_output_target(dir.path(), true).unwrap_err().to_string().contains("a directory"));
    }
}
