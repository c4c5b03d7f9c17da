//! The parts of XLA's `HloProto` Falcon reads, as prost messages with XLA's field numbers
//! (`xla/service/hlo.proto`, `xla/xla_data.proto`); every other field is skipped by the decoder. Enough for the
//! metadata index (opcode, scope, source line), the op signatures of A/B matching and the GPU cost model
//! (shapes and element types, operands, fused computations, dot and convolution dimension numbers, windows,
//! custom-call targets and backend configs).

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub(crate) struct HloProto {
    #[prost(message, optional, tag = "1")]
    pub(crate) hlo_module: Option<HloModuleProto>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct HloModuleProto {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(message, repeated, tag = "3")]
    pub(crate) computations: Vec<HloComputationProto>,
    #[prost(int64, tag = "6")]
    pub(crate) entry_computation_id: i64,
    #[prost(message, optional, tag = "7")]
    pub(crate) schedule: Option<HloScheduleProto>,
    #[prost(message, optional, tag = "17")]
    pub(crate) stack_frame_index: Option<StackFrameIndexProto>,
}

/// The order XLA runs each computation's instructions in (a scheduled module's).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct HloScheduleProto {
    #[prost(map = "int64, message", tag = "1")]
    pub(crate) sequences: std::collections::HashMap<i64, InstructionSequence>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct InstructionSequence {
    #[prost(int64, repeated, packed = "true", tag = "1")]
    pub(crate) instruction_ids: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct HloComputationProto {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(message, repeated, tag = "2")]
    pub(crate) instructions: Vec<HloInstructionProto>,
    #[prost(int64, tag = "5")]
    pub(crate) id: i64,
    #[prost(int64, tag = "6")]
    pub(crate) root_id: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct HloInstructionProto {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(string, tag = "2")]
    pub(crate) opcode: String,
    #[prost(message, optional, tag = "3")]
    pub(crate) shape: Option<ShapeProto>,
    #[prost(message, optional, tag = "7")]
    pub(crate) metadata: Option<OpMetadata>,
    #[prost(int64, tag = "9")]
    pub(crate) parameter_number: i64,
    #[prost(string, tag = "11")]
    pub(crate) fusion_kind: String,
    #[prost(int64, tag = "13")]
    pub(crate) tuple_index: i64,
    #[prost(int64, repeated, packed = "true", tag = "14")]
    pub(crate) dimensions: Vec<i64>,
    #[prost(message, optional, tag = "15")]
    pub(crate) window: Option<Window>,
    #[prost(message, optional, tag = "16")]
    pub(crate) convolution_dimension_numbers: Option<ConvolutionDimensionNumbers>,
    #[prost(string, tag = "28")]
    pub(crate) custom_call_target: String,
    #[prost(message, optional, tag = "30")]
    pub(crate) dot_dimension_numbers: Option<DotDimensionNumbers>,
    #[prost(int64, tag = "35")]
    pub(crate) id: i64,
    #[prost(int64, repeated, packed = "true", tag = "36")]
    pub(crate) operand_ids: Vec<i64>,
    #[prost(int64, repeated, packed = "true", tag = "38")]
    pub(crate) called_computation_ids: Vec<i64>,
    #[prost(bytes = "vec", tag = "43")]
    pub(crate) backend_config: Vec<u8>,
    #[prost(int64, tag = "50")]
    pub(crate) feature_group_count: i64,
    #[prost(int64, tag = "58")]
    pub(crate) batch_group_count: i64,
    /// A collective's groups, the older field (XLA still reads it when `collective_device_list` is absent).
    #[prost(message, repeated, tag = "49")]
    pub(crate) replica_groups: Vec<ReplicaGroup>,
    /// A collective's groups: listed, or as a reshaped iota.
    #[prost(message, optional, tag = "87")]
    pub(crate) collective_device_list: Option<CollectiveDeviceListProto>,
}

/// `xla.ReplicaGroup`: the devices (replica ids) of one group of a collective.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ReplicaGroup {
    #[prost(int64, repeated, packed = "true", tag = "1")]
    pub(crate) replica_ids: Vec<i64>,
}

/// `xla.CollectiveDeviceListProto`: a collective's groups, listed or as an iota list.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct CollectiveDeviceListProto {
    #[prost(message, repeated, tag = "1")]
    pub(crate) replica_groups: Vec<ReplicaGroup>,
    #[prost(message, optional, tag = "2")]
    pub(crate) iota_replica_group_list: Option<IotaReplicaGroupListProto>,
}

/// `xla.IotaReplicaGroupListProto`: only the group count and size are read.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct IotaReplicaGroupListProto {
    #[prost(int64, tag = "1")]
    pub(crate) num_replica_groups: i64,
    #[prost(int64, tag = "2")]
    pub(crate) num_devices_per_group: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct OpMetadata {
    #[prost(string, tag = "2")]
    pub(crate) op_name: String,
    #[prost(string, tag = "3")]
    pub(crate) source_file: String,
    #[prost(int32, tag = "4")]
    pub(crate) source_line: i32,
    #[prost(int32, tag = "15")]
    pub(crate) stack_frame_id: i32,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct StackFrameIndexProto {
    #[prost(string, repeated, tag = "1")]
    pub(crate) file_names: Vec<String>,
    #[prost(message, repeated, tag = "3")]
    pub(crate) file_locations: Vec<FileLocation>,
    #[prost(message, repeated, tag = "4")]
    pub(crate) stack_frames: Vec<StackFrame>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct FileLocation {
    #[prost(int32, tag = "1")]
    pub(crate) file_name_id: i32,
    #[prost(int32, tag = "3")]
    pub(crate) line: i32,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct StackFrame {
    #[prost(int32, tag = "1")]
    pub(crate) file_location_id: i32,
}

/// `xla.ShapeProto`: element type, dimensions, the layout's presence and, for a tuple, its element shapes.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ShapeProto {
    #[prost(int32, tag = "2")]
    pub(crate) element_type: i32,
    #[prost(int64, repeated, packed = "true", tag = "3")]
    pub(crate) dimensions: Vec<i64>,
    #[prost(message, repeated, tag = "4")]
    pub(crate) tuple_shapes: Vec<ShapeProto>,
    #[prost(message, optional, tag = "5")]
    pub(crate) layout: Option<LayoutProto>,
}

/// `xla.LayoutProto`: only `element_size_in_bits` (packed sub-byte types) is read; its presence matters too.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct LayoutProto {
    #[prost(int64, tag = "7")]
    pub(crate) element_size_in_bits: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct DotDimensionNumbers {
    #[prost(int64, repeated, packed = "true", tag = "1")]
    pub(crate) lhs_contracting_dimensions: Vec<i64>,
    #[prost(int64, repeated, packed = "true", tag = "2")]
    pub(crate) rhs_contracting_dimensions: Vec<i64>,
    #[prost(int64, repeated, packed = "true", tag = "3")]
    pub(crate) lhs_batch_dimensions: Vec<i64>,
    #[prost(int64, repeated, packed = "true", tag = "4")]
    pub(crate) rhs_batch_dimensions: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct ConvolutionDimensionNumbers {
    #[prost(int64, tag = "3")]
    pub(crate) kernel_input_feature_dimension: i64,
    #[prost(int64, tag = "4")]
    pub(crate) kernel_output_feature_dimension: i64,
    #[prost(int64, repeated, packed = "true", tag = "6")]
    pub(crate) kernel_spatial_dimensions: Vec<i64>,
    #[prost(int64, tag = "7")]
    pub(crate) input_batch_dimension: i64,
    #[prost(int64, tag = "8")]
    pub(crate) input_feature_dimension: i64,
    #[prost(int64, tag = "9")]
    pub(crate) output_batch_dimension: i64,
    #[prost(int64, tag = "10")]
    pub(crate) output_feature_dimension: i64,
    #[prost(int64, repeated, packed = "true", tag = "11")]
    pub(crate) input_spatial_dimensions: Vec<i64>,
    #[prost(int64, repeated, packed = "true", tag = "12")]
    pub(crate) output_spatial_dimensions: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Window {
    #[prost(message, repeated, tag = "1")]
    pub(crate) dimensions: Vec<WindowDimension>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct WindowDimension {
    #[prost(int64, tag = "1")]
    pub(crate) size: i64,
    #[prost(int64, tag = "2")]
    pub(crate) stride: i64,
    #[prost(int64, tag = "3")]
    pub(crate) padding_low: i64,
    #[prost(int64, tag = "4")]
    pub(crate) padding_high: i64,
    #[prost(int64, tag = "5")]
    pub(crate) window_dilation: i64,
    #[prost(int64, tag = "6")]
    pub(crate) base_dilation: i64,
}

/// `xla.PrimitiveType` values Falcon names (the rest are "other").
pub(crate) mod element {
    pub const S8: i32 = 2;
    pub const S16: i32 = 3;
    pub const S32: i32 = 4;
    pub const S64: i32 = 5;
    pub const U8: i32 = 6;
    pub const U16: i32 = 7;
    pub const U32: i32 = 8;
    pub const U64: i32 = 9;
    pub const F16: i32 = 10;
    pub const F32: i32 = 11;
    pub const F64: i32 = 12;
    pub const TUPLE: i32 = 13;
    pub const C64: i32 = 15;
    pub const BF16: i32 = 16;
    pub const C128: i32 = 18;
}

/// Bits of one element of `element_type` (0 for tuples, tokens, opaque and unknown types).
pub(crate) fn element_bits(element_type: i32) -> u32 {
    match element_type {
        1 | 2 | 6 => 8,                             // PRED, S8, U8
        19 | 20 | 23 | 24 | 25 | 28 | 29 | 33 => 8, // the F8 types
        3 | 7 | 10 | 16 => 16,                      // S16, U16, F16, BF16
        4 | 8 | 11 => 32,                           // S32, U32, F32
        5 | 9 | 12 | 15 => 64,                      // S64, U64, F64, C64
        18 => 128,                                  // C128
        21 | 22 | 32 => 4,                          // S4, U4, F4E2M1FN
        26 | 27 => 2,                               // S2, U2
        30 | 31 => 1,                               // S1, U1
        _ => 0,
    }
}

/// The element type as XLA prints it (`bf16`, `f32`, `f8e4m3fn`, …).
pub(crate) fn element_name(element_type: i32) -> &'static str {
    match element_type {
        1 => "pred",
        2 => "s8",
        3 => "s16",
        4 => "s32",
        5 => "s64",
        6 => "u8",
        7 => "u16",
        8 => "u32",
        9 => "u64",
        10 => "f16",
        11 => "f32",
        12 => "f64",
        13 => "tuple",
        14 => "opaque",
        15 => "c64",
        16 => "bf16",
        17 => "token",
        18 => "c128",
        19 => "f8e5m2",
        20 => "f8e4m3fn",
        21 => "s4",
        22 => "u4",
        23 => "f8e4m3b11fnuz",
        24 => "f8e5m2fnuz",
        25 => "f8e4m3fnuz",
        26 => "s2",
        27 => "u2",
        28 => "f8e4m3",
        29 => "f8e3m4",
        30 => "s1",
        31 => "u1",
        32 => "f4e2m1fn",
        33 => "f8e8m0fnu",
        _ => "unknown",
    }
}

impl ShapeProto {
    /// Whether this is a tuple.
    pub(crate) fn is_tuple(&self) -> bool {
        self.element_type == element::TUPLE
    }

    /// Elements of an array shape (1 for a scalar; saturating).
    pub(crate) fn elements(&self) -> u64 {
        self.dimensions.iter().fold(1u64, |n, d| n.saturating_mul(u64::try_from(*d).unwrap_or(0)))
    }

    /// Elements of every array in the shape, tuples walked (XLA `ElementsInRecursive`).
    pub(crate) fn elements_recursive(&self) -> u64 {
        if self.is_tuple() {
            self.tuple_shapes.iter().fold(0u64, |n, s| n.saturating_add(s.elements_recursive()))
        } else {
            self.elements()
        }
    }

    /// Bytes of an array shape: its elements at their width (packed sub-byte types rounded up); 0 for a
    /// shape with no layout (XLA's cost analysis counts those as 0), a tuple, a token or an opaque value.
    pub(crate) fn array_bytes(&self) -> u64 {
        if self.is_tuple() || self.layout.is_none() {
            return 0;
        }
        let bits = match self.layout.as_ref().map(|l| l.element_size_in_bits).filter(|b| *b > 0) {
            Some(b) => u64::try_from(b).unwrap_or(0),
            None => u64::from(element_bits(self.element_type)),
        };
        self.elements().saturating_mul(bits).div_ceil(8)
    }

    /// Bytes of every array leaf of the shape (a tuple's elements summed).
    pub(crate) fn leaf_bytes(&self) -> u64 {
        if self.is_tuple() {
            self.tuple_shapes.iter().fold(0u64, |n, s| n.saturating_add(s.leaf_bytes()))
        } else {
            self.array_bytes()
        }
    }

    /// The shape as XLA prints it without its layout: `bf16[8,1024]`, `(f32[2], s8[4])`.
    pub(crate) fn text(&self) -> String {
        if self.is_tuple() {
            let parts: Vec<String> = self.tuple_shapes.iter().map(ShapeProto::text).collect();
            return format!("({})", parts.join(", "));
        }
        let dims: Vec<String> = self.dimensions.iter().map(i64::to_string).collect();
        format!("{}[{}]", element_name(self.element_type), dims.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(element_type: i32, dims: &[i64]) -> ShapeProto {
        ShapeProto {
            element_type,
            dimensions: dims.to_vec(),
            tuple_shapes: vec![],
            layout: Some(LayoutProto::default()),
        }
    }

    #[test]
    fn shapes_count_elements_and_bytes_as_xla_does() {
        let a = array(element::BF16, &[8192, 1024]);
        assert_eq!((a.elements(), a.array_bytes(), a.text()), (8_388_608, 16_777_216, "bf16[8192,1024]".into()));
        let scalar = array(element::F32, &[]);
        assert_eq!((scalar.elements(), scalar.array_bytes()), (1, 4));
        let tuple = ShapeProto {
            element_type: element::TUPLE,
            tuple_shapes: vec![array(element::BF16, &[4, 4]), array(element::S8, &[100])],
            ..Default::default()
        };
        assert_eq!((tuple.array_bytes(), tuple.leaf_bytes(), tuple.elements_recursive()), (0, 132, 116));
        assert_eq!(tuple.text(), "(bf16[4,4], s8[100])");
        let no_layout = ShapeProto { layout: None, ..a.clone() };
        assert_eq!(no_layout.array_bytes(), 0);
        let s4 = array(21, &[3]);
        assert_eq!(s4.array_bytes(), 2, "packed: 12 bits round up to 2 bytes");
        let huge = array(element::F32, &[i64::MAX, 4]);
        assert_eq!(huge.elements(), u64::MAX, "saturates, never wraps");
    }
}
