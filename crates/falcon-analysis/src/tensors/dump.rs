//! Opening a tensor dump: a `.npy` file, a `.npz` archive (stored or deflated members), a `.safetensors`
//! file, or a directory of `.npy` files. Opening reads only headers; tensor data is read later, chunk by
//! chunk, with positional reads (files and stored `.npz` members) or from one decompressed buffer (deflated
//! members), so a dump is never held in memory whole unless it is compressed.
//!
//! Bounds on hostile input: the deflated members of an `.npz` may together declare at most the cap on
//! decompressed bytes ([`crate::limits`]), checked at open, and each member inflates through
//! [`crate::limits::Bounded`], so a member that inflates past what it declares stops at the cap too. A
//! directory is walked without leaving it: a symbolic link is followed only when its target lies inside the
//! directory (others are skipped, with a note), and each directory is visited once, so a link loop ends.

use super::dtype::{DType, Stored};
use super::npy;
use crate::error::{AnalysisError, Result};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The longest safetensors header accepted (the `safetensors` crate's own limit).
const MAX_SAFETENSORS_HEADER: u64 = 100_000_000;

/// How deep a dump directory is walked.
const MAX_DIR_DEPTH: usize = 64;

/// What kind of dump a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Npy,
    Npz,
    Safetensors,
    Directory,
}

/// One tensor of a dump, with where its data is.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    pub stored: Stored,
    pub shape: Vec<usize>,
    pub fortran_order: bool,
    /// Elements (the product of `shape`, checked at open).
    pub elements: u64,
    pub src: Src,
    /// A `.npy` dtype `V2` read as bfloat16.
    pub void_as_bf16: bool,
}

/// Where a tensor's data bytes are.
#[derive(Clone, Debug)]
pub enum Src {
    /// Contiguous in a file from `offset` (a `.npy` file, a stored `.npz` member, a safetensors tensor).
    File { file: Arc<File>, path: Arc<PathBuf>, offset: u64 },
    /// In a compressed `.npz` member, after `data_offset` bytes of `.npy` header.
    Zipped {
        archive: Arc<Mutex<zip::ZipArchive<File>>>,
        path: Arc<PathBuf>,
        index: usize,
        member: String,
        data_offset: u64,
        /// The cap on the bytes this member may inflate to.
        max_decompressed: u64,
    },
}

/// An opened dump.
#[derive(Debug)]
pub struct Dump {
    pub kind: Kind,
    pub entries: Vec<Entry>,
    /// What was left out while opening (symbolic links leading out of a directory).
    pub notes: Vec<String>,
}

/// Opens `path`; `side` (`A`, `B`) goes into the not-found message; a deflated `.npz` inflates to at most
/// `max_decompressed` bytes.
pub fn open(path: &Path, side: &str, max_decompressed: u64) -> Result<Dump> {
    let meta = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            AnalysisError::NotFound(format!("tensor dump {side} not found: {}", path.display()))
        } else {
            AnalysisError::Io(format!("cannot read {}: {e}", path.display()))
        }
    })?;
    let mut notes = Vec::new();
    let (kind, mut entries) = if meta.is_dir() {
        (Kind::Directory, open_dir(path, side, &mut notes)?)
    } else {
        if !meta.is_file() {
            return Err(invalid(path, "not a regular file (a device, FIFO or socket)"));
        }
        let kind = file_kind(path)?;
        let entries = match kind {
            Kind::Npy => vec![open_npy(path, stem(path))?],
            Kind::Npz => open_npz(path, max_decompressed)?,
            Kind::Safetensors => open_safetensors(path)?,
            Kind::Directory => unreachable!("a file"),
        };
        (kind, entries)
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = entries.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(invalid(path, &format!("tensor name `{}` occurs twice", w[0].name)));
    }
    Ok(Dump { kind, entries, notes })
}

fn invalid(path: &Path, what: &str) -> AnalysisError {
    AnalysisError::Invalid(format!("{}: {what}", path.display()))
}

fn io_error(path: &Path, e: &std::io::Error) -> AnalysisError {
    AnalysisError::Io(format!("cannot read {}: {e}", path.display()))
}

fn stem(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(".npy").map(str::to_string).unwrap_or(name)
}

/// The kind of a file: by extension, else by its first bytes.
fn file_kind(path: &Path) -> Result<Kind> {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    if name.ends_with(".npy") {
        return Ok(Kind::Npy);
    }
    if name.ends_with(".npz") {
        return Ok(Kind::Npz);
    }
    if name.ends_with(".safetensors") {
        return Ok(Kind::Safetensors);
    }
    let mut head = [0u8; 9];
    let mut f = File::open(path).map_err(|e| io_error(path, &e))?;
    let n = read_up_to(&mut f, &mut head).map_err(|e| io_error(path, &e))?;
    let head = &head[..n];
    if head.starts_with(npy::MAGIC) {
        Ok(Kind::Npy)
    } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Ok(Kind::Npz)
    } else if n == 9 && head[8] == b'{' {
        Ok(Kind::Safetensors)
    } else {
        Err(invalid(path, "not a tensor dump (expected .npy, .npz, .safetensors or a directory of .npy files)"))
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn open_npy(path: &Path, name: String) -> Result<Entry> {
    let file = File::open(path).map_err(|e| io_error(path, &e))?;
    let len = file.metadata().map_err(|e| io_error(path, &e))?.len();
    let header = npy::read_header(&mut std::io::BufReader::new(&file), Some(len)).map_err(|e| invalid(path, &e))?;
    let need = header.data_len().unwrap_or(u64::MAX);
    let have = len - header.data_offset;
    if have < need {
        return Err(invalid(
            path,
            &format!("truncated data: shape {:?} needs {need} bytes, the file has {have}", header.shape),
        ));
    }
    Ok(Entry {
        name,
        stored: header.stored,
        elements: header.elements().unwrap_or(0),
        shape: header.shape,
        fortran_order: header.fortran_order,
        void_as_bf16: header.void_as_bf16,
        src: Src::File { file: Arc::new(file), path: Arc::new(path.to_path_buf()), offset: header.data_offset },
    })
}

fn open_dir(root: &Path, side: &str, notes: &mut Vec<String>) -> Result<Vec<Entry>> {
    let mut walk = Walk {
        root,
        real_root: std::fs::canonicalize(root).map_err(|e| io_error(root, &e))?,
        visited: std::collections::HashSet::new(),
        outside: Vec::new(),
        files: Vec::new(),
    };
    walk.dir(root, 0)?;
    if !walk.outside.is_empty() {
        let shown: Vec<&str> = walk.outside.iter().take(5).map(String::as_str).collect();
        notes.push(format!(
            "{side}: skipped {} symbolic link{} leading out of {} ({}{})",
            walk.outside.len(),
            if walk.outside.len() == 1 { "" } else { "s" },
            root.display(),
            shown.join(", "),
            if walk.outside.len() > 5 { ", …" } else { "" }
        ));
    }
    walk.files.into_iter().map(|(p, name)| open_npy(&p, name)).collect()
}

/// A walk of a dump directory that stays inside it (see the module docs).
struct Walk<'a> {
    root: &'a Path,
    /// The root with every link resolved: a link's target must lie under it.
    real_root: PathBuf,
    /// Directories entered, by their resolved path (a link loop enters one twice).
    visited: std::collections::HashSet<PathBuf>,
    /// Links skipped because they lead out of the root (relative names).
    outside: Vec<String>,
    files: Vec<(PathBuf, String)>,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, depth: usize) -> Result<()> {
        if depth > MAX_DIR_DEPTH {
            return Err(invalid(dir, &format!("directory nesting deeper than {MAX_DIR_DEPTH} levels")));
        }
        let real = std::fs::canonicalize(dir).map_err(|e| io_error(dir, &e))?;
        if !self.visited.insert(real) {
            return Ok(()); // entered before, through a link
        }
        let mut items: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| io_error(dir, &e))?
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| io_error(dir, &e))?;
        items.sort_by_key(|e| e.file_name());
        for item in items {
            let path = item.path();
            let rel = path.strip_prefix(self.root).unwrap_or(&path);
            let Ok(own) = std::fs::symlink_metadata(&path) else { continue };
            if own.file_type().is_symlink() {
                // Followed only to a target inside the root; a dangling link is skipped.
                let Ok(target) = std::fs::canonicalize(&path) else { continue };
                if !target.starts_with(&self.real_root) {
                    self.outside.push(rel.display().to_string());
                    continue;
                }
            }
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            if meta.is_dir() {
                self.dir(&path, depth + 1)?;
            } else if meta.is_file() && path.extension().is_some_and(|e| e == "npy") {
                let name = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                let name = name.strip_suffix(".npy").unwrap_or(&name).to_string();
                self.files.push((path, name));
            }
        }
        Ok(())
    }
}

fn open_npz(path: &Path, max_decompressed: u64) -> Result<Vec<Entry>> {
    let file = File::open(path).map_err(|e| io_error(path, &e))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| invalid(path, &format!("not a readable .npz (zip) archive: {e}")))?;
    let shared_path = Arc::new(path.to_path_buf());
    let data_file = Arc::new(File::open(path).map_err(|e| io_error(path, &e))?);
    // What the compressed members declare they inflate to, before any is read (a member that inflates to more
    // than it declares is stopped by the bounded reader in `Entry::load`).
    let mut declared = 0u64;
    for index in 0..archive.len() {
        let member = archive.by_index_raw(index).map_err(|e| invalid(path, &format!("member {index}: {e}")))?;
        if member.compression() != zip::CompressionMethod::Stored {
            declared = declared.saturating_add(member.size());
        }
    }
    if declared > max_decompressed {
        return Err(AnalysisError::decompressed_too_large(path, max_decompressed));
    }
    let mut staged = Vec::new();
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).map_err(|e| invalid(path, &format!("member {index}: {e}")))?;
        let raw_name = member
            .name()
            .map(|n| n.into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(member.name_raw()).into_owned());
        if member.is_dir() || !raw_name.ends_with(".npy") {
            continue;
        }
        let name = raw_name.strip_suffix(".npy").unwrap_or(&raw_name).to_string();
        let what = |e: &str| invalid(path, &format!("member {raw_name}: {e}"));
        if member.encrypted() {
            return Err(what("encrypted members are not supported"));
        }
        let size = member.size();
        let header = npy::read_header(&mut member, Some(size)).map_err(|e| what(&e))?;
        let need = header.data_len().unwrap_or(u64::MAX);
        let have = size - header.data_offset;
        if have < need {
            return Err(what(&format!(
                "truncated data: shape {:?} needs {need} bytes, the member has {have}",
                header.shape
            )));
        }
        let stored = member.compression() == zip::CompressionMethod::Stored;
        let start = member.data_start();
        staged.push((index, raw_name, name, header, stored, start));
    }
    let file_len = data_file.metadata().map_err(|e| io_error(path, &e))?.len();
    let archive = Arc::new(Mutex::new(archive));
    let mut entries = Vec::new();
    for (index, raw_name, name, header, stored, start) in staged {
        let src = match (stored, start) {
            (true, Some(start)) => {
                let offset = start.checked_add(header.data_offset).filter(|o| {
                    o.checked_add(header.data_len().unwrap_or(u64::MAX)).is_some_and(|end| end <= file_len)
                });
                let offset = offset.ok_or_else(|| {
                    invalid(path, &format!("member {raw_name}: data runs past the end of the archive"))
                })?;
                Src::File { file: data_file.clone(), path: shared_path.clone(), offset }
            }
            _ => Src::Zipped {
                archive: archive.clone(),
                path: shared_path.clone(),
                index,
                member: raw_name,
                data_offset: header.data_offset,
                max_decompressed,
            },
        };
        entries.push(Entry {
            name,
            stored: header.stored,
            elements: header.elements().unwrap_or(0),
            shape: header.shape,
            fortran_order: header.fortran_order,
            void_as_bf16: header.void_as_bf16,
            src,
        });
    }
    Ok(entries)
}

fn open_safetensors(path: &Path) -> Result<Vec<Entry>> {
    let mut file = File::open(path).map_err(|e| io_error(path, &e))?;
    let len = file.metadata().map_err(|e| io_error(path, &e))?.len();
    let mut n8 = [0u8; 8];
    if read_up_to(&mut file, &mut n8).map_err(|e| io_error(path, &e))? < 8 {
        return Err(invalid(path, "truncated: shorter than the 8-byte safetensors header length"));
    }
    let n = u64::from_le_bytes(n8);
    if n > MAX_SAFETENSORS_HEADER {
        return Err(invalid(
            path,
            &format!("safetensors header length {n} is over the {MAX_SAFETENSORS_HEADER}-byte limit"),
        ));
    }
    if 8 + n > len {
        return Err(invalid(
            path,
            &format!("safetensors header length {n} runs past the end of the file ({len} bytes)"),
        ));
    }
    let mut header = vec![0u8; n as usize];
    file.read_exact(&mut header).map_err(|e| io_error(path, &e))?;
    let meta: safetensors::tensor::Metadata =
        serde_json::from_slice(&header).map_err(|e| invalid(path, &format!("bad safetensors header: {e}")))?;
    let data_start = 8 + n;
    let data_len = meta.data_len() as u64;
    if data_start + data_len != len {
        return Err(invalid(
            path,
            &format!("safetensors data is {data_len} bytes after the header, the file has {}", len - data_start),
        ));
    }
    let file = Arc::new(file);
    let shared_path = Arc::new(path.to_path_buf());
    let mut entries = Vec::new();
    for (name, info) in meta.tensors() {
        let dtype = safetensors_dtype(info.dtype)
            .ok_or_else(|| invalid(path, &format!("tensor `{name}`: dtype {:?} is not supported", info.dtype)))?;
        let elements = info
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
            .ok_or_else(|| invalid(path, &format!("tensor `{name}`: shape overflows")))?;
        entries.push(Entry {
            name,
            stored: Stored { dtype, big_endian: false },
            shape: info.shape.clone(),
            fortran_order: false,
            elements,
            void_as_bf16: false,
            src: Src::File {
                file: file.clone(),
                path: shared_path.clone(),
                offset: data_start + info.data_offsets.0 as u64,
            },
        });
    }
    Ok(entries)
}

fn safetensors_dtype(d: safetensors::Dtype) -> Option<DType> {
    use safetensors::Dtype as S;
    Some(match d {
        S::BOOL => DType::Bool,
        S::U8 => DType::U8,
        S::I8 => DType::I8,
        S::U16 => DType::U16,
        S::I16 => DType::I16,
        S::U32 => DType::U32,
        S::I32 => DType::I32,
        S::U64 => DType::U64,
        S::I64 => DType::I64,
        S::F16 => DType::F16,
        S::BF16 => DType::BF16,
        S::F32 => DType::F32,
        S::F64 => DType::F64,
        _ => return None,
    })
}

/// A tensor's data, ready to be read in chunks.
pub enum Data {
    File { file: Arc<File>, path: Arc<PathBuf>, offset: u64 },
    Memory(Vec<u8>),
}

impl Data {
    /// Bytes `[start, start + len)` of the tensor's data: read into `buf`, or borrowed from memory.
    pub fn bytes<'a>(&'a self, start: u64, len: usize, buf: &'a mut Vec<u8>) -> Result<&'a [u8]> {
        match self {
            Data::Memory(v) => {
                let s = usize::try_from(start).unwrap_or(usize::MAX);
                v.get(s..s.saturating_add(len))
                    .ok_or_else(|| AnalysisError::Io("tensor data shorter than its shape".into()))
            }
            Data::File { file, path, offset } => {
                buf.resize(len, 0);
                read_exact_at(file, buf, offset + start).map_err(|e| io_error(path, &e))?;
                Ok(&buf[..])
            }
        }
    }
}

impl Entry {
    /// Bytes of data.
    pub fn data_len(&self) -> u64 {
        self.elements * self.stored.dtype.size() as u64
    }

    /// Makes the data readable: file-backed data as is, a compressed member decompressed into memory.
    pub fn load(&self) -> Result<Data> {
        match &self.src {
            Src::File { file, path, offset } => {
                Ok(Data::File { file: file.clone(), path: path.clone(), offset: *offset })
            }
            Src::Zipped { archive, path, index, member, data_offset, max_decompressed } => {
                let what = |e: &dyn std::fmt::Display| invalid(path, &format!("member {member}: {e}"));
                let fail = |e: std::io::Error| match crate::limits::LimitExceeded::in_io_error(&e) {
                    Some(limit) => AnalysisError::decompressed_too_large(path, limit),
                    None => what(&e),
                };
                let mut archive = archive.lock().unwrap_or_else(|p| p.into_inner());
                let m = archive.by_index(*index).map_err(|e| what(&e))?;
                let mut m = crate::limits::Bounded::new(m, *max_decompressed);
                let mut skip = vec![0u8; usize::try_from(*data_offset).map_err(|e| what(&e))?];
                m.read_exact(&mut skip).map_err(fail)?;
                let len = self.data_len();
                // The declared size may lie: reserve at most 64 MiB up front, grow with what really comes.
                let mut data = Vec::with_capacity(usize::try_from(len.min(64 << 20)).unwrap_or(0));
                (&mut m).take(len).read_to_end(&mut data).map_err(fail)?;
                if (data.len() as u64) < len {
                    return Err(what(&format!("truncated data: {len} bytes expected, {} found", data.len())));
                }
                // Read to the member's end, where the zip reader checks the CRC of what it decompressed.
                std::io::copy(&mut m, &mut std::io::sink()).map_err(fail)?;
                Ok(Data::Memory(data))
            }
        }
    }

    /// The data, in memory, in C order (for a pair whose other side is in the other order).
    pub fn load_c_order(&self) -> Result<Data> {
        let data = self.load()?;
        let len =
            usize::try_from(self.data_len()).map_err(|_| AnalysisError::Io("tensor too large for memory".into()))?;
        let mut buf = Vec::new();
        let bytes = data.bytes(0, len, &mut buf)?;
        Ok(Data::Memory(if self.fortran_order {
            fortran_to_c(bytes, &self.shape, self.stored.dtype.size())
        } else {
            bytes.to_vec()
        }))
    }
}

/// Reorders Fortran-order bytes (first index fastest) into C order (last index fastest).
pub fn fortran_to_c(src: &[u8], shape: &[usize], size: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut out = vec![0u8; n * size];
    if n == 0 {
        return out;
    }
    // Fortran strides (in elements) of each dimension.
    let mut fstride = vec![1usize; shape.len()];
    for d in 1..shape.len() {
        fstride[d] = fstride[d - 1] * shape[d - 1];
    }
    let mut idx = vec![0usize; shape.len()];
    let mut src_pos = 0usize;
    for dst in out.chunks_exact_mut(size) {
        dst.copy_from_slice(&src[src_pos * size..(src_pos + 1) * size]);
        // Odometer over C order: the last dimension moves fastest.
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            src_pos += fstride[d];
            if idx[d] < shape[d] {
                break;
            }
            src_pos -= fstride[d] * shape[d];
            idx[d] = 0;
        }
    }
    out
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn stored_npz_members_are_read_in_place_and_deflated_ones_through_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npz");
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
        let mut member = npy::MAGIC.to_vec();
        member.extend([1, 0]);
        member.extend((dict.len() as u16).to_le_bytes());
        member.extend(dict.as_bytes());
        member.extend(1.5f32.to_le_bytes());
        member.extend(2.5f32.to_le_bytes());
        let mut z = zip::ZipWriter::new(File::create(&path).unwrap());
        for (name, method) in [("s.npy", zip::CompressionMethod::Stored), ("d.npy", zip::CompressionMethod::Deflated)] {
            z.start_file(name, zip::write::SimpleFileOptions::default().compression_method(method)).unwrap();
            z.write_all(&member).unwrap();
        }
        z.finish().unwrap();
        let dump = open(&path, "A", u64::MAX).unwrap();
        let names: Vec<&str> = dump.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["d", "s"]);
        assert!(matches!(dump.entries[0].src, Src::Zipped { .. }));
        assert!(matches!(dump.entries[1].src, Src::File { .. }));
        for e in &dump.entries {
            let data = e.load().unwrap();
            let mut buf = Vec::new();
            assert_eq!(data.bytes(4, 4, &mut buf).unwrap(), 2.5f32.to_le_bytes());
        }
    }

    #[test]
    fn fortran_to_c_transposes() {
        // A 2x3 array [[0,1,2],[3,4,5]] in Fortran order is 0,3,1,4,2,5.
        let f: Vec<u8> = vec![0, 3, 1, 4, 2, 5];
        assert_eq!(fortran_to_c(&f, &[2, 3], 1), vec![0, 1, 2, 3, 4, 5]);
        // 2x2x2: element (i,j,k) = 4i+2j+k; Fortran position i + 2j + 4k.
        let mut f3 = vec![0u8; 8];
        for i in 0..2 {
            for j in 0..2 {
                for k in 0..2 {
                    f3[i + 2 * j + 4 * k] = (4 * i + 2 * j + k) as u8;
                }
            }
        }
        assert_eq!(fortran_to_c(&f3, &[2, 2, 2], 1), (0..8).collect::<Vec<u8>>());
    }
}
