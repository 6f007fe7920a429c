//! Our documented socket-buffer context for converted socket filters.
//!
//! The kernel's converted socket filters read `struct sk_buff` fields at
//! build-specific offsets and call helpers by address. We cannot match a
//! particular kernel build, so we fix our own layout and helper numbering
//! here; the converter (`convert` crate) emits these offsets and ids, and the
//! interpreter's socket helpers implement them with the kernel's semantics.
//!
//! Context region (`r1` on entry), little-endian, [`CTX_SIZE`] bytes:
//!
//! | offset | size | field | kernel counterpart |
//! |---|---|---|---|
//! | 0  | 8 | `data`: address of the first packet byte | `skb->data` |
//! | 8  | 4 | `len`: total bytes, linear + paged | `skb->len` |
//! | 12 | 4 | `data_len`: paged (non-linear) bytes | `skb->data_len` |
//! | 16 | 2 | `protocol`, network byte order as stored | `skb->protocol` |
//! | 18 | 1 | `pkt_type` (low 3 bits used) | `PKT_TYPE_OFFSET` bitfield |
//! | 20 | 4 | `mark` | `skb->mark` |
//! | 24 | 2 | `queue_mapping` | `skb->queue_mapping` |
//! | 26 | 2 | `vlan_tci` | `skb->vlan_tci` |
//! | 28 | 2 | `vlan_proto`, network byte order as stored | `skb->vlan_proto` |
//! | 32 | 4 | `vlan_all`: non-zero iff a VLAN tag is present | `skb->vlan_all` |
//! | 36 | 4 | `hash` | `skb->hash` |
//! | 40 | 8 | `dev`: address of the device record, or 0 for none | `skb->dev` |
//! | 48 | 4 | `network_header`: offset of the network header from `data` | `skb->network_header` |
//! | 52 | 4 | `mac_header`: offset of the MAC header from `data`, [`MAC_HEADER_UNSET`] if none | `skb->mac_header` |
//! | 56 | 4 | `cpu`: the value `SKF_AD_CPU` reads | `raw_smp_processor_id()` |
//! | 60 | 4 | `random`: the value `SKF_AD_RANDOM` reads (fixed for reproducibility) | `get_random_u32()` |
//! | 64 | 4 | device record: `ifindex` | `net_device.ifindex` |
//! | 68 | 2 | device record: `type` | `net_device.type` |
//!
//! The device record lives inside the context itself (at [`DEV_RECORD`]), so
//! `dev` points at `ctx + 64` when a device is present.

/// Size of the context region.
pub const CTX_SIZE: usize = 72;

pub const OFF_DATA: i16 = 0;
pub const OFF_LEN: i16 = 8;
pub const OFF_DATA_LEN: i16 = 12;
pub const OFF_PROTOCOL: i16 = 16;
pub const OFF_PKT_TYPE: i16 = 18;
pub const OFF_MARK: i16 = 20;
pub const OFF_QUEUE_MAPPING: i16 = 24;
pub const OFF_VLAN_TCI: i16 = 26;
pub const OFF_VLAN_PROTO: i16 = 28;
pub const OFF_VLAN_ALL: i16 = 32;
pub const OFF_HASH: i16 = 36;
pub const OFF_DEV: i16 = 40;
pub const OFF_NETWORK_HEADER: i16 = 48;
pub const OFF_MAC_HEADER: i16 = 52;
pub const OFF_CPU: i16 = 56;
pub const OFF_RANDOM: i16 = 60;
/// Offset of the device record inside the context.
pub const DEV_RECORD: i16 = 64;
/// `net_device.ifindex`, relative to the device record.
pub const DEV_OFF_IFINDEX: i16 = 0;
/// `net_device.type`, relative to the device record.
pub const DEV_OFF_TYPE: i16 = 4;
/// `mac_header` value meaning "no MAC header set" (`skb_mac_header_was_set()` false).
pub const MAC_HEADER_UNSET: u32 = 0xffff;

/// Helper ids the converter emits in `call` instructions (our numbering; the
/// kernel calls these functions by address relative to `__bpf_call_base`).
pub mod helper {
    /// `bpf_skb_load_helper_8(skb, data, headlen, offset)`.
    pub const SKB_LOAD_8: i32 = 0x1001;
    /// `bpf_skb_load_helper_16(skb, data, headlen, offset)`.
    pub const SKB_LOAD_16: i32 = 0x1002;
    /// `bpf_skb_load_helper_32(skb, data, headlen, offset)`.
    pub const SKB_LOAD_32: i32 = 0x1003;
    /// `bpf_skb_get_nlattr(skb, a, x)`.
    pub const SKB_GET_NLATTR: i32 = 0x1004;
    /// `bpf_skb_get_nlattr_nest(skb, a, x)`.
    pub const SKB_GET_NLATTR_NEST: i32 = 0x1005;
    /// `bpf_get_raw_cpu_id()`.
    pub const GET_RAW_CPU_ID: i32 = 0x1006;
    /// `bpf_skb_get_pay_offset(skb)`.
    pub const SKB_GET_PAY_OFFSET: i32 = 0x1007;
    /// `bpf_user_rnd_u32()`.
    pub const USER_RND_U32: i32 = 0x1008;
}
