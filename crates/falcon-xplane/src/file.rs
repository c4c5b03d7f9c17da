//! Reading a profile file: read into memory (the default), or, when the caller owns the file and nothing
//! changes it ([`DecodeOptions::mmap`]), memory-mapped. Either way consumed input is handed back to the OS
//! while decoding, so that the input and its decoded form do not add up in the peak resident memory: a file
//! of 64 KiB or more is read into an anonymous mapping (a copy: no `SIGBUS` if the file is truncated) whose
//! consumed pages are dropped. Only regular files are decoded: a FIFO, socket or device is refused before
//! it is opened.
//!
//! This is the crate's only `unsafe` code (the workspace forbids it; this crate denies it and allows
//! it here): mapping a file, and dropping the mapping's pages that the decoder is done with.

use std::fs::File;
use std::path::Path;

use crate::{decode, DecodeError, DecodeOptions, XSpace};

/// Files smaller than this are read into memory instead (a mapping costs more than it saves).
const MMAP_MIN_LEN: u64 = 64 << 10;

/// Released ranges are shrunk to multiples of this, which is a multiple of the page size on every
/// platform Rust supports (4 KiB, 16 KiB, 64 KiB pages).
const RELEASE_ALIGN: usize = 64 << 10;

pub(crate) fn decode_file(path: &Path, options: &DecodeOptions<'_>) -> Result<XSpace, DecodeError> {
    let io = |source| DecodeError::Io { path: path.to_owned(), source };
    // Checked before opening: opening a FIFO blocks until a writer comes, and a device never ends.
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a directory, device, FIFO or socket)",
        )));
    }
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if options.mmap && len >= MMAP_MIN_LEN {
        if let Some(map) = map(&file) {
            return decode_mapped(&map, options);
        }
    }
    if len >= MMAP_MIN_LEN {
        if let Some(read) = read_anonymous(&file, len).map_err(io)? {
            return decode_read(read, options).map_err(|e| e.unwrap_or_else(io));
        }
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(io)?;
    decode::decode_space(&bytes, options, None)
}

/// The file read into an anonymous mapping of its length (so that the decoder can give consumed pages back);
/// `None` when there is no such mapping or the file grew while it was read (then it is read whole instead).
/// A file that shrank meanwhile is decoded as far as it was read, like `read_to_end` would.
fn read_anonymous(file: &File, len: u64) -> std::io::Result<Option<(memmap2::MmapMut, usize)>> {
    use std::io::Read;
    let Ok(len) = usize::try_from(len) else { return Ok(None) };
    let Ok(mut map) = memmap2::MmapMut::map_anon(len) else { return Ok(None) };
    let mut filled = 0;
    let mut reader = file;
    while filled < len {
        match reader.read(&mut map[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if filled == len {
        let mut probe = [0u8; 1];
        if reader.read(&mut probe)? != 0 {
            // It grew: rewind and read it the ordinary way.
            std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(0))?;
            return Ok(None);
        }
    }
    Ok(Some((map, filled)))
}

/// Decodes a file read by [`read_anonymous`], giving its pages back as the decoder consumes them (an error
/// making the mapping read-only is `Err(Err(io))`, for the caller to name the file).
fn decode_read(
    (map, filled): (memmap2::MmapMut, usize),
    options: &DecodeOptions<'_>,
) -> Result<XSpace, Result<DecodeError, std::io::Error>> {
    let map = map.make_read_only().map_err(Err)?;
    let hook = |from: usize, to: usize| {
        let from = from.next_multiple_of(RELEASE_ALIGN);
        let to = to - to % RELEASE_ALIGN;
        if to > from {
            release_pages(&map, from, to - from);
        }
    };
    // The pages of an anonymous mapping read back as zeros once released: the decoder must not read them again.
    decode::decode_space(&map[..filled], options, Some(decode::Release { hook: &hook, rereadable: false })).map_err(Ok)
}

#[allow(unsafe_code)]
fn map(file: &File) -> Option<memmap2::Mmap> {
    // SAFETY: the mapping is read-only and only read through `&[u8]`. Its contents could change under
    // us if another process wrote the file meanwhile; the decoder accepts arbitrary bytes (it never
    // panics and never trusts a length it has not checked), so that yields a garbled result or an
    // error, not undefined behaviour in our code. Truncation raises SIGBUS, which is why mapping is
    // opt-in (`DecodeOptions::mmap`), for files the caller owns. A failure (e.g. a file system without
    // mmap) falls back to reading.
    let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
    // Read ahead aggressively; pages are consumed front to back.
    let _ = map.advise(memmap2::Advice::Sequential);
    Some(map)
}

fn decode_mapped(map: &memmap2::Mmap, options: &DecodeOptions<'_>) -> Result<XSpace, DecodeError> {
    let release = |from: usize, to: usize| {
        let from = from.next_multiple_of(RELEASE_ALIGN);
        let to = to - to % RELEASE_ALIGN;
        if to > from {
            release_pages(map, from, to - from);
        }
    };
    decode::decode_space(map, options, Some(decode::Release { hook: &release, rereadable: true }))
}

#[allow(unsafe_code)]
fn release_pages(map: &memmap2::Mmap, offset: usize, len: usize) {
    // SAFETY: `MADV_DONTNEED` on a shared, read-only, file-backed mapping only drops the page-table
    // entries: a later access faults the page in again from the page cache or the file, with the
    // same contents. So slices of the mapping that are still alive stay valid and unchanged; releasing
    // a range that is still being read costs a page fault, nothing else. On the anonymous mapping a
    // file is read into, a released page reads back as zeros: the decoder is then told its input is not
    // rereadable ([`decode::Release::rereadable`]) and never reads a byte at or before one it has handed
    // to the hook (no decoded value borrows the input: every string and byte field is copied out), and
    // `tests::anonymous_read_equals_plain_read` checks the result against a plain read. The range is
    // within the mapping (the decoder only reports offsets inside the input) and page-aligned.
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len) };
}
