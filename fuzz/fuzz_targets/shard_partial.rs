//! A shard's partial result as a fan-out's merge reads it (`profile-shard.cbor`, written by a cluster job, so
//! untrusted): decoded, and when it decodes, folded into a merge of as many shards as it says and finished with
//! every profile tool that does not need the capture itself. No panic; an error names the document.

#![no_main]

use falcon_analysis::profile::partial::{decode_shard, ShardMerge};
use falcon_analysis::profile::{AnalyzeOptions, Tool};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let partial = match decode_shard(data, "partial.cbor") {
        Ok(p) => p,
        Err(e) => return falcon_fuzz::check_error(&e.to_string(), "partial.cbor", data),
    };
    let options = AnalyzeOptions {
        tools: vec![Tool::Ops, Tool::Hlo, Tool::Roofline, Tool::Kernels, Tool::Steps],
        ..AnalyzeOptions::default()
    };
    let mut merge = ShardMerge::new(partial.shards.min(4), &options);
    if merge.add(partial).is_ok() {
        let _ = merge.finish(None);
    }
});
