//! One event as read: the raw fields the parser takes (`Raw`, `Fields`, `ArgFields`, `LaunchArgs`), the
//! pre-parsed batch whose strings are spans of its arena with every interned string recorded in input order
//! (`PreBatch`), and the serde visitors that fill them.

use super::values::{AnySeed, Dim3Seed, Val};
#[allow(unused_imports)]
use super::*;

/// A `pid` / `tid`: a number, or an interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub(super) enum IdKey {
    #[default]
    None,
    Num(i64),
    Str(u32),
}

/// Fields read from `args`.
#[derive(Clone, Copy, Default)]
pub(super) struct ArgFields {
    pub(super) hlo_op: Option<NameId>,
    pub(super) hlo_module: bool,
    pub(super) hlo_category: Option<u32>,
    pub(super) group_id: Option<i64>,
    pub(super) step_num: Option<i64>,
    pub(super) root: Option<i64>,
    pub(super) launch: LaunchArgs,
}

/// What a PyTorch (Kineto) GPU event or CUDA call says of a launch: `correlation`, `stream`, `registers per
/// thread`, `shared memory`, `grid`, `block`, `est. achieved occupancy %`.
#[derive(Clone, Copy, Default)]
pub(super) struct LaunchArgs {
    pub(super) correlation: Option<i64>,
    pub(super) stream: Option<i64>,
    pub(super) registers: Option<i64>,
    pub(super) shared_memory: Option<i64>,
    pub(super) grid: Option<[u32; 3]>,
    pub(super) block: Option<[u32; 3]>,
    pub(super) occupancy: Option<f64>,
    /// What a collective's record says of its message (kept beside the launch's, in the same table).
    pub(super) comm: CommArgs,
}

impl LaunchArgs {
    pub(super) fn any(&self) -> bool {
        self.correlation.is_some() || self.stream.is_some() || self.comm.any()
    }
}

/// What PyTorch records of a collective's message: `In msg nelems` / `Out msg nelems`, `dtype` and `Group size`
/// (`record_param_comms`, NCCL kernels), or `Input Dims` and `Input type` (a `gloo:*` / `nccl:*` range), and its
/// sequence number in its group (`Seq`).
#[derive(Clone, Copy, Default)]
pub(super) struct CommArgs {
    pub(super) in_elems: Option<u64>,
    pub(super) out_elems: Option<u64>,
    pub(super) elem_bytes: Option<u8>,
    pub(super) group_size: Option<i64>,
    pub(super) seq: Option<i64>,
    /// `Process Group Name`, interned in the parser's names.
    pub(super) group: Option<NameId>,
}

impl CommArgs {
    pub(super) fn any(&self) -> bool {
        self.in_elems.is_some() || self.out_elems.is_some() || self.seq.is_some()
    }

    /// The message's bytes by NCCL-tests' convention (the larger of input and output), when the record says.
    pub(super) fn bytes(&self) -> Option<u64> {
        let elems = self.in_elems.max(self.out_elems)?;
        elems.checked_mul(u64::from(self.elem_bytes?))
    }
}

/// Fields read from one event.
#[derive(Clone, Copy, Default)]
pub(super) struct Fields {
    pub(super) any: bool,
    pub(super) ph: Option<u8>,
    pub(super) name: Option<NameId>,
    pub(super) cat: Option<u32>,
    pub(super) pid: IdKey,
    pub(super) tid: IdKey,
    pub(super) ts: Option<f64>,
    pub(super) dur: Option<f64>,
    pub(super) args: ArgFields,
}

pub(super) const F_HLO_OP: u8 = 1;
pub(super) const F_HLO_MODULE: u8 = 2;
pub(super) const F_INSTANT: u8 = 4;

/// One kept event before classification.
#[derive(Clone, Copy)]
pub(super) struct Raw {
    pub(super) start_ps: i64,
    pub(super) dur_ps: i64,
    pub(super) name: NameId,
    pub(super) track: u32,
    /// `hlo_category` arg if any, else `cat` (interned in `cats`); `u32::MAX` when none.
    pub(super) cat: u32,
    pub(super) flags: u8,
    /// Index into `Parser::launch_args`; `u32::MAX` when the event has none.
    pub(super) launch: u32,
}

// ---------------------------------------------------------------------------------------------
// Event parsing: serde reads one event's bytes into a `PreEvent` whose strings are spans of the
// batch's arena, with every string that the parser interns recorded as an `Interned` in input order (the
// interners' contents, e.g. the `cat` values that mark a PyTorch trace, follow that order). `apply`
// then replays them into the `Parser`.

pub(super) type Span = (usize, usize);

#[derive(Clone, Copy)]
pub(super) enum PreId {
    None,
    Num(i64),
    Str(Span),
}

#[derive(Clone, Copy)]
pub(super) enum Interned {
    Name(Option<Span>),
    Cat(Option<Span>),
    Pid(PreId),
    Tid(PreId),
    ArgName(Span),
    HloOp(Option<Span>),
    HloCategory(Option<Span>),
    /// A collective record's `Process Group Name`.
    ProcessGroup(Option<Span>),
}

/// The scalar fields of one event; its `Interned`s end at `ops_end`.
#[derive(Clone, Copy, Default)]
pub(super) struct PreEvent {
    pub(super) any: bool,
    pub(super) ph: Option<u8>,
    pub(super) ts: Option<f64>,
    pub(super) dur: Option<f64>,
    pub(super) hlo_module: bool,
    pub(super) group_id: Option<i64>,
    pub(super) step_num: Option<i64>,
    pub(super) root: Option<i64>,
    pub(super) launch: LaunchArgs,
    pub(super) ops_end: usize,
}

/// Events parsed from one [`RawBatch`], up to its first error.
#[derive(Default)]
pub(super) struct PreBatch {
    pub(super) arena: String,
    pub(super) ops: Vec<Interned>,
    pub(super) events: Vec<PreEvent>,
    pub(super) err: Option<ChromeTraceError>,
}

impl PreBatch {
    pub(super) fn push_str(&mut self, s: &str) -> Span {
        let start = self.arena.len();
        self.arena.push_str(s);
        (start, self.arena.len())
    }

    pub(super) fn push_num(&mut self, n: impl fmt::Display) -> Span {
        use std::fmt::Write;
        let start = self.arena.len();
        let _ = write!(self.arena, "{n}");
        (start, self.arena.len())
    }

    pub(super) fn str(&self, (a, b): Span) -> &str {
        self.arena.get(a..b).unwrap_or("")
    }

    pub(super) fn id(&mut self, v: Val<'_>) -> PreId {
        match v {
            Val::Str(s) => PreId::Str(self.push_str(s)),
            Val::F(f) if f.is_finite() => PreId::Num(f as i64),
            v => v.as_i64().map_or(PreId::None, PreId::Num),
        }
    }
}

pub(super) struct EventSeed<'a> {
    pub(super) pb: &'a mut PreBatch,
    pub(super) ev: &'a mut PreEvent,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(EventVisitor { pb: self.pb, ev: self.ev })
    }
}

pub(super) struct EventVisitor<'a> {
    pub(super) pb: &'a mut PreBatch,
    pub(super) ev: &'a mut PreEvent,
}

#[derive(Clone, Copy)]
pub(super) enum EvKey {
    Ph,
    Name,
    Cat,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    Other,
}

impl<'de> Visitor<'de> for EventVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let EventVisitor { pb, ev } = self;
        while let Some(key) = map.next_key_seed(AnySeed(|v: Val<'_>| match v {
            Val::Str(k) => match k {
                "ph" => EvKey::Ph,
                "name" => EvKey::Name,
                "cat" => EvKey::Cat,
                "pid" => EvKey::Pid,
                "tid" => EvKey::Tid,
                "ts" => EvKey::Ts,
                "dur" => EvKey::Dur,
                "args" => EvKey::Args,
                _ => EvKey::Other,
            },
            _ => EvKey::Other,
        }))? {
            ev.any = true;
            match key {
                EvKey::Ph => {
                    ev.ph = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => s.bytes().next(),
                        _ => None,
                    }))?;
                }
                EvKey::Name => {
                    let name = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        Val::I(n) => Some(pb.push_num(n)),
                        Val::U(n) => Some(pb.push_num(n)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::Name(name));
                }
                EvKey::Cat => {
                    let cat = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::Cat(cat));
                }
                EvKey::Pid => {
                    let id = map.next_value_seed(AnySeed(|v: Val<'_>| pb.id(v)))?;
                    pb.ops.push(Interned::Pid(id));
                }
                EvKey::Tid => {
                    let id = map.next_value_seed(AnySeed(|v: Val<'_>| pb.id(v)))?;
                    pb.ops.push(Interned::Tid(id));
                }
                EvKey::Ts => ev.ts = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_f64()))?,
                EvKey::Dur => ev.dur = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_f64()))?,
                EvKey::Args => map.next_value_seed(ArgsSeed { pb: &mut *pb, ev: &mut *ev })?,
                EvKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

pub(super) struct ArgsSeed<'a> {
    pub(super) pb: &'a mut PreBatch,
    pub(super) ev: &'a mut PreEvent,
}

impl<'de> DeserializeSeed<'de> for ArgsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(ArgsVisitor { pb: self.pb, ev: self.ev })
    }
}

pub(super) struct ArgsVisitor<'a> {
    pub(super) pb: &'a mut PreBatch,
    pub(super) ev: &'a mut PreEvent,
}

#[derive(Clone, Copy)]
pub(super) enum ArgKey {
    Name,
    HloOp,
    HloModule,
    HloCategory,
    GroupId,
    StepNum,
    Root,
    Correlation,
    Stream,
    Registers,
    SharedMemory,
    Grid,
    Block,
    Occupancy,
    InElems,
    OutElems,
    Dtype,
    GroupSize,
    Seq,
    InputDims,
    InputType,
    ProcessGroup,
    Other,
}

impl<'de> Visitor<'de> for ArgsVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ArgsVisitor { pb, ev } = self;
        while let Some(key) = map.next_key_seed(AnySeed(|v: Val<'_>| match v {
            Val::Str(k) => match k {
                "name" => ArgKey::Name,
                "hlo_op" => ArgKey::HloOp,
                "hlo_module" => ArgKey::HloModule,
                "hlo_category" => ArgKey::HloCategory,
                "group_id" => ArgKey::GroupId,
                "step_num" => ArgKey::StepNum,
                "_r" => ArgKey::Root,
                "correlation" => ArgKey::Correlation,
                "stream" => ArgKey::Stream,
                "registers per thread" => ArgKey::Registers,
                "shared memory" => ArgKey::SharedMemory,
                "grid" => ArgKey::Grid,
                "block" => ArgKey::Block,
                "est. achieved occupancy %" => ArgKey::Occupancy,
                "In msg nelems" => ArgKey::InElems,
                "Out msg nelems" => ArgKey::OutElems,
                "dtype" => ArgKey::Dtype,
                "Group size" => ArgKey::GroupSize,
                "Seq" | "seq" => ArgKey::Seq,
                "Process Group Name" => ArgKey::ProcessGroup,
                "Input Dims" => ArgKey::InputDims,
                "Input type" => ArgKey::InputType,
                _ => ArgKey::Other,
            },
            _ => ArgKey::Other,
        }))? {
            match key {
                ArgKey::Name => {
                    let span = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => pb.push_str(s),
                        Val::I(n) => pb.push_num(n),
                        Val::U(n) => pb.push_num(n),
                        _ => (0, 0),
                    }))?;
                    pb.ops.push(Interned::ArgName(span));
                }
                ArgKey::HloOp => {
                    let op = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::HloOp(op));
                }
                ArgKey::HloModule => {
                    ev.hlo_module = map.next_value_seed(AnySeed(|v: Val<'_>| matches!(v, Val::Str(_))))?;
                }
                ArgKey::HloCategory => {
                    let c = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::HloCategory(c));
                }
                ArgKey::GroupId => ev.group_id = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::StepNum => ev.step_num = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::Root => ev.root = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::Correlation => {
                    ev.launch.correlation = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?;
                }
                ArgKey::Stream => ev.launch.stream = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::Registers => {
                    ev.launch.registers = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?;
                }
                ArgKey::SharedMemory => {
                    ev.launch.shared_memory = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?;
                }
                ArgKey::Grid => ev.launch.grid = map.next_value_seed(Dim3Seed)?,
                ArgKey::Block => ev.launch.block = map.next_value_seed(Dim3Seed)?,
                ArgKey::Occupancy => {
                    ev.launch.occupancy = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_f64()))?;
                }
                ArgKey::InElems => {
                    ev.launch.comm.in_elems =
                        map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?.and_then(|n| u64::try_from(n).ok());
                }
                ArgKey::OutElems => {
                    ev.launch.comm.out_elems =
                        map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?.and_then(|n| u64::try_from(n).ok());
                }
                ArgKey::Dtype => {
                    let b = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => crate::timeline::dtype_bytes(s),
                        _ => None,
                    }))?;
                    ev.launch.comm.elem_bytes = ev.launch.comm.elem_bytes.or(b);
                }
                ArgKey::GroupSize => {
                    ev.launch.comm.group_size = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?
                }
                ArgKey::Seq => ev.launch.comm.seq = map.next_value_seed(AnySeed(|v: Val<'_>| v.as_i64()))?,
                ArgKey::InputDims => {
                    let elems = map.next_value_seed(super::values::ElemsSeed)?;
                    if ev.launch.comm.in_elems.is_none() {
                        ev.launch.comm.in_elems = elems;
                    }
                }
                ArgKey::ProcessGroup => {
                    let g = map.next_value_seed(AnySeed(|v: Val<'_>| match v {
                        Val::Str(s) => Some(pb.push_str(s)),
                        Val::I(n) => Some(pb.push_num(n)),
                        Val::U(n) => Some(pb.push_num(n)),
                        _ => None,
                    }))?;
                    pb.ops.push(Interned::ProcessGroup(g));
                }
                ArgKey::InputType => {
                    let b = map.next_value_seed(super::values::FirstTypeSeed)?;
                    ev.launch.comm.elem_bytes = ev.launch.comm.elem_bytes.or(b);
                }
                ArgKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}
