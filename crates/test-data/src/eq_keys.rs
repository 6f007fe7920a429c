//! Key lists for the equality-set lookup of long `jeq #k` chains
//! (`chain::EqSets`), shared by the layers that build one (the chain
//! tables themselves, the classic interpreter's compile) so that both
//! refuse the same shapes.

/// Chains of `jeq #k` keys a lookup table must refuse, named for
/// messages: a repeated key (the first match would be lost), keys spread
/// too far apart for a dense table, and a run of `short` distinct keys
/// (pass fewer than the fewest tests a table is built for).
pub fn refused(short: u32) -> [(&'static str, Vec<u32>); 3] {
    let mut repeated: Vec<u32> = (0..40).collect();
    if let Some(last) = repeated.last_mut() {
        *last = 5;
    }
    let spread: Vec<u32> = (0..40).map(|i| i * 1000).collect();
    [("repeated", repeated), ("spread", spread), ("short", (0..short).collect())]
}
