//! Key lists for the equality-set lookup of long `jeq #k` chains
//! (`chain::EqSets`), shared by the layers that build one (the chain
//! tables themselves, the classic interpreter's compile) so that both
//! refuse the same shapes.

/// Chains of `jeq #k` keys a lookup table must refuse, named for
/// messages: keys spread too far apart for a dense table, and a run of
/// `short` distinct keys (pass fewer than the fewest tests a table is
/// built for).
pub fn refused(short: u32) -> [(&'static str, Vec<u32>); 2] {
    let spread: Vec<u32> = (0..40).map(|i| i * 1000).collect();
    [("spread", spread), ("short", (0..short).collect())]
}

/// 40 keys in which some constants stand more than once (OpenSSH's
/// `nr == futex` per allowed futex op): a table takes them, each
/// constant's first test being the one a scan leaves at. 5 comes back
/// last, 7 three times, and one key (300) lies far above the rest.
pub fn repeated() -> Vec<u32> {
    let mut keys: Vec<u32> = (0..36).collect();
    keys.extend([7, 300, 7, 5]);
    keys
}
