//! The stdio lines before `rmcp` sees them: JSON-RPC's own errors for what is not a request it could answer.
//!
//! - A line that is not JSON gets `-32700 Parse error` (`id: null`), as JSON-RPC 2.0 says, instead of silence
//!   (or, before the session, the end of it); its text is never echoed.
//! - A line over [`MAX_LINE`] bytes is read to its end and dropped with `-32700` (memory stays bounded).
//! - A request whose `method` is over [`MAX_METHOD`] bytes gets `-32601 Method not found` naming only its length
//!   (no method is that long; echoing it would send a megabyte back).
//!
//! Everything else is passed on unchanged, one line at a time; the answers of `rmcp` and these errors are written
//! to stdout whole lines at a time, so they never interleave.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line read, in bytes (a tool call's arguments are small; a spec is at most 1 MiB).
pub const MAX_LINE: usize = 4 << 20;
/// The longest method name answered by name.
pub const MAX_METHOD: usize = 256;

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Pass it on to the server.
    Forward,
    /// Skip it (a blank line).
    Skip,
    /// Answer it with this error line.
    Answer(String),
}

/// The verdict on one line (without its newline); `overlong` when it was cut at [`MAX_LINE`].
pub fn judge(line: &[u8], overlong: bool) -> Verdict {
    let error = |id: &Value, code: i64, message: String| {
        Verdict::Answer(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string())
    };
    if overlong {
        return error(&Value::Null, -32700, format!("Parse error: a message over {MAX_LINE} bytes"));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            let what = format!("Parse error: not JSON (line {}, column {}: {})", e.line(), e.column(), kind(&e));
            return error(&Value::Null, -32700, what);
        }
    };
    match value.get("method").and_then(Value::as_str) {
        Some(method) if method.len() > MAX_METHOD => {
            let id = value.get("id").cloned().unwrap_or(Value::Null);
            error(&id, -32601, format!("Method not found (a method name of {} bytes)", method.len()))
        }
        _ => Verdict::Forward,
    }
}

fn kind(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "a syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Eof => "it ends too soon",
    }
}

/// The reader and writer `rmcp` serves on, between `input` and `output` (the process's stdin and stdout): lines
/// judged by [`judge`] on the way in, whole lines on the way out. The task that writes `output` ends once the
/// server's writer is dropped and every line is out: await it before exiting, so no answer is lost.
pub fn filtered<I, O>(
    input: I,
    output: O,
) -> ((impl AsyncRead + Send + Unpin, impl AsyncWrite + Send + Unpin), tokio::task::JoinHandle<()>)
where
    I: AsyncRead + Send + Unpin + 'static,
    O: AsyncWrite + Send + Unpin + 'static,
{
    let (server_in, mut to_server) = tokio::io::duplex(1 << 16);
    let (from_server, server_out) = tokio::io::duplex(1 << 16);
    let (answers, mut answered) = mpsc::channel::<String>(64);
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let (read, overlong) = match read_line(&mut input, &mut line).await {
                Ok(r) => r,
                Err(_) => break,
            };
            if read == 0 {
                break; // the client closed its end: so does the server's input
            }
            match judge(&line, overlong) {
                Verdict::Forward => {
                    line.push(b'\n');
                    if to_server.write_all(&line).await.is_err() {
                        break;
                    }
                }
                Verdict::Skip => {}
                Verdict::Answer(text) => {
                    if answers.send(text).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to_server.shutdown().await;
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        let mut from_server = BufReader::new(from_server).lines();
        loop {
            let line = tokio::select! {
                l = from_server.next_line() => match l { Ok(Some(l)) => l, _ => break },
                Some(a) = answered.recv() => a,
            };
            if output.write_all(format!("{line}\n").as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
        while let Ok(a) = answered.try_recv() {
            let _ = output.write_all(format!("{a}\n").as_bytes()).await;
        }
        let _ = output.flush().await;
    });
    ((server_in, server_out), writer)
}

/// Reads one line into `buf` (without its newline), keeping at most [`MAX_LINE`] bytes of it: the bytes read
/// (0 at the end of input) and whether the line was longer.
async fn read_line<R: AsyncBufReadExt + Unpin>(input: &mut R, buf: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
    let (mut total, mut overlong) = (0usize, false);
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            return Ok((total, overlong));
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let keep = take - usize::from(done);
        let room = MAX_LINE.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..keep.min(room)]);
        overlong |= keep > room;
        total += take;
        input.consume(take);
        if done {
            return Ok((total, overlong));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_request_gets_json_rpcs_own_error() {
        let Verdict::Answer(a) = judge(b"not json", false) else { panic!() };
        let v: Value = serde_json::from_str(&a).unwrap();
        assert_eq!(v["error"]["code"], -32700);
        assert_eq!(v["id"], Value::Null);
        assert!(!a.contains("not json"), "the line is not echoed: {a}");
        let long = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{}"}}"#, "m".repeat(5 << 20));
        let Verdict::Answer(a) = judge(long.as_bytes(), false) else { panic!() };
        assert!(a.len() < 200, "{a}");
        let v: Value = serde_json::from_str(&a).unwrap();
        assert_eq!((v["error"]["code"].as_i64(), v["id"].as_i64()), (Some(-32601), Some(7)));
        assert_eq!(judge(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, false), Verdict::Forward);
        assert_eq!(judge(b"  ", false), Verdict::Skip);
        assert!(matches!(judge(b"{}", true), Verdict::Answer(_)));
    }

    #[tokio::test]
    async fn lines_are_read_to_their_end_but_kept_to_the_cap() {
        let mut text = vec![b'x'; MAX_LINE + 10];
        text.extend_from_slice(b"\n{\"a\":1}\n");
        let mut input = BufReader::new(&text[..]);
        let mut line = Vec::new();
        assert_eq!(read_line(&mut input, &mut line).await.unwrap(), (MAX_LINE + 11, true));
        assert_eq!(line.len(), MAX_LINE);
        line.clear();
        assert_eq!(read_line(&mut input, &mut line).await.unwrap(), (8, false));
        assert_eq!(line, b"{\"a\":1}");
    }
}
