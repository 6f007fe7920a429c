//! bpfconv's leaf test crate: it depends on no bpfconv crate, so every
//! crate's own tests can use it (regex keeps its test data readers in
//! `regex-test` for the same reason). Oracles and generators stay above,
//! in `bpfconv-test-kit`.
//!
//! - [`require`]: what a test needs from the host (the running kernel's
//!   seccomp, `SO_ATTACH_FILTER`, bpf(2), prlimit, libseccomp, ...) and the
//!   one way a test says one is missing: `SKIPPED: <test>: <why>` on a
//!   developer's machine, a failure under `CI=true` or when
//!   `BPFCONV_REQUIRE` names it.
//! - Readers of `testdata/` into plain numbers and bytes: [`filters`] (the
//!   seccomp filters and their vectors), [`converted`] (the converter's
//!   output for them and for the chain filetests), [`vectors`] (JSON Lines),
//!   [`filetest`] (the converter, chain and socket filetests), [`pcap`]
//!   (savefiles, written and read), [`test_bpf`] (lib/test_bpf.c's classic
//!   suite); [`paths`] finds the folder.
//! - [`eq_keys`]: the `jeq #k` key lists every builder of an equality-set
//!   lookup refuses.
//! - [`programs`]: raw classic programs of one shape (reloads of words a
//!   `jeq` settled, which the interpreters' own tests and the converter's
//!   share; libseccomp's allow-list of one argument's values, which the
//!   analyses' tests share); the generators that need an instruction set
//!   stay above.

pub mod converted;
pub mod eq_keys;
pub mod filetest;
pub mod filters;
pub mod paths;
pub mod pcap;
pub mod programs;
pub mod require;
pub mod rng;
pub mod test_bpf;
pub mod vectors;

/// A classic instruction as stored (`struct sock_filter`): plain numbers,
/// for each crate's tests to turn into their own type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawInsn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

impl RawInsn {
    /// Little-endian 8-byte records (`NAME.bpf`, what the kernel's
    /// `sock_fprog` holds on x86_64).
    pub fn records(bytes: &[u8]) -> Result<Vec<RawInsn>, String> {
        if bytes.is_empty() || bytes.len() % 8 != 0 {
            return Err(format!("{} bytes is not a whole number of 8-byte records", bytes.len()));
        }
        Ok(bytes
            .chunks_exact(8)
            .filter_map(|c| <[u8; 8]>::try_from(c).ok())
            .map(|[c0, c1, jt, jf, k0, k1, k2, k3]| RawInsn {
                code: u16::from_le_bytes([c0, c1]),
                jt,
                jf,
                k: u32::from_le_bytes([k0, k1, k2, k3]),
            })
            .collect())
    }

    /// `insns` as little-endian 8-byte records, what [`RawInsn::records`]
    /// reads.
    pub fn to_records(insns: &[RawInsn]) -> Vec<u8> {
        insns
            .iter()
            .flat_map(|i| {
                let mut record = [0u8; 8];
                record[..2].copy_from_slice(&i.code.to_le_bytes());
                record[2] = i.jt;
                record[3] = i.jf;
                record[4..].copy_from_slice(&i.k.to_le_bytes());
                record
            })
            .collect()
    }
}
