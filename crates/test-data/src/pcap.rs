//! libpcap savefiles (little-endian, microsecond timestamps,
//! `LINKTYPE_ETHERNET`): written from packets for the CLI's `--pcap`
//! tests and the committed capture, read back into bytes.

/// One record: the captured bytes and the length on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The bytes captured (`incl_len` of them).
    pub data: Vec<u8>,
    /// `orig_len`: the packet's length on the wire.
    pub wire_len: u32,
}

/// The global header's magic, little-endian with microsecond timestamps.
const MAGIC: u32 = 0xa1b2_c3d4;

/// A savefile of `records` (snap length 65535, every timestamp 0).
pub fn write(records: &[Record]) -> Vec<u8> {
    write_with(records, 65535, |_| (0, 0))
}

/// A savefile of `records` with snap length `snaplen` and `(seconds,
/// microseconds)` of record `i` from `time(i)`.
pub fn write_with(records: &[Record], snaplen: u32, time: impl Fn(usize) -> (u32, u32)) -> Vec<u8> {
    let mut out = Vec::new();
    // magic, version 2.4, thiszone, sigfigs, snaplen, LINKTYPE_ETHERNET.
    out.extend(MAGIC.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0u8; 8]);
    out.extend(snaplen.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    for (i, r) in records.iter().enumerate() {
        let (sec, usec) = time(i);
        for w in [sec, usec, r.data.len() as u32, r.wire_len] {
            out.extend(w.to_le_bytes());
        }
        out.extend(&r.data);
    }
    out
}

/// The records of a little-endian savefile.
pub fn read(bytes: &[u8]) -> Result<Vec<Record>, String> {
    let word = |at: usize| -> Result<u32, String> {
        let b: [u8; 4] =
            bytes.get(at..at + 4).and_then(|b| b.try_into().ok()).ok_or(format!("truncated at byte {at}"))?;
        Ok(u32::from_le_bytes(b))
    };
    if word(0)? != MAGIC {
        return Err("not a little-endian microsecond pcap".into());
    }
    let mut out = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        let (incl, orig) = (word(at + 8)? as usize, word(at + 12)?);
        let data = bytes.get(at + 16..at + 16 + incl).ok_or(format!("record at byte {at} truncated"))?;
        out.push(Record { data: data.to_vec(), wire_len: orig });
        at += 16 + incl;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn records_round_trip() {
        let records = vec![Record { data: vec![1, 2, 3], wire_len: 1500 }, Record { data: vec![], wire_len: 0 }];
        let bytes = write(&records);
        assert_eq!(bytes.len(), 24 + 16 + 3 + 16);
        assert_eq!(read(&bytes).unwrap(), records);
        assert!(read(&bytes[..30]).is_err());
        assert!(read(&[0; 24]).is_err());
    }
}
