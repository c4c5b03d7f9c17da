//! One program's `HloProto` as a GPU capture stores it on `/host:metadata`: decoded, and every instruction
//! described — XProf's category, the GPU cost model's FLOPs and bytes (fusions through their fused computations,
//! GEMM/convolution/attention custom-calls from their shapes and backend configs), its HLO text and precision; and
//! each collective's message bytes and group size (`profile::hlo::collectives`). No
//! panic (no overflow on huge shapes, no endless recursion through computations that call themselves), bounded
//! memory and time; a proto that does not decode is a note, not an error.

#![no_main]

use falcon_analysis::profile::hlo::GpuHlo;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for (_, size) in falcon_analysis::profile::hlo::collectives::proto_collective_sizes(data) {
        assert!(size.is_none_or(|(bytes, group)| bytes > 0 && group != Some(0)), "a size is a message to a group");
    }
    let hlo = GpuHlo::from_hlo_proto(1, data);
    if hlo.is_empty() {
        assert_eq!(hlo.notes.len(), 1, "a proto that does not decode says why");
        return;
    }
    let names = hlo.instruction_names(1);
    let described = hlo.describe(1, names.iter().map(String::as_str));
    for info in described.values() {
        assert!(!(info.cost.flops < 0.0 || info.cost.bytes_read < 0.0 || info.cost.bytes_written < 0.0), "{info:?}");
    }
});
