//! TensorBoard event files (`events.out.tfevents.*`): scalar series by tag.
//!
//! A file is a sequence of TFRecords, each `u64 LE length`, `masked CRC32C of the 8 length bytes`, the payload
//! (a serialized `Event` protobuf) and `masked CRC32C of the payload`. Both CRCs are checked; a mismatch, a
//! truncated record or a payload that is not an `Event` is an [`AnalysisError::Invalid`] naming the record
//! (counted from 0) and its byte offset. The one truncation tolerated is a missing final payload CRC at end
//! of file (a writer stopped between the payload and its footer), as TensorBoard's reader does; it gets a note.
//!
//! Scalars come in two encodings, both read: `Summary.Value.simple_value` (torch `SummaryWriter.add_scalar`,
//! tensorboardX, TF1), and a one-element tensor (TF2 `tf.summary.scalar`, tensorboard's `scalar_pb`, torch
//! `new_style=True`) of dtype float, double, int32, int64, half or bfloat16, with the value in the typed
//! `*_val` field or little-endian in `tensor_content`. A tensor counts as a scalar when its tag's plugin is
//! `scalars` (or it has none, or the data class is SCALAR); writers like TF1's `FileWriter` put the metadata
//! on a tag's first value only, so the plugin is remembered per tag. Everything else (histograms, images,
//! audio, text, multi-element tensors) is skipped and counted in a note. Values are widened to f64 exactly.
//!
//! The tag is the series name, as written (`lm loss`, `learning/lm_loss`). A step written twice keeps the
//! later value; reading a directory merges its files in name order (the name embeds the unix time the writer
//! started), a later file winning per step, as after a restart from a checkpoint.

use super::{RunSeries, Series, SourceFormat};
use crate::error::{AnalysisError, Result};
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bytes of a record's header: the length and its CRC.
const HEADER: usize = 12;
/// Bytes of a record's footer: the payload CRC.
const FOOTER: usize = 4;
/// Tags listed by name in the skipped-values note; the rest are counted.
const SKIPPED_LISTED: usize = 20;

// The parts of tensorboard/compat/proto/{event,summary,tensor,tensor_shape}.proto this reader needs; other
// fields are skipped as unknown. Oneof members are optional fields (the same wire format).

#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(string, optional, tag = "3")]
    file_version: Option<String>,
    #[prost(message, optional, tag = "5")]
    summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<Value>,
}

#[derive(Clone, PartialEq, Message)]
struct Value {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(float, optional, tag = "2")]
    simple_value: Option<f32>,
    #[prost(bytes = "vec", optional, tag = "3")]
    obsolete_old_style_histogram: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "4")]
    image: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "5")]
    histo: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "6")]
    audio: Option<Vec<u8>>,
    #[prost(message, optional, tag = "8")]
    tensor: Option<TensorProto>,
    #[prost(message, optional, tag = "9")]
    metadata: Option<SummaryMetadata>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    plugin_data: Option<PluginData>,
    #[prost(int32, tag = "4")]
    data_class: i32,
}

#[derive(Clone, PartialEq, Message)]
struct PluginData {
    #[prost(string, tag = "1")]
    plugin_name: String,
}

#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int32, tag = "1")]
    dtype: i32,
    #[prost(message, optional, tag = "2")]
    tensor_shape: Option<TensorShapeProto>,
    #[prost(bytes = "vec", tag = "4")]
    tensor_content: Vec<u8>,
    #[prost(float, repeated, tag = "5")]
    float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    double_val: Vec<f64>,
    #[prost(int32, repeated, tag = "7")]
    int_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    int64_val: Vec<i64>,
    #[prost(int32, repeated, tag = "13")]
    half_val: Vec<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorShapeProto {
    #[prost(message, repeated, tag = "2")]
    dim: Vec<Dim>,
    #[prost(bool, tag = "3")]
    unknown_rank: bool,
}

#[derive(Clone, PartialEq, Message)]
struct Dim {
    #[prost(int64, tag = "1")]
    size: i64,
}

const DT_FLOAT: i32 = 1;
const DT_DOUBLE: i32 = 2;
const DT_INT32: i32 = 3;
const DT_STRING: i32 = 7;
const DT_INT64: i32 = 9;
const DT_BFLOAT16: i32 = 14;
const DT_HALF: i32 = 19;
/// `SummaryMetadata.data_class` SCALAR.
const DATA_CLASS_SCALAR: i32 = 1;

/// Reads one event file.
pub fn read_file(path: &Path) -> Result<RunSeries> {
    let bytes = read_bytes(path)?;
    parse(&bytes, &path.display().to_string())
}

/// Reads every `*tfevents*` file in directory `path` and its immediate subdirectories, merged in file-name
/// order (a later file wins per tag and step). A file path is read as [`read_file`] does.
pub fn read_dir(path: &Path) -> Result<RunSeries> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| io_error(&shown, &e))?;
    if meta.is_file() {
        return read_file(path);
    }
    let mut files = Vec::new();
    for entry in list(path)? {
        if entry.is_dir() {
            files.extend(list(&entry)?.into_iter().filter(|p| p.is_file() && is_event_file(p)));
        } else if entry.is_file() && is_event_file(&entry) {
            files.push(entry);
        }
    }
    if files.is_empty() {
        return Err(AnalysisError::NotFound(format!(
            "{shown}: no TensorBoard event file (*tfevents*) in it or its subdirectories"
        )));
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()).then_with(|| a.cmp(b)));

    let mut reader = Reader::default();
    let mut notes = Vec::new();
    for file in &files {
        let bytes = read_bytes(file)?;
        let rel = file.strip_prefix(path).unwrap_or(file).display().to_string();
        let mut file_notes = Vec::new();
        reader.parse(&bytes, &file.display().to_string(), &mut file_notes)?;
        reader.finish_file(&mut file_notes);
        notes.extend(file_notes.into_iter().map(|n| format!("{rel}: {n}")));
    }
    if files.len() > 1 {
        let names: Vec<String> =
            files.iter().map(|f| f.strip_prefix(path).unwrap_or(f).display().to_string()).collect();
        notes.insert(
            0,
            format!(
                "merged {} event files in name order, a later file winning per step: {}",
                files.len(),
                names.join(", ")
            ),
        );
    }
    let dirs: std::collections::BTreeSet<_> = files.iter().filter_map(|f| f.parent()).collect();
    if dirs.len() > 1 {
        notes.insert(0, format!("event files from {} directories were merged as one run", dirs.len()));
    }
    Ok(reader.into_run(shown, notes))
}

/// Parses the bytes of one event file; `path` names it in errors and in the result.
pub fn parse(bytes: &[u8], path: &str) -> Result<RunSeries> {
    let mut reader = Reader::default();
    let mut notes = Vec::new();
    reader.parse(bytes, path, &mut notes)?;
    reader.finish_file(&mut notes);
    Ok(reader.into_run(path.to_string(), notes))
}

fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io_error(&path.display().to_string(), &e))
}

fn io_error(shown: &str, e: &std::io::Error) -> AnalysisError {
    if e.kind() == std::io::ErrorKind::NotFound {
        AnalysisError::NotFound(format!("{shown}: no such file or directory"))
    } else {
        AnalysisError::Io(format!("{shown}: {e}"))
    }
}

/// The entries of directory `dir`.
fn list(dir: &Path) -> Result<Vec<PathBuf>> {
    let shown = dir.display().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(&shown, &e))? {
        out.push(entry.map_err(|e| io_error(&shown, &e))?.path());
    }
    Ok(out)
}

fn is_event_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.contains("tfevents"))
}

/// `masked(crc32c(data))` as TFRecord stores it: `((c >> 15) | (c << 17)) + 0xa282ead8`, wrapping.
fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c::crc32c(data);
    c.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// Accumulates scalar points over one or more files.
#[derive(Default)]
struct Reader {
    /// tag → step → value; a later insert wins.
    points: BTreeMap<String, BTreeMap<i64, f64>>,
    /// Per file: the plugin (and data class) last declared for each tag.
    plugins: BTreeMap<String, (String, i32)>,
    /// Per file: tag → (what was skipped, how many).
    skipped: BTreeMap<String, (String, usize)>,
}

impl Reader {
    /// Reads the records of one file into `self.points`.
    fn parse(&mut self, bytes: &[u8], path: &str, notes: &mut Vec<String>) -> Result<()> {
        self.plugins.clear();
        self.skipped.clear();
        let mut off = 0usize;
        let mut n = 0usize;
        while off < bytes.len() {
            let at = |what: String| AnalysisError::Invalid(format!("{path}: record {n} at byte offset {off}: {what}"));
            let rest = bytes.len() - off;
            if rest < HEADER {
                return Err(at(format!("truncated record header ({rest} of {HEADER} bytes before end of file)")));
            }
            let head = &bytes[off..off + HEADER];
            let (stored, computed) = (le_u32(&head[8..]), masked_crc(&head[..8]));
            if stored != computed {
                return Err(at(format!("length CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})")));
            }
            let mut len8 = [0u8; 8];
            len8.copy_from_slice(&head[..8]);
            let length = u64::from_le_bytes(len8);
            let avail = rest - HEADER;
            if length > avail as u64 {
                return Err(at(format!(
                    "truncated record: payload length {length} but {avail} bytes left in the file"
                )));
            }
            let length = length as usize; // <= avail
            let payload = &bytes[off + HEADER..off + HEADER + length];
            let after = avail - length;
            let next = if after == 0 {
                notes.push(format!(
                    "record {n} at byte offset {off}: the final payload CRC is missing (file ends after the payload); \
                     read without checking it"
                ));
                bytes.len()
            } else if after < FOOTER {
                return Err(at(format!(
                    "truncated record: payload CRC has {after} of {FOOTER} bytes before end of file"
                )));
            } else {
                let foot = off + HEADER + length;
                let (stored, computed) = (le_u32(&bytes[foot..foot + FOOTER]), masked_crc(payload));
                if stored != computed {
                    return Err(at(format!("payload CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})")));
                }
                foot + FOOTER
            };
            let event = Event::decode(payload).map_err(|e| at(format!("payload is not an Event protobuf: {e}")))?;
            self.event(event);
            off = next;
            n += 1;
        }
        if n == 0 {
            notes.push("empty file: no records".into());
        }
        Ok(())
    }

    fn event(&mut self, event: Event) {
        let Some(summary) = event.summary else { return };
        for value in summary.value {
            if let Some(plugin) = value
                .metadata
                .as_ref()
                .map(|m| (m.plugin_data.as_ref().map(|p| p.plugin_name.clone()).unwrap_or_default(), m.data_class))
            {
                self.plugins.insert(value.tag.clone(), plugin);
            }
            match self.scalar(&value) {
                Ok(v) => {
                    self.points.entry(value.tag).or_default().insert(event.step, v);
                }
                Err(kind) => {
                    let e = self.skipped.entry(value.tag).or_insert_with(|| (kind, 0));
                    e.1 += 1;
                }
            }
        }
    }

    /// The value's scalar, or what it is instead.
    fn scalar(&self, value: &Value) -> Result<f64, String> {
        if let Some(v) = value.simple_value {
            return Ok(f64::from(v));
        }
        let Some(tensor) = &value.tensor else {
            return Err(if value.histo.is_some() || value.obsolete_old_style_histogram.is_some() {
                "histogram".into()
            } else if value.image.is_some() {
                "image".into()
            } else if value.audio.is_some() {
                "audio".into()
            } else {
                "no value".into()
            });
        };
        let (plugin, data_class) = self.plugins.get(&value.tag).map(|(p, c)| (p.as_str(), *c)).unwrap_or(("", 0));
        if !(plugin.is_empty() || plugin == "scalars" || data_class == DATA_CLASS_SCALAR) {
            return Err(format!("plugin `{plugin}` tensor"));
        }
        tensor_scalar(tensor)
    }

    /// Notes the skipped values of the file just parsed.
    fn finish_file(&mut self, notes: &mut Vec<String>) {
        if self.skipped.is_empty() {
            return;
        }
        let total: usize = self.skipped.values().map(|(_, c)| c).sum();
        let mut listed: Vec<String> = self
            .skipped
            .iter()
            .take(SKIPPED_LISTED)
            .map(|(tag, (kind, count))| format!("`{tag}` ({kind}) ×{count}"))
            .collect();
        if self.skipped.len() > SKIPPED_LISTED {
            listed.push(format!("and {} more tags", self.skipped.len() - SKIPPED_LISTED));
        }
        notes.push(format!("skipped {total} non-scalar values in {} tags: {}", self.skipped.len(), listed.join(", ")));
    }

    fn into_run(self, path: String, notes: Vec<String>) -> RunSeries {
        let series = self
            .points
            .into_iter()
            .map(|(name, points)| Series { name, points: points.into_iter().collect(), averaged_over: None })
            .collect();
        RunSeries { path, format: SourceFormat::Tfevents, series, notes }
    }
}

/// The value of a one-element numeric tensor, or why it is not one.
fn tensor_scalar(t: &TensorProto) -> Result<f64, String> {
    let mut elements: i64 = 1;
    if let Some(shape) = &t.tensor_shape {
        if shape.unknown_rank {
            return Err("tensor of unknown rank".into());
        }
        for d in &shape.dim {
            if d.size < 0 {
                return Err("tensor of unknown shape".into());
            }
            elements = elements.saturating_mul(d.size);
        }
    }
    if elements != 1 {
        let dims: Vec<String> = t.tensor_shape.iter().flat_map(|s| s.dim.iter()).map(|d| d.size.to_string()).collect();
        return Err(format!("tensor of shape [{}]", dims.join(", ")));
    }
    let content = t.tensor_content.as_slice();
    // The value from `tensor_content` (raw little-endian, preferred as TensorFlow does) or the typed field.
    fn pick<T: Copy, const N: usize>(content: &[u8], vals: &[T], from: fn([u8; N]) -> T) -> Result<T, String> {
        if !content.is_empty() {
            let arr: [u8; N] = content
                .try_into()
                .map_err(|_| format!("one-element tensor with {} bytes of content, expected {N}", content.len()))?;
            return Ok(from(arr));
        }
        match vals {
            [v] => Ok(*v),
            [] => Err("tensor without a value".into()),
            _ => Err(format!("one-element tensor with {} values", vals.len())),
        }
    }
    let half_bits = |vals: &[i32]| -> Vec<u16> { vals.iter().map(|&v| v as u16).collect() };
    match t.dtype {
        DT_FLOAT => pick(content, &t.float_val, f32::from_le_bytes).map(f64::from),
        DT_DOUBLE => pick(content, &t.double_val, f64::from_le_bytes),
        DT_INT32 => pick(content, &t.int_val, i32::from_le_bytes).map(f64::from),
        DT_INT64 => pick(content, &t.int64_val, i64::from_le_bytes).map(|v| v as f64),
        DT_HALF => pick(content, &half_bits(&t.half_val), u16::from_le_bytes).map(|b| half::f16::from_bits(b).to_f64()),
        DT_BFLOAT16 => {
            pick(content, &half_bits(&t.half_val), u16::from_le_bytes).map(|b| half::bf16::from_bits(b).to_f64())
        }
        DT_STRING => Err("string tensor".into()),
        other => Err(format!("tensor of dtype {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u64).to_le_bytes().to_vec();
        out.extend(masked_crc(&out[..8]).to_le_bytes());
        out.extend(payload);
        out.extend(masked_crc(payload).to_le_bytes());
        out
    }

    fn file(events: &[Event]) -> Vec<u8> {
        let mut out = record(
            &Event { wall_time: 1.0, file_version: Some("brain.Event:2".into()), ..Default::default() }.encode_to_vec(),
        );
        for e in events {
            out.extend(record(&e.encode_to_vec()));
        }
        out
    }

    fn event(step: i64, values: Vec<Value>) -> Event {
        Event { wall_time: 2.0, step, summary: Some(Summary { value: values }), ..Default::default() }
    }

    fn simple(tag: &str, v: f32) -> Value {
        Value { tag: tag.into(), simple_value: Some(v), ..Default::default() }
    }

    fn scalars_meta() -> Option<SummaryMetadata> {
        Some(SummaryMetadata { plugin_data: Some(PluginData { plugin_name: "scalars".into() }), data_class: 1 })
    }

    fn tensor(tag: &str, t: TensorProto, meta: Option<SummaryMetadata>) -> Value {
        Value { tag: tag.into(), tensor: Some(t), metadata: meta, ..Default::default() }
    }

    fn scalar_shape() -> Option<TensorShapeProto> {
        Some(TensorShapeProto::default())
    }

    #[test]
    fn masked_crc_matches_tfrecord() {
        // crc32c("123456789") = 0xe3069283 (the CRC-32C check value), masked by TFRecord's rule.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(masked_crc(b"123456789"), 0x2507_c60du32.wrapping_add(0xa282_ead8));
        assert_eq!(masked_crc(&[]), 0xa282_ead8);
    }

    #[test]
    fn simple_values_sorted_later_wins() {
        let bytes = file(&[
            event(3, vec![simple("lm loss", 3.5), simple("grad-norm", 0.25)]),
            event(1, vec![simple("lm loss", 1.5)]),
            event(3, vec![simple("lm loss", 2.75)]),
        ]);
        let run = parse(&bytes, "mem").unwrap();
        assert_eq!(run.format, SourceFormat::Tfevents);
        assert_eq!(run.series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["grad-norm", "lm loss"]);
        assert_eq!(run.get("lm loss").unwrap().points, vec![(1, 1.5), (3, 2.75)]);
        assert_eq!(run.get("grad-norm").unwrap().averaged_over, None);
        assert!(run.notes.is_empty(), "{:?}", run.notes);
    }

    #[test]
    fn tensor_scalars_of_every_dtype_and_encoding() {
        let t = |dtype, f: &dyn Fn(&mut TensorProto)| {
            let mut t = TensorProto { dtype, tensor_shape: scalar_shape(), ..Default::default() };
            f(&mut t);
            t
        };
        let h = half::f16::from_f64(0.333).to_bits();
        let b = half::bf16::from_f64(-2.5).to_bits();
        let shape11 = Some(TensorShapeProto { dim: vec![Dim { size: 1 }, Dim { size: 1 }], unknown_rank: false });
        let values = vec![
            tensor("f", t(DT_FLOAT, &|t| t.float_val = vec![0.1]), scalars_meta()),
            tensor("fc", t(DT_FLOAT, &|t| t.tensor_content = 0.1f32.to_le_bytes().to_vec()), scalars_meta()),
            tensor("d", t(DT_DOUBLE, &|t| t.double_val = vec![0.1]), None),
            tensor("dc", t(DT_DOUBLE, &|t| t.tensor_content = 0.1f64.to_le_bytes().to_vec()), None),
            tensor("i", t(DT_INT32, &|t| t.int_val = vec![-7]), None),
            tensor("ic", t(DT_INT32, &|t| t.tensor_content = (-7i32).to_le_bytes().to_vec()), None),
            tensor("l", t(DT_INT64, &|t| t.int64_val = vec![1 << 40]), None),
            tensor("lc", t(DT_INT64, &|t| t.tensor_content = (1i64 << 40).to_le_bytes().to_vec()), None),
            tensor("h", t(DT_HALF, &|t| t.half_val = vec![i32::from(h)]), None),
            tensor("hc", t(DT_HALF, &|t| t.tensor_content = h.to_le_bytes().to_vec()), None),
            tensor("b", t(DT_BFLOAT16, &|t| t.half_val = vec![i32::from(b)]), None),
            tensor("bc", t(DT_BFLOAT16, &|t| t.tensor_content = b.to_le_bytes().to_vec()), None),
            tensor("shape11", TensorProto { tensor_shape: shape11, ..t(DT_FLOAT, &|t| t.float_val = vec![4.0]) }, None),
            tensor("noshape", TensorProto { tensor_shape: None, ..t(DT_FLOAT, &|t| t.float_val = vec![5.0]) }, None),
        ];
        let run = parse(&file(&[event(7, values)]), "mem").unwrap();
        let get = |tag: &str| run.get(tag).unwrap_or_else(|| panic!("{tag} missing: {run:?}")).points.clone();
        assert_eq!(get("f"), vec![(7, f64::from(0.1f32))]);
        assert_eq!(get("fc"), vec![(7, f64::from(0.1f32))]);
        assert_eq!(get("d"), vec![(7, 0.1)]);
        assert_eq!(get("dc"), vec![(7, 0.1)]);
        assert_eq!(get("i"), vec![(7, -7.0)]);
        assert_eq!(get("ic"), vec![(7, -7.0)]);
        assert_eq!(get("l"), vec![(7, (1u64 << 40) as f64)]);
        assert_eq!(get("lc"), vec![(7, (1u64 << 40) as f64)]);
        assert_eq!(get("h"), vec![(7, half::f16::from_bits(h).to_f64())]);
        assert_eq!(get("hc"), get("h"));
        assert_eq!(get("b"), vec![(7, -2.5)]);
        assert_eq!(get("bc"), vec![(7, -2.5)]);
        assert_eq!(get("shape11"), vec![(7, 4.0)]);
        assert_eq!(get("noshape"), vec![(7, 5.0)]);
        assert!(run.notes.is_empty(), "{:?}", run.notes);
    }

    #[test]
    fn plugin_remembered_per_tag_and_non_scalars_skipped() {
        let f = |v: f32| TensorProto {
            dtype: DT_FLOAT,
            tensor_shape: scalar_shape(),
            float_val: vec![v],
            ..Default::default()
        };
        let hist_meta =
            Some(SummaryMetadata { plugin_data: Some(PluginData { plugin_name: "histograms".into() }), data_class: 2 });
        let vec4 = TensorProto {
            dtype: DT_FLOAT,
            tensor_shape: Some(TensorShapeProto { dim: vec![Dim { size: 4 }], unknown_rank: false }),
            tensor_content: vec![0; 16],
            ..Default::default()
        };
        let bytes = file(&[
            event(0, vec![tensor("loss", f(1.0), scalars_meta()), tensor("h", f(9.0), hist_meta)]),
            // Metadata only on the first value of a tag (TF1 FileWriter): the plugin is remembered.
            event(1, vec![tensor("loss", f(2.0), None), tensor("h", f(8.0), None)]),
            event(1, vec![tensor("vec", vec4, scalars_meta())]),
            event(
                2,
                vec![
                    Value { tag: "img".into(), image: Some(vec![1, 2]), ..Default::default() },
                    Value { tag: "old".into(), histo: Some(vec![]), ..Default::default() },
                    tensor("txt", TensorProto { dtype: 7, tensor_shape: scalar_shape(), ..Default::default() }, None),
                    tensor("empty", TensorProto { dtype: DT_FLOAT, ..Default::default() }, None),
                    tensor(
                        "two",
                        TensorProto { dtype: DT_FLOAT, float_val: vec![1.0, 2.0], ..Default::default() },
                        None,
                    ),
                    tensor(
                        "badlen",
                        TensorProto { dtype: DT_DOUBLE, tensor_content: vec![0; 4], ..Default::default() },
                        None,
                    ),
                    tensor("u8", TensorProto { dtype: 4, int_val: vec![3], ..Default::default() }, None),
                    tensor(
                        "unknown",
                        TensorProto {
                            dtype: DT_FLOAT,
                            tensor_shape: Some(TensorShapeProto { dim: vec![Dim { size: -1 }], unknown_rank: false }),
                            float_val: vec![1.0],
                            ..Default::default()
                        },
                        None,
                    ),
                ],
            ),
        ]);
        let run = parse(&bytes, "mem").unwrap();
        assert_eq!(run.series.len(), 1, "{run:?}");
        assert_eq!(run.get("loss").unwrap().points, vec![(0, 1.0), (1, 2.0)]);
        assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
        let note = &run.notes[0];
        for part in [
            "skipped 11 non-scalar values in 10 tags",
            "`h` (plugin `histograms` tensor) ×2",
            "`vec` (tensor of shape [4]) ×1",
            "`img` (image) ×1",
            "`old` (histogram) ×1",
            "`txt` (string tensor) ×1",
            "`empty` (tensor without a value) ×1",
            "`two` (one-element tensor with 2 values) ×1",
            "`badlen` (one-element tensor with 4 bytes of content, expected 8) ×1",
            "`u8` (tensor of dtype 4) ×1",
            "`unknown` (tensor of unknown shape) ×1",
        ] {
            assert!(note.contains(part), "{part:?} not in {note}");
        }
    }

    /// The byte offset of each record of a well-formed file.
    fn offsets(bytes: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut off = 0;
        while off < bytes.len() {
            out.push(off);
            off +=
                HEADER + usize::try_from(u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap())).unwrap() + FOOTER;
        }
        out
    }

    #[test]
    fn framing_errors_name_record_and_offset() {
        let bytes = file(&[event(1, vec![simple("a", 1.0)]), event(2, vec![simple("a", 2.0)])]);
        let at = offsets(&bytes);
        assert_eq!(at.len(), 3);
        let err = |b: &[u8]| parse(b, "f.tfevents").unwrap_err().to_string();

        let mut b = bytes.clone();
        b[at[1] + 1] ^= 0x40; // the length field of record 1
        let e = err(&b);
        assert!(
            e.starts_with(&format!("f.tfevents: record 1 at byte offset {}: length CRC mismatch (stored 0x", at[1])),
            "{e}"
        );

        let mut b = bytes.clone();
        b[at[1] + HEADER + 2] ^= 1; // the payload of record 1
        let e = err(&b);
        assert!(
            e.starts_with(&format!("f.tfevents: record 1 at byte offset {}: payload CRC mismatch (stored 0x", at[1])),
            "{e}"
        );

        // A huge length whose CRC is right: refused before anything is allocated.
        let mut b = bytes[..at[1]].to_vec();
        let mut big = u64::MAX.to_le_bytes().to_vec();
        big.extend(masked_crc(&big).to_le_bytes());
        b.extend(&big);
        let e = err(&b);
        assert!(
            e.contains(&format!("record 1 at byte offset {}: truncated record: payload length {}", at[1], u64::MAX)),
            "{e}"
        );

        // Missing final footer: tolerated with a note; one, two or three footer bytes: an error.
        let run = parse(&bytes[..bytes.len() - FOOTER], "f").unwrap();
        assert_eq!(run.get("a").unwrap().points, vec![(1, 1.0), (2, 2.0)]);
        assert!(
            run.notes[0].starts_with(&format!("record 2 at byte offset {}: the final payload CRC is missing", at[2])),
            "{:?}",
            run.notes
        );
        for cut in 1..FOOTER {
            assert!(err(&bytes[..bytes.len() - cut]).contains("truncated record: payload CRC has"), "{cut}");
        }
        assert!(err(&bytes[..5])
            .starts_with("f.tfevents: record 0 at byte offset 0: truncated record header (5 of 12 bytes"));

        // A valid frame around bytes that are not an Event.
        let e = err(&record(&[0xff, 0xff, 0xff]));
        assert!(e.starts_with("f.tfevents: record 0 at byte offset 0: payload is not an Event protobuf"), "{e}");
    }

    #[test]
    fn empty_input_is_an_empty_run() {
        let run = parse(&[], "empty").unwrap();
        assert!(run.series.is_empty());
        assert_eq!(run.notes, vec!["empty file: no records".to_string()]);
    }
}
