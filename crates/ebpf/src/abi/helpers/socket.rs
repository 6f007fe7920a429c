//! The eight socket-filter helpers a converted classic program calls
//! (ids in [`crate::abi::skb::helper`]), with the kernel's semantics on the
//! run's [`SkbContext`].

use crate::abi::error::HelperError;
use crate::abi::memory::Memory;
use crate::abi::skb::{be, SkbContext, EFAULT};

/// Mirrors `bpf_skb_load_helper_8/16/32()` in net/core/filter.c (Linux
/// 6.18): `(skb, data, headlen, offset)`. The offset is first converted by
/// `bpf_skb_load_helper_convert_offset()` (negative `SKF_NET_OFF` /
/// `SKF_LL_OFF` offsets become offsets from `data`; `-EFAULT` if that
/// fails); then the linear area is read through `data` when
/// `headlen - offset >= size`, else `skb_copy_bits()` reads the linear and
/// paged data; `-EFAULT` when that fails too. So since Linux 6.15 negative
/// offsets reach paged data as positive ones do.
///
/// # Deviations
/// `skb` (r1) is not dereferenced: the run's [`SkbContext`] is used. A read
/// through `data` that leaves every memory region is a [`HelperError`]
/// where the kernel would read wild memory. Arithmetic is 64-bit (see
/// [`SkbContext::load_helper_convert_offset`]).
fn skb_load(mem: &mut Memory<'_>, args: [u64; 5], size: usize) -> Result<u64, HelperError> {
    let skb = mem.skb().ok_or(HelperError::NoSkb)?;
    let [_, data, headlen, offset, _] = args;
    let Some(offset) = skb.load_helper_convert_offset(offset as i32) else {
        return Ok(EFAULT as u64);
    };
    let bytes: Option<&[u8]> = if i64::from(headlen as i32) - offset >= size as i64 {
        let addr = data.wrapping_add(offset as u64);
        Some(mem.bytes(addr, size).ok_or(HelperError::BadAccess { addr, size })?)
    } else {
        skb.copy_bits_at(offset, size)
    };
    Ok(match bytes {
        Some(b) => u64::from(be(b)),
        None => EFAULT as u64,
    })
}

/// Helper [`helper::SKB_LOAD_8`](crate::abi::skb::helper::SKB_LOAD_8); see `skb_load`'s mirror notes.
pub fn helper_skb_load_8(mem: &mut Memory<'_>, args: [u64; 5]) -> Result<u64, HelperError> {
    skb_load(mem, args, 1)
}

/// Helper [`helper::SKB_LOAD_16`](crate::abi::skb::helper::SKB_LOAD_16) (big-endian result).
pub fn helper_skb_load_16(mem: &mut Memory<'_>, args: [u64; 5]) -> Result<u64, HelperError> {
    skb_load(mem, args, 2)
}

/// Helper [`helper::SKB_LOAD_32`](crate::abi::skb::helper::SKB_LOAD_32) (big-endian result).
pub fn helper_skb_load_32(mem: &mut Memory<'_>, args: [u64; 5]) -> Result<u64, HelperError> {
    skb_load(mem, args, 4)
}

const NLA_HDRLEN: usize = 4;
const NLA_TYPE_MASK: u16 = 0x3fff;

/// `(nla_len, nla_type)` of the header at `pos`, host (little-endian) order.
fn nla_header(buf: &[u8], pos: usize) -> Option<(u16, u16)> {
    let h = buf.get(pos..pos + NLA_HDRLEN)?;
    Some((u16::from_le_bytes([*h.first()?, *h.get(1)?]), u16::from_le_bytes([*h.get(2)?, *h.get(3)?])))
}

/// Mirrors `nla_ok()` in include/net/netlink.h (Linux 6.18).
///
/// # Deviations
/// None.
fn nla_ok(nla_len: u16, remaining: i64) -> bool {
    remaining >= NLA_HDRLEN as i64 && usize::from(nla_len) >= NLA_HDRLEN && i64::from(nla_len) <= remaining
}

/// Mirrors `nla_find()` in lib/nlattr.c (Linux 6.18): the first attribute of
/// type `attrtype` in `buf[start..start + len]`, as an offset into `buf`.
///
/// # Deviations
/// None.
fn nla_find(buf: &[u8], start: usize, len: i64, attrtype: i32) -> Option<usize> {
    let mut pos = start;
    let mut rem = len;
    loop {
        let (nla_len, nla_type) = nla_header(buf, pos)?;
        if !nla_ok(nla_len, rem) {
            return None;
        }
        if i32::from(nla_type & NLA_TYPE_MASK) == attrtype {
            return Some(pos);
        }
        let aligned = (usize::from(nla_len) + 3) & !3;
        rem -= aligned as i64;
        pos += aligned;
    }
}

/// Mirrors `bpf_skb_get_nlattr()` in net/core/filter.c (Linux 6.18):
/// `(skb, a, x)` -> offset from `data` of the attribute of type `x` found
/// from offset `a`, or 0.
///
/// # Deviations
/// `skb` (r1) is not dereferenced: the run's [`SkbContext`] is used.
pub fn helper_skb_get_nlattr(mem: &mut Memory<'_>, args: [u64; 5]) -> Result<u64, HelperError> {
    let skb = mem.skb().ok_or(HelperError::NoSkb)?;
    let (a, x) = (args[1] as u32, args[2] as u32);
    let Some(len) = nlattr_guard(skb) else { return Ok(0) };
    let found = nla_find(skb.packet(), a as usize, len - i64::from(a), x as i32);
    Ok(found.map_or(0, |p| p as u64))
}

/// Common guard of the two nlattr helpers, `skb_is_nonlinear()`; returns
/// `skb->len`. Their other guards, `skb->len < sizeof(struct nlattr)` and
/// `A > skb->len - sizeof(struct nlattr)` (unsigned arithmetic in the
/// kernel), refuse exactly the `a` whose header does not fit in the packet:
/// here the header's read ([`nla_header`]) is bounds-checked and fails on
/// those, with the same answer, 0.
fn nlattr_guard(skb: &SkbContext) -> Option<i64> {
    (skb.linear().len() == skb.packet().len()).then_some(skb.packet().len() as i64)
}

/// Mirrors `bpf_skb_get_nlattr_nest()` in net/core/filter.c (Linux 6.18):
/// the attribute at offset `a` must pass `nla_ok(nla, len - a)`; then
/// `nla_find_nested(nla, x)`, as an offset from `data`, or 0.
///
/// # Deviations
/// `skb` (r1) is not dereferenced: the run's [`SkbContext`] is used.
pub fn helper_skb_get_nlattr_nest(mem: &mut Memory<'_>, args: [u64; 5]) -> Result<u64, HelperError> {
    let skb = mem.skb().ok_or(HelperError::NoSkb)?;
    let (a, x) = (args[1] as u32, args[2] as u32);
    let Some(len) = nlattr_guard(skb) else { return Ok(0) };
    let Some((nla_len, _)) = nla_header(skb.packet(), a as usize) else { return Ok(0) };
    if !nla_ok(nla_len, len - i64::from(a)) {
        return Ok(0);
    }
    // nla_find_nested(): nla_find(nla_data(nla), nla_len(nla), x).
    let inner = i64::from(nla_len) - NLA_HDRLEN as i64;
    let found = nla_find(skb.packet(), a as usize + NLA_HDRLEN, inner, x as i32);
    Ok(found.map_or(0, |p| p as u64))
}

/// Mirrors `bpf_get_raw_cpu_id()` in net/core/filter.c: returns the
/// context's `cpu` field ([`SkbMeta::cpu`](crate::abi::skb::SkbMeta::cpu)).
///
/// # Deviations
/// The value is fixed per context instead of `raw_smp_processor_id()`.
pub fn helper_get_raw_cpu_id(mem: &mut Memory<'_>, _: [u64; 5]) -> Result<u64, HelperError> {
    Ok(u64::from(mem.skb().ok_or(HelperError::NoSkb)?.meta().cpu))
}

/// Mirrors `bpf_user_rnd_u32()` in kernel/bpf/core.c: returns the context's
/// `random` field ([`SkbMeta::random`](crate::abi::skb::SkbMeta::random)).
///
/// # Deviations
/// Fixed per context (reproducible) instead of `prandom_u32_state()`.
pub fn helper_user_rnd_u32(mem: &mut Memory<'_>, _: [u64; 5]) -> Result<u64, HelperError> {
    Ok(u64::from(mem.skb().ok_or(HelperError::NoSkb)?.meta().random))
}

/// Mirrors `bpf_skb_get_pay_offset()` in net/core/filter.c (Linux 6.18),
/// which returns `skb_get_poff(skb)`: returns the context's `pay_offset`
/// field ([`SkbMeta::pay_offset`](crate::abi::skb::SkbMeta::pay_offset), at
/// [`OFF_PAY_OFFSET`](crate::abi::skb::OFF_PAY_OFFSET)).
///
/// # Deviations
/// The flow dissection `skb_get_poff()` performs is done by whoever built
/// the context (this crate has no flow dissector; the project's one model
/// of it is `cbpf::Skb::payload_offset()`), so the value is fixed per
/// context.
pub fn helper_skb_get_pay_offset(mem: &mut Memory<'_>, _: [u64; 5]) -> Result<u64, HelperError> {
    Ok(u64::from(mem.skb().ok_or(HelperError::NoSkb)?.meta().pay_offset))
}
