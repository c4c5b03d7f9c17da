//! Why an attempt failed, in its own words: the one line of its stderr that says it, for the job's reason
//! (`exited with status 2: error: bad flag`). Pure, apart from [`read_tail`].
//!
//! Owns the bounded tail read ([`TAIL_BYTES`], never the whole file) and the line picker
//! ([`meaningful_line`]); must not know any backend (each backend hands over the bytes it can read).
//!
//! The picked line is the last one that, once ANSI escapes and control characters are stripped and it is
//! trimmed, holds a letter or digit (so blank lines, rules of `-`/`=` and box drawing are passed over), and is
//! not a typical trailer — unless no better line exists, then the last trailer is taken. Trailers are what
//! tools print after the error that explains nothing: usage, `tip:` and `--help` hints, Rust's
//! `RUST_BACKTRACE` note, Go's `exit status N`, a shell's `Killed` / `Segmentation fault (core dumped)`
//! notices, Slurm's `srun: error: …: Exited with exit code N`, `wandb:` sync lines, progress bars, and every
//! line after a stack dump header (`stack backtrace:`, `goroutine 1 [running]:`). A Python traceback ends with
//! its exception (`ValueError: bad thing`), which is the line. Invalid UTF-8 is replaced (lossy); the line is
//! cut after [`MAX_CHARS`] characters, with `…`.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The most of a stream's end that is read to find its last meaningful line.
pub const TAIL_BYTES: usize = 64 * 1024;

/// The longest line kept, in characters; a longer one is cut there and ends with `…`.
pub const MAX_CHARS: usize = 300;

/// The last [`TAIL_BYTES`] of the file at `path`, without the first line when it is cut (unless it is all
/// there is); `None` when the file does not exist.
pub fn read_tail(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    // The workload could have put a link, a FIFO or a hard link in its log's place: read as untrusted.
    match crate::untrusted::open(path, None) {
        Ok((mut file, _)) => tail_of(&mut file, TAIL_BYTES as u64).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The last `max` bytes of `reader` (read from there, nothing before), without the first line when it is
/// cut, unless it is all there is.
pub fn tail_of<R: Read + Seek>(reader: &mut R, max: u64) -> std::io::Result<Vec<u8>> {
    let len = reader.seek(SeekFrom::End(0))?;
    let start = len.saturating_sub(max);
    reader.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    reader.take(max).read_to_end(&mut bytes)?;
    if start > 0 {
        let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        if let Some(end) = body.iter().position(|b| *b == b'\n') {
            bytes.drain(..=end);
        }
    }
    Ok(bytes)
}

/// The last meaningful line of `bytes` (see the module docs), cleaned and cut; `None` when there is none.
pub fn meaningful_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<String> =
        text.split(['\n', '\r']).map(clean).filter(|l| l.chars().any(char::is_alphanumeric)).collect();
    // Everything after the last stack dump header is frames, when something worth more comes before it.
    let frames = lines.iter().rposition(|l| starts_stack_dump(l)).filter(|&i| lines[..i].iter().any(|l| !trailer(l)));
    let body = &lines[..frames.unwrap_or(lines.len())];
    let line = body.iter().rev().find(|l| !trailer(l)).or(lines.last())?;
    Some(shorten(line))
}

/// `reason` followed by the cause, when there is one: `exited with status 2: error: bad flag`.
pub fn with_cause(reason: String, cause: Option<&str>) -> String {
    match cause {
        Some(cause) => format!("{reason}: {cause}"),
        None => reason,
    }
}

/// The line without ANSI escape sequences and control characters (a tab becomes a space), trimmed.
fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameter and intermediate bytes up to a final byte in `@`..=`~`.
                Some('[') => skip_csi(&mut chars),
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (`ESC \`).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                // nF (`ESC ( B`, what `tput sgr0` prints): intermediate bytes, then one final byte.
                Some(' '..='/') => {
                    for c in chars.by_ref() {
                        if !(' '..='/').contains(&c) {
                            break;
                        }
                    }
                }
                // Any other escape is two characters (`ESC c`, `ESC 7`).
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\t' => out.push(' '),
            '\u{feff}' | '\u{200b}' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

fn skip_csi(chars: &mut impl Iterator<Item = char>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            break;
        }
    }
}

/// The first [`MAX_CHARS`] characters, and `…` when there were more.
fn shorten(line: &str) -> String {
    match line.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// Whether the line opens a stack dump whose frames follow: Rust's `stack backtrace:`, Go's
/// `goroutine 1 [running]:`.
fn starts_stack_dump(line: &str) -> bool {
    if line == "stack backtrace:" {
        return true;
    }
    let Some(rest) = line.strip_prefix("goroutine ") else { return false };
    let (id, state) = rest.split_once(' ').unwrap_or((rest, ""));
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && state.starts_with('[') && state.ends_with("]:")
}

/// Shell notices of a child killed by a signal.
const SIGNAL_NOTICES: &[&str] = &[
    "aborted",
    "killed",
    "terminated",
    "segmentation fault",
    "bus error",
    "illegal instruction",
    "floating point exception",
    "hangup",
    "quit",
];

/// Whether the line is a typical trailer: printed after the error, explaining nothing.
fn trailer(line: &str) -> bool {
    let l = line.to_lowercase();
    let starts = |p: &str| l.starts_with(p);
    starts("note: run with `rust_backtrace")
        || starts("note: some details are omitted")
        || starts("usage:")
        || starts("tip:")
        || starts("for more information")
        || (starts("try ") && l.contains("--help"))
        || starts("wandb:")
        || starts("[end of output]")
        || starts("hint: see above")
        || starts("note: this error originates from a subprocess")
        || l.contains("hydra_full_error=1")
        || (starts("srun: ")
            && (l.contains("exited with exit code") || l.contains("job step aborted") || l.contains("terminating")))
        || exit_status(&l)
        || signal_notice(&l)
        || progress_bar(&l)
}

/// `exit status 2` (what `go run` adds).
fn exit_status(l: &str) -> bool {
    l.strip_prefix("exit status ").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `Killed`, `Segmentation fault (core dumped)`, or a shell's `sh: line 1: 1234 Killed  python train.py`.
fn signal_notice(l: &str) -> bool {
    let is_notice = |s: &str| {
        let s = s.trim_end();
        let s = s.strip_suffix("(core dumped)").map_or(s, str::trim_end);
        SIGNAL_NOTICES.contains(&s)
    };
    if is_notice(l) {
        return true;
    }
    // `<shell>: line <n>: <pid> <Signal>[ (core dumped)] <command…>`
    let words: Vec<&str> = l.split_whitespace().collect();
    let Some(i) = words.iter().position(|w| *w == "line") else { return false };
    let number = |w: Option<&&str>, colon: bool| {
        w.map(|w| if colon { w.strip_suffix(':').unwrap_or("") } else { w })
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    if !(number(words.get(i + 1), true) && number(words.get(i + 2), false)) {
        return false;
    }
    let rest = &words[(i + 3).min(words.len())..];
    (1..=rest.len().min(3)).any(|n| is_notice(&rest[..n].join(" ")))
}

/// A tqdm-style progress line: `50%|█████     | 5/10 [00:01<00:01, 4.93it/s]`.
fn progress_bar(l: &str) -> bool {
    l.contains('|') && (l.contains("it/s]") || l.contains("s/it]") || l.contains("it/s,") || l.contains("s/it,"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn pick(text: &str) -> Option<String> {
        meaningful_line(text.as_bytes())
    }

    #[test]
    fn empty_and_blank_output_has_no_line() {
        assert_eq!(pick(""), None);
        assert_eq!(pick("\n\n   \n\t\r\n"), None);
        assert_eq!(pick("-----\n═══╗\n╰──────╯\n  ^^^^^  \n...\n"), None, "only punctuation and box drawing");
        assert_eq!(pick("\u{1b}[31m\u{1b}[0m\n"), None, "only escapes");
    }

    #[test]
    fn the_last_meaningful_line_is_picked_and_trimmed() {
        assert_eq!(pick("starting\nerror: bad flag\n"), Some("error: bad flag".into()));
        assert_eq!(pick("error: bad flag"), Some("error: bad flag".into()), "no final newline");
        assert_eq!(pick("  error: bad flag  \n\n-----\n╰─────╯\n\n"), Some("error: bad flag".into()));
        assert_eq!(pick("a\r\nb\r\n"), Some("b".into()), "CRLF");
        assert_eq!(pick("step 1\rstep 2\rfailed at step 2\r"), Some("failed at step 2".into()), "carriage returns");
        assert_eq!(pick("x\tfailed:\tbad\n"), Some("x failed: bad".into()), "tabs become spaces");
    }

    #[test]
    fn ansi_colours_and_control_characters_are_stripped() {
        let text = "\u{1b}[1m\u{1b}[31merror\u{1b}[0m: bad \u{7}flag\u{1b}[K\n\u{1b}[2K\n";
        assert_eq!(pick(text), Some("error: bad flag".into()));
        let osc = "\u{1b}]0;window title\u{7}\u{1b}]8;;https://x\u{1b}\\link\u{1b}]8;;\u{1b}\\ broke\n";
        assert_eq!(pick(osc), Some("link broke".into()), "OSC strings with BEL and ST");
        assert_eq!(pick("\u{9b}33mwarn\u{0}ing\u{8}\n"), Some("warning".into()), "8-bit CSI, NUL, backspace");
        assert_eq!(
            pick("\u{1b}[1mfatal\u{1b}(B\u{1b}[m: \u{1b}7no space\u{1b}8\n"),
            Some("fatal: no space".into()),
            "tput"
        );
    }

    #[test]
    fn a_python_traceback_gives_its_exception() {
        let text = "Traceback (most recent call last):\n  File \"train.py\", line 12, in <module>\n    main()\n  \
                    File \"train.py\", line 9, in main\n    raise ValueError(\"bad thing\")\n    \
                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: bad thing\n";
        assert_eq!(pick(text), Some("ValueError: bad thing".into()));
        let hydra = "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'lr'\n\n\
                     Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n";
        assert_eq!(pick(hydra), Some("KeyError: 'lr'".into()));
        let wandb = "RuntimeError: CUDA out of memory\nwandb: 🚀 View run at: https://wandb.ai/x\n\
                     wandb: Find logs at: ./wandb/run-1/logs\n";
        assert_eq!(pick(wandb), Some("RuntimeError: CUDA out of memory".into()));
    }

    #[test]
    fn trailers_are_skipped_only_when_something_better_exists() {
        let clap = "error: unexpected argument '--bad' found\n\n  tip: to pass '--bad' as a value, use '-- --bad'\n\n\
                    Usage: train [OPTIONS]\n\nFor more information, try '--help'.\n";
        assert_eq!(pick(clap), Some("error: unexpected argument '--bad' found".into()));
        let gnu = "ls: invalid option -- 'z'\nTry 'ls --help' for more information.\n";
        assert_eq!(pick(gnu), Some("ls: invalid option -- 'z'".into()));
        let rust = "thread 'main' panicked at src/main.rs:2:5:\nbad thing\n\
                    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(pick(rust), Some("bad thing".into()));
        let rust_bt = "thread 'main' panicked at src/main.rs:2:5:\nbad thing\nstack backtrace:\n   0: \
                       rust_begin_unwind\n             at /rustc/abc/library/std/src/panicking.rs:665:5\n\
                       note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n";
        assert_eq!(pick(rust_bt), Some("bad thing".into()));
        let go = "panic: bad thing\n\ngoroutine 1 [running]:\nmain.main()\n\t/tmp/x.go:5 +0x25\nexit status 2\n";
        assert_eq!(pick(go), Some("panic: bad thing".into()));
        let cpp = "terminate called after throwing an instance of 'std::runtime_error'\n  what():  bad thing\n\
                   sh: line 1: 4242 Aborted                 (core dumped) ./prog\n";
        assert_eq!(pick(cpp), Some("what():  bad thing".into()));
        let srun = "RuntimeError: NCCL error\nsrun: error: node1: task 0: Exited with exit code 1\n\
                    srun: Terminating StepId=42.0\n";
        assert_eq!(pick(srun), Some("RuntimeError: NCCL error".into()));
        let tqdm = "ValueError: nan loss\n 50%|█████     | 5/10 [00:01<00:01,  4.93it/s]\n";
        assert_eq!(pick(tqdm), Some("ValueError: nan loss".into()));
        // Nothing better: the trailer is what there is.
        assert_eq!(pick("Killed\n"), Some("Killed".into()));
        assert_eq!(pick("\nSegmentation fault (core dumped)\n"), Some("Segmentation fault (core dumped)".into()));
        assert_eq!(pick("Usage: train [OPTIONS]\n"), Some("Usage: train [OPTIONS]".into()));
        // Words of a trailer inside a real error do not make it one.
        assert_eq!(
            pick("error: worker 3 was killed by the OOM killer\nKilled\n"),
            Some("error: worker 3 was killed by the OOM killer".into())
        );
    }

    #[test]
    fn a_long_last_line_is_cut_on_a_char_boundary() {
        let long = "é".repeat(1_000);
        let line = pick(&format!("before\n{long}\n")).unwrap();
        assert_eq!(line.chars().count(), MAX_CHARS + 1);
        assert!(line.ends_with('…') && line.starts_with("éé"), "{line}");
        assert_eq!(line, format!("{}…", "é".repeat(MAX_CHARS)));
        let exact = "x".repeat(MAX_CHARS);
        assert_eq!(pick(&exact), Some(exact.clone()), "exactly the limit is kept whole");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let bytes = b"starting\nerror: bad \xff\xfe byte \xe2\x82\n";
        assert_eq!(meaningful_line(bytes), Some("error: bad \u{fffd}\u{fffd} byte \u{fffd}".into()));
        assert_eq!(meaningful_line(b"\xff\xff\n"), None, "replacement characters alone say nothing");
    }

    /// Counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        read: u64,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    #[test]
    fn a_10_mb_stderr_is_read_only_at_its_tail() {
        let mut text = Vec::with_capacity(10_100_000);
        let mut i = 0;
        while text.len() < 10_000_000 {
            text.extend_from_slice(format!("step {i}: loss 0.123 ok\n").as_bytes());
            i += 1;
        }
        text.extend_from_slice(b"Traceback (most recent call last):\n  File \"t.py\", line 1\nOSError: disk full\n\n");
        let mut reader = Counting { inner: Cursor::new(text), read: 0 };
        let tail = tail_of(&mut reader, TAIL_BYTES as u64).unwrap();
        assert!(reader.read <= TAIL_BYTES as u64, "read {} bytes", reader.read);
        assert!(tail.len() <= TAIL_BYTES && tail.starts_with(b"step "), "the cut first line is dropped");
        assert_eq!(meaningful_line(&tail), Some("OSError: disk full".into()));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stderr.log");
        std::fs::write(&path, reader.inner.into_inner()).unwrap();
        let tail = read_tail(&path).unwrap().unwrap();
        assert!(tail.len() <= TAIL_BYTES);
        assert_eq!(meaningful_line(&tail), Some("OSError: disk full".into()));
        assert_eq!(read_tail(&dir.path().join("missing.log")).unwrap(), None);
    }

    #[test]
    fn a_tail_that_is_one_cut_line_is_kept() {
        let mut text = "x".repeat(200_000).into_bytes();
        text.extend_from_slice(b" fatal: out of space\n");
        let tail = tail_of(&mut Cursor::new(text), TAIL_BYTES as u64).unwrap();
        assert_eq!(tail.len(), TAIL_BYTES);
        let line = meaningful_line(&tail).unwrap();
        assert!(line.starts_with("xxx") && line.ends_with('…'), "{line}");
        let short = tail_of(&mut Cursor::new(b"a\nb\n".to_vec()), TAIL_BYTES as u64).unwrap();
        assert_eq!(short, b"a\nb\n", "a short file is read whole, its first line kept");
    }

    #[test]
    fn the_cause_follows_the_reason() {
        assert_eq!(
            with_cause("exited with status 2".into(), Some("error: bad flag")),
            "exited with status 2: error: bad flag"
        );
        assert_eq!(with_cause("exited with status 2".into(), None), "exited with status 2");
    }
}
