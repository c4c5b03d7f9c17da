//! The `.npy` header (format versions 1.0, 2.0 and 3.0): magic, version, header length, and the Python dict
//! literal `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` that follows.
//!
//! Only what `np.save` writes for plain arrays is accepted: a dtype string (`<f2 <f4 <f8 >f4 |b1 <i8 |u1 …`)
//! and, for bfloat16, the 2-byte void `<V2` (or `|V2`) that numpy writes for an `ml_dtypes.bfloat16` (JAX)
//! array. Structured, complex, string, datetime and object dtypes are refused with a reason. Every length
//! is checked before it is used: malformed bytes give an error, never a panic.

use super::dtype::{DType, Stored};
use std::io::Read;

/// Magic bytes of a `.npy` file.
pub const MAGIC: &[u8] = b"\x93NUMPY";

/// The longest header accepted (numpy itself refuses headers over 10 000 bytes by default when loading).
const MAX_HEADER: usize = 1 << 20;

/// How deeply literals may nest (the header has two levels; more is garbage).
const MAX_DEPTH: usize = 16;

/// A parsed `.npy` header.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub stored: Stored,
    pub shape: Vec<usize>,
    pub fortran_order: bool,
    /// Where the data starts (bytes from the start of the file).
    pub data_offset: u64,
    /// The dtype was the 2-byte void that stands for ml_dtypes' bfloat16.
    pub void_as_bf16: bool,
}

impl Header {
    /// Number of elements, `None` on overflow.
    pub fn elements(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64))
    }

    /// Bytes of data, `None` on overflow.
    pub fn data_len(&self) -> Option<u64> {
        self.elements()?.checked_mul(self.stored.dtype.size() as u64)
    }
}

/// Reads a header from the start of `r` (which is left at the first data byte). `available`, when known, is
/// the number of bytes `r` holds, so a header length beyond it is reported as such.
pub fn read_header(r: &mut impl Read, available: Option<u64>) -> Result<Header, String> {
    let mut pre = [0u8; 8];
    read_exact(r, &mut pre, "the magic and version")?;
    if &pre[..6] != MAGIC {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (major, minor) = (pre[6], pre[7]);
    let (len_bytes, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => return Err(format!(".npy format version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)")),
    };
    let mut lb = [0u8; 4];
    read_exact(r, &mut lb[..len_bytes], "the header length")?;
    let header_len = u32::from_le_bytes(lb) as usize;
    let data_offset = (6 + 2 + len_bytes + header_len) as u64;
    if let Some(avail) = available {
        if data_offset > avail {
            return Err(format!("header length {header_len} runs past the end of the file ({avail} bytes)"));
        }
    }
    if header_len > MAX_HEADER {
        return Err(format!("header length {header_len} is over the {MAX_HEADER}-byte limit"));
    }
    let mut raw = vec![0u8; header_len];
    read_exact(r, &mut raw, "the header")?;
    let text: String = if utf8 {
        String::from_utf8(raw).map_err(|_| "the header is not UTF-8".to_string())?
    } else {
        // Versions 1 and 2 are latin-1.
        raw.iter().map(|&b| char::from(b)).collect()
    };
    let header = parse_dict(&text, header_len, data_offset)?;
    if header.data_len().is_none() {
        return Err(format!("shape {:?} overflows", header.shape));
    }
    Ok(header)
}

fn read_exact(r: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), String> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            format!("truncated: the file ends inside {what}")
        } else {
            format!("cannot read {what}: {e}")
        }
    })
}

fn parse_dict(text: &str, header_len: usize, data_offset: u64) -> Result<Header, String> {
    let start = data_offset.saturating_sub(header_len as u64);
    let mut p = Parser { s: text.as_bytes(), i: 0, start, end: data_offset };
    let value = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text after the header dict at byte {}", p.at()));
    }
    let Lit::Dict(items) = value else { return Err("the header is not a dict".into()) };
    let get = |key: &str| items.iter().find(|(k, _)| matches!(k, Lit::Str(s) if s == key)).map(|(_, v)| v);
    let descr = get("descr").ok_or("the header has no 'descr'")?;
    let (stored, void_as_bf16) = match descr {
        Lit::Str(s) => parse_descr(s)?,
        Lit::List(_) => return Err("structured dtypes (a list 'descr') are not supported".into()),
        _ => return Err("'descr' is not a string".into()),
    };
    let fortran_order = match get("fortran_order").ok_or("the header has no 'fortran_order'")? {
        Lit::Bool(b) => *b,
        _ => return Err("'fortran_order' is not True or False".into()),
    };
    let shape = match get("shape").ok_or("the header has no 'shape'")? {
        Lit::Tuple(dims) | Lit::List(dims) => dims
            .iter()
            .map(|d| match d {
                Lit::Int(n) => usize::try_from(*n).map_err(|_| format!("dimension {n} is too large")),
                _ => Err("'shape' holds something other than integers".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("'shape' is not a tuple".into()),
    };
    Ok(Header { stored, shape, fortran_order, data_offset, void_as_bf16 })
}

/// A numpy dtype string (`<f4`) to a stored dtype; the bool says a void was read as bfloat16.
pub fn parse_descr(s: &str) -> Result<(Stored, bool), String> {
    let (order, rest) = match s.as_bytes().first() {
        Some(b'<' | b'>' | b'|' | b'=') => (s.as_bytes()[0], &s[1..]),
        _ => (b'=', s),
    };
    let big_endian = match order {
        b'>' => true,
        b'=' => cfg!(target_endian = "big"),
        _ => false,
    };
    let unsupported = || format!("dtype '{s}' is not supported (floats f2/f4/f8, bfloat16 as V2, ints, bool are)");
    let mut chars = rest.chars();
    let kind = chars.next().ok_or_else(unsupported)?;
    let size: usize = chars.as_str().parse().map_err(|_| unsupported())?;
    let dtype = match (kind, size) {
        ('f', 2) => DType::F16,
        ('f', 4) => DType::F32,
        ('f', 8) => DType::F64,
        ('i', 1) => DType::I8,
        ('i', 2) => DType::I16,
        ('i', 4) => DType::I32,
        ('i', 8) => DType::I64,
        ('u', 1) => DType::U8,
        ('u', 2) => DType::U16,
        ('u', 4) => DType::U32,
        ('u', 8) => DType::U64,
        ('b', 1) => DType::Bool,
        ('V', 2) => return Ok((Stored { dtype: DType::BF16, big_endian: false }, true)),
        ('V', 1) => {
            return Err(format!(
                "dtype '{s}' (a 1-byte void: an ml_dtypes float8?) is not supported; save it as float32"
            ))
        }
        _ => return Err(unsupported()),
    };
    Ok((Stored { dtype, big_endian: big_endian && dtype.size() > 1 }, false))
}

/// The subset of Python literals a `.npy` header uses.
#[derive(Debug)]
enum Lit {
    Str(String),
    Bool(bool),
    Int(u64),
    None,
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Where the header text starts in the file, and where it ends: positions are reported as file offsets.
    start: u64,
    end: u64,
}

impl Parser<'_> {
    /// The file offset of the parser's position (never past the header's end).
    fn at(&self) -> u64 {
        (self.start + self.i.min(self.s.len()) as u64).min(self.end)
    }
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("bad header dict: {what} at byte {}", self.at()))
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > MAX_DEPTH {
            return self.err("nesting too deep");
        }
        self.ws();
        match self.peek() {
            None => self.err("unexpected end"),
            Some(q @ (b'\'' | b'"')) => self.string(q),
            Some(b'(') => Ok(Lit::Tuple(self.seq(b')', depth)?)),
            Some(b'[') => Ok(Lit::List(self.seq(b']', depth)?)),
            Some(b'{') => self.dict(depth),
            Some(c) if c.is_ascii_digit() => self.int(),
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                    self.i += 1;
                }
                match &self.s[start..self.i] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::None),
                    _ => {
                        self.i = start;
                        self.err("unknown name")
                    }
                }
            }
            Some(_) => self.err("unexpected character"),
        }
    }

    fn string(&mut self, quote: u8) -> Result<Lit, String> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return self.err("unterminated string"),
                Some(c) if c == quote => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    // Escapes do not occur in what numpy writes; keep the escaped byte as is.
                    self.i += 1;
                    match self.peek() {
                        None => return self.err("unterminated string"),
                        Some(c) => out.push(c),
                    }
                    self.i += 1;
                }
                Some(c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        Ok(Lit::Str(String::from_utf8_lossy(&out).into_owned()))
    }

    fn int(&mut self) -> Result<Lit, String> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        let n = digits.parse::<u64>().map_err(|_| format!("bad header dict: integer {digits} is too large"))?;
        // Python 2 longs (`3L`), as very old numpy wrote them.
        if self.peek() == Some(b'L') {
            self.i += 1;
        }
        Ok(Lit::Int(n))
    }

    fn seq(&mut self, close: u8, depth: usize) -> Result<Vec<Lit>, String> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            if self.eat(b',') {
                continue;
            }
            if self.eat(close) {
                return Ok(items);
            }
            return self.err("expected ',' or a closing bracket");
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Lit, String> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(b'}') {
                return Ok(Lit::Dict(items));
            }
            let key = self.value(depth + 1)?;
            if !self.eat(b':') {
                return self.err("expected ':'");
            }
            let value = self.value(depth + 1)?;
            items.push((key, value));
            if self.eat(b',') {
                continue;
            }
            if self.eat(b'}') {
                return Ok(Lit::Dict(items));
            }
            return self.err("expected ',' or '}'");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(version: u8, dict: &str) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend([version, 0]);
        if version == 1 {
            v.extend((dict.len() as u16).to_le_bytes());
        } else {
            v.extend((dict.len() as u32).to_le_bytes());
        }
        v.extend(dict.as_bytes());
        v
    }

    #[test]
    fn reads_what_numpy_writes() {
        let bytes = npy(1, "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }          \n");
        let h = read_header(&mut bytes.as_slice(), Some(bytes.len() as u64)).unwrap();
        assert_eq!(h.stored, Stored { dtype: DType::F32, big_endian: true });
        assert_eq!(h.shape, [2, 3]);
        assert!(h.fortran_order);
        assert_eq!(h.data_offset, bytes.len() as u64);
        let bytes = npy(3, "{'descr': '<V2', 'fortran_order': False, 'shape': (), }\n");
        let h = read_header(&mut bytes.as_slice(), None).unwrap();
        assert_eq!((h.stored.dtype, h.void_as_bf16, h.elements()), (DType::BF16, true, Some(1)));
        let bytes = npy(2, "{'descr': '|b1', 'fortran_order': False, 'shape': (4L,), }\n");
        assert_eq!(read_header(&mut bytes.as_slice(), None).unwrap().shape, [4]);
    }

    #[test]
    fn refuses_with_a_reason() {
        let cases = [
            ("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (3,), }", "structured"),
            ("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", "not supported"),
            ("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", "not supported"),
            ("{'descr': '<f4', 'shape': (3,), }", "fortran_order"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), }",
                "overflows",
            ),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (3,) ", "bad header dict"),
            ("((((((((((((((((((((((((((((((((((((", "too deep"),
        ];
        for (dict, want) in cases {
            let bytes = npy(1, dict);
            let e = read_header(&mut bytes.as_slice(), None).unwrap_err();
            assert!(e.contains(want), "{dict}: {e}");
        }
        let mut long = npy(1, "{}");
        long[8..10].copy_from_slice(&500u16.to_le_bytes());
        let e = read_header(&mut long.as_slice(), Some(long.len() as u64)).unwrap_err();
        assert!(e.contains("runs past the end"), "{e}");
    }
}
