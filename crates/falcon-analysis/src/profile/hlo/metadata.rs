//! What XLA recorded about each HLO instruction of the programs in a capture: its opcode, the framework's
//! name scope (`OpMetadata.op_name`, e.g. JAX's `jit(step)/transpose(jvp())/dot_general`) and its source
//! line, read from the serialized `HloProto`s that profilers store on the `/host:metadata` plane (one event
//! metadata per program, its `Hlo Proto` stat holding the bytes; JAX captures have them by default).
//!
//! Only the fields used here are decoded (prost messages with XLA's field numbers from `xla/service/hlo.proto`
//! and `xla/xla_data.proto`; every other field is skipped). A module that fails to decode is skipped and
//! named in `notes`; nothing here panics on any input.
//!
//! Source lines come from `OpMetadata.source_file`/`source_line` when set, else from the module's stack-frame
//! index (`OpMetadata.stack_frame_id` → frame → file location → file name and line), the innermost frame —
//! where JAX records the user's line.

use std::collections::HashMap;

use falcon_xplane::{StatValue, XSpace};
use prost::Message;

use super::proto::{
    HloComputationProto, HloInstructionProto, HloModuleProto, HloProto, OpMetadata, StackFrameIndexProto,
};

/// The plane profilers put program metadata on.
pub const METADATA_PLANE: &str = "/host:metadata";

/// The stat holding a program's serialized `HloProto`.
pub const HLO_PROTO_STAT: &str = "Hlo Proto";

/// One HLO instruction as XLA described it.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct InstructionInfo {
    /// HLO opcode (`fusion`, `dot`, `add`, `custom-call`, …).
    pub opcode: String,
    /// A category for time breakdowns: the opcode, or for a fusion what it fuses (`dot fusion`,
    /// `convolution fusion`, else `<kind> fusion` from its fusion kind, `kLoop` → `loop fusion`).
    pub category: String,
    /// The framework's name scope (`OpMetadata.op_name`); `None` when XLA recorded none.
    pub op_name: Option<String>,
    /// `file:line` of the source that produced it, when recorded.
    pub source: Option<String>,
}

/// Instructions of every program in a capture, by (module name, instruction name).
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default)]
pub struct HloIndex {
    /// (HLO module name, instruction name) → what XLA recorded.
    pub instructions: HashMap<(String, String), InstructionInfo>,
    /// Programs read.
    pub modules: usize,
    /// What could not be read.
    pub notes: Vec<String>,
}

impl HloIndex {
    /// The instruction `name` of module `module` (an empty module name matches when only one program has
    /// an instruction of that name).
    pub fn get(&self, module: &str, name: &str) -> Option<&InstructionInfo> {
        if let Some(info) = self.instructions.get(&(module.to_string(), name.to_string())) {
            return Some(info);
        }
        if module.is_empty() {
            let mut found = self.instructions.iter().filter(|((_, n), _)| n == name);
            let first = found.next()?;
            return found.next().is_none().then_some(first.1);
        }
        None
    }
}

/// Reads every program's `HloProto` from the capture's metadata plane.
pub fn hlo_index(space: &XSpace) -> HloIndex {
    let (modules, notes) = decode_modules(space);
    index_of(&modules, notes)
}

/// The index of already decoded programs (`notes`: what could not be read).
pub(crate) fn index_of(modules: &[HloModuleProto], notes: Vec<String>) -> HloIndex {
    let mut index = HloIndex { modules: modules.len(), notes, ..HloIndex::default() };
    for module in modules {
        add_module(&mut index, module);
    }
    index
}

/// Every program's module on the capture's metadata plane, in program-id order, and what could not be read.
pub(crate) fn decode_modules(space: &XSpace) -> (Vec<HloModuleProto>, Vec<String>) {
    let (programs, notes) = decode_programs(space);
    (programs.into_iter().map(|(_, m)| m).collect(), notes)
}

/// [`decode_modules`] with each module's program id (the id of its event metadata on the metadata plane, the
/// `program_id` device events carry).
pub(crate) fn decode_programs(space: &XSpace) -> (Vec<(u64, HloModuleProto)>, Vec<String>) {
    let (mut modules, mut notes) = (Vec::new(), Vec::new());
    let Some(plane) = space.plane_by_name(METADATA_PLANE) else { return (modules, notes) };
    let Some(stat_id) = plane.stat_metadata_by_name(HLO_PROTO_STAT).map(|m| m.id) else { return (modules, notes) };
    let id_stat = plane.stat_metadata_by_name("program_id").map(|m| m.id);
    let mut programs: Vec<_> = plane.event_metadata.values().collect();
    programs.sort_by_key(|m| m.id);
    for program in programs {
        // The program id: its `program_id` stat, else the `(N)` its name ends with, else the metadata id.
        let from_stat = id_stat
            .and_then(|id| program.stats.iter().find(|s| s.metadata_id == id))
            .and_then(|s| s.value.as_i64())
            .and_then(|v| u64::try_from(v).ok());
        let from_name =
            program.name.strip_suffix(')').and_then(|n| n.rsplit_once('(')).and_then(|(_, id)| id.parse::<u64>().ok());
        let pid = from_stat.or(from_name).unwrap_or_else(|| u64::try_from(program.id).unwrap_or(0));
        for stat in program.stats.iter().filter(|s| s.metadata_id == stat_id) {
            let StatValue::Bytes(bytes) = &stat.value else { continue };
            match HloProto::decode(bytes.as_slice()) {
                Ok(HloProto { hlo_module: Some(module) }) => modules.push((pid, module)),
                Ok(_) => notes.push(format!("program `{}`: its HloProto has no module", program.name)),
                Err(e) => notes.push(format!("program `{}`: HloProto not readable ({e})", program.name)),
            }
        }
    }
    (modules, notes)
}

fn add_module(index: &mut HloIndex, module: &HloModuleProto) {
    let by_id: HashMap<i64, &HloComputationProto> = module.computations.iter().map(|c| (c.id, c)).collect();
    for computation in &module.computations {
        for instr in &computation.instructions {
            let meta = instr.metadata.as_ref();
            let op_name = meta.map(|m| m.op_name.trim()).filter(|s| !s.is_empty()).map(str::to_string);
            let info = InstructionInfo {
                opcode: instr.opcode.clone(),
                category: category(instr, &by_id),
                op_name,
                source: meta.and_then(|m| source_of(m, module.stack_frame_index.as_ref())),
            };
            index.instructions.insert((module.name.clone(), instr.name.clone()), info);
        }
    }
}

/// The category of an instruction (see [`InstructionInfo::category`]).
fn category(instr: &HloInstructionProto, computations: &HashMap<i64, &HloComputationProto>) -> String {
    if instr.opcode != "fusion" {
        return instr.opcode.clone();
    }
    // What the fused computation does: the heaviest kind of op inside decides.
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<i64> = instr.called_computation_ids.clone();
    let (mut dot, mut conv) = (false, false);
    while let Some(id) = stack.pop() {
        if !seen.insert(id) || seen.len() > 1_000 {
            continue;
        }
        let Some(c) = computations.get(&id) else { continue };
        for i in &c.instructions {
            dot |= i.opcode == "dot";
            conv |= i.opcode == "convolution";
            stack.extend(&i.called_computation_ids);
        }
    }
    if conv {
        return "convolution fusion".into();
    }
    if dot {
        return "dot fusion".into();
    }
    let kind = instr.fusion_kind.strip_prefix('k').unwrap_or(&instr.fusion_kind).to_ascii_lowercase();
    if kind.is_empty() {
        "fusion".into()
    } else {
        format!("{kind} fusion")
    }
}

pub(crate) fn source_of(meta: &OpMetadata, frames: Option<&StackFrameIndexProto>) -> Option<String> {
    if !meta.source_file.is_empty() && meta.source_line > 0 {
        return Some(format!("{}:{}", meta.source_file, meta.source_line));
    }
    let frames = frames?;
    // Ids are 1-based positions in the flat arrays; 0 means unset.
    let at = |v: i32| usize::try_from(v).ok().and_then(|v| v.checked_sub(1));
    let frame = frames.stack_frames.get(at(meta.stack_frame_id)?)?;
    let location = frames.file_locations.get(at(frame.file_location_id)?)?;
    let file = frames.file_names.get(at(location.file_name_id)?)?;
    (location.line > 0).then(|| format!("{file}:{}", location.line))
}

#[cfg(test)]
mod tests {
    use super::super::proto::{FileLocation, StackFrame};
    use super::*;

    fn instr(name: &str, opcode: &str, op_name: &str, frame: i32) -> HloInstructionProto {
        HloInstructionProto {
            name: name.into(),
            opcode: opcode.into(),
            metadata: Some(OpMetadata { op_name: op_name.into(), stack_frame_id: frame, ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn categories_scopes_and_source_lines_from_a_module() {
        let fused = HloComputationProto {
            name: "fused".into(),
            id: 7,
            instructions: vec![instr("p", "parameter", "", 0), instr("d", "dot", "", 0)],
            ..Default::default()
        };
        let mut fusion = instr("fusion.3", "fusion", "jit(step)/dot_general", 1);
        fusion.fusion_kind = "kOutput".into();
        fusion.called_computation_ids = vec![7];
        let mut loop_fusion = instr("fusion.4", "fusion", "jit(step)/add", 0);
        loop_fusion.fusion_kind = "kLoop".into();
        let mut add = instr("add.1", "add", "", 0);
        add.metadata = Some(OpMetadata { source_file: "train.py".into(), source_line: 9, ..Default::default() });
        let module = HloModuleProto {
            name: "jit_step".into(),
            computations: vec![
                fused,
                HloComputationProto {
                    name: "main".into(),
                    id: 1,
                    instructions: vec![fusion, loop_fusion, add],
                    ..Default::default()
                },
            ],
            stack_frame_index: Some(StackFrameIndexProto {
                file_names: vec!["model.py".into()],
                file_locations: vec![FileLocation { file_name_id: 1, line: 42 }],
                stack_frames: vec![StackFrame { file_location_id: 1 }],
            }),
            ..Default::default()
        };
        let mut index = HloIndex::default();
        add_module(&mut index, &module);
        let f = index.get("jit_step", "fusion.3").unwrap();
        assert_eq!((f.category.as_str(), f.op_name.as_deref()), ("dot fusion", Some("jit(step)/dot_general")));
        assert_eq!(f.source.as_deref(), Some("model.py:42"));
        assert_eq!(index.get("jit_step", "fusion.4").unwrap().category, "loop fusion");
        let a = index.get("", "add.1").unwrap();
        assert_eq!((a.category.as_str(), a.op_name.as_deref(), a.source.as_deref()), ("add", None, Some("train.py:9")));
        assert!(index.get("other", "add.1").is_none());
        // The bytes round-trip through prost, and garbage is an error, never a panic.
        let bytes = HloProto { hlo_module: Some(module) }.encode_to_vec();
        assert_eq!(HloProto::decode(bytes.as_slice()).unwrap().hlo_module.unwrap().computations.len(), 2);
        for cut in [1, bytes.len() / 2, bytes.len() - 1] {
            let _ = HloProto::decode(&bytes[..cut]);
        }
        assert!(HloProto::decode(&[0xff, 0xff, 0xff][..]).is_err());
    }
}
