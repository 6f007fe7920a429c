//! Classic pcap capture files (the libpcap savefile format).

/// `LINKTYPE_ETHERNET`.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// `LINKTYPE_RAW` (raw IPv4/IPv6).
pub const LINKTYPE_RAW: u32 = 101;

/// One packet record.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// The captured bytes.
    pub data: &'a [u8],
    /// The length of the packet on the wire.
    pub orig_len: u32,
}

/// A parsed capture.
#[derive(Debug)]
pub struct Capture<'a> {
    pub link_type: u32,
    pub records: Vec<Record<'a>>,
}

/// Why a file is not a usable pcap capture.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PcapError {
    #[error("not a pcap file (magic {0:#010x}); pcapng is not supported, convert with `editcap -F pcap`")]
    Magic(u32),
    #[error("truncated global header")]
    ShortHeader,
    #[error("link type {0} is not supported (Ethernet = 1 and raw IP = 101 are)")]
    LinkType(u32),
    #[error("record {index} at byte {offset}: truncated")]
    Truncated { index: usize, offset: usize },
}

fn u32_at(b: &[u8], off: usize, be: bool) -> Option<u32> {
    let s: [u8; 4] = b.get(off..off + 4)?.try_into().ok()?;
    Some(if be { u32::from_be_bytes(s) } else { u32::from_le_bytes(s) })
}

/// Parses a pcap file (either byte order, micro- or nanosecond timestamps).
pub fn parse(bytes: &[u8]) -> Result<Capture<'_>, PcapError> {
    let magic = u32_at(bytes, 0, false).ok_or(PcapError::ShortHeader)?;
    let be = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => false,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => true,
        m => return Err(PcapError::Magic(m)),
    };
    let link_type = u32_at(bytes, 20, be).ok_or(PcapError::ShortHeader)? & 0x0fff_ffff;
    if link_type != LINKTYPE_ETHERNET && link_type != LINKTYPE_RAW {
        return Err(PcapError::LinkType(link_type));
    }
    let mut records = Vec::new();
    let mut off = 24;
    while off < bytes.len() {
        let index = records.len();
        let trunc = PcapError::Truncated { index, offset: off };
        let incl = u32_at(bytes, off + 8, be).ok_or(trunc.clone())? as usize;
        let orig_len = u32_at(bytes, off + 12, be).ok_or(trunc.clone())?;
        let data = bytes.get(off + 16..off + 16 + incl).ok_or(trunc)?;
        records.push(Record { data, orig_len });
        off += 16 + incl;
    }
    Ok(Capture { link_type, records })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(be: bool, packets: &[(&[u8], u32)]) -> Vec<u8> {
        let w = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut out = Vec::new();
        out.extend(w(0xa1b2_c3d4));
        out.extend(if be { 2u16.to_be_bytes() } else { 2u16.to_le_bytes() });
        out.extend(if be { 4u16.to_be_bytes() } else { 4u16.to_le_bytes() });
        out.extend([0; 8]);
        out.extend(w(65535));
        out.extend(w(1));
        for (p, orig) in packets {
            out.extend(w(0));
            out.extend(w(0));
            out.extend(w(p.len() as u32));
            out.extend(w(*orig));
            out.extend(*p);
        }
        out
    }

    #[test]
    fn reads_both_byte_orders() {
        for be in [false, true] {
            let f = capture(be, &[(&[1, 2, 3], 3), (&[4; 20], 60)]);
            let c = parse(&f).unwrap();
            assert_eq!(c.link_type, 1);
            assert_eq!(c.records.len(), 2);
            assert_eq!(c.records[1].data, &[4; 20]);
            assert_eq!(c.records[1].orig_len, 60);
        }
    }

    /// Ethernet (1) and raw IP (101) captures are read; the link type's
    /// upper bits (FCS length) are ignored; Linux cooked captures (113)
    /// are refused.
    #[test]
    fn reads_ethernet_and_raw_ip_only() {
        let with_link = |link: u32| {
            let mut f = capture(false, &[(&[0x45; 20], 20)]);
            f[20..24].copy_from_slice(&link.to_le_bytes());
            f
        };
        assert_eq!(parse(&with_link(101)).unwrap().link_type, 101);
        assert_eq!(parse(&with_link(0x1000_0001)).unwrap().link_type, 1);
        assert_eq!(parse(&with_link(113)).unwrap_err(), PcapError::LinkType(113));
    }

    #[test]
    fn rejects_garbage_and_truncation() {
        assert_eq!(parse(&[0; 3]).unwrap_err(), PcapError::ShortHeader);
        assert!(matches!(parse(&[0; 24]).unwrap_err(), PcapError::Magic(0)));
        let mut f = capture(false, &[(&[1, 2, 3], 3)]);
        f.pop();
        assert!(matches!(parse(&f).unwrap_err(), PcapError::Truncated { index: 0, .. }));
    }
}
