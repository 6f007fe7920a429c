//! `bpfconv run`: evaluate a filter on one engine (FORMATS.md §2, §2b).

use clap::{Args, ValueEnum};
use engine::{EngineKind, Outcome, Prepared, SeccompEngine, SocketEngine, SocketOutcome};

use crate::cmd::convert::HookTargetArg;
use crate::cmd::disasm::parse_arch;
use crate::fail::{Failure, Result};
use crate::io::FileArgs;
use std::io::Read;

use crate::io::{parse_hex, read_input};
use crate::out::{outln, Out};
use crate::pcap;
use crate::ModeArg;

/// Output of `--pcap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum PcapFormat {
    /// A summary line (`M of N packets accepted`).
    #[default]
    Text,
    /// One line per packet: `{"packet": i, "ret": N}`.
    Json,
}

/// What `ld len` sees for a captured packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LenSource {
    /// The original wire length of the pcap record (libpcap's `bpf_filter`, as `tcpdump -r`);
    /// the eBPF engine sees `skb->len` = wire length over the captured bytes, loads past them fail.
    #[default]
    Wire,
    /// The captured bytes only (what a socket receives).
    Captured,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Kernel entry point the filter is for.
    #[arg(long, value_enum, default_value_t)]
    mode: ModeArg,
    /// Engine: cbpf, ebpf, cbpf-plain, ebpf-plain, rbpf, rbpf-jit, rbpf-cranelift, kernel, fast, kernel-jit.
    #[arg(long, default_value = "cbpf")]
    engine: String,
    /// Socket filters on kernel-jit: the hook the filter is converted for and run as.
    #[arg(long, value_enum)]
    target: Option<HookTargetArg>,

    /// Seccomp: a JSON Lines file of vectors (FORMATS.md §2).
    #[arg(long, conflicts_with_all = ["nr", "packet", "pcap"])]
    vectors: Option<String>,
    /// With --vectors: compare with each vector's `action` and print `N passed, M failed`.
    #[arg(long, requires = "vectors")]
    check: bool,
    #[command(flatten)]
    input: SingleInputArgs,

    /// Socket: one packet as hex.
    #[arg(long, conflicts_with = "pcap")]
    packet: Option<String>,
    /// Socket: run over every packet of a pcap capture.
    #[arg(long)]
    pcap: Option<String>,
    /// Socket with --pcap: output form.
    #[arg(long, value_enum, default_value_t)]
    format: PcapFormat,
    /// Socket with --pcap: which length `ld len` sees.
    #[arg(long, value_enum, default_value_t)]
    len: LenSource,
    #[command(flatten)]
    skb: SkbArgs,

    /// Print each executed instruction with the machine state (cbpf engine).
    #[arg(long)]
    trace: bool,
}

/// One seccomp input on the command line (`run`, `bench`).
#[derive(Args, Debug)]
pub struct SingleInputArgs {
    /// Seccomp single input: the arch (name or AUDIT_ARCH value).
    #[arg(long, default_value = "x86_64")]
    pub arch: String,
    /// Seccomp single input: syscall number or name (resolved for --arch).
    #[arg(long)]
    pub nr: Option<String>,
    /// Seccomp single input: up to six comma-separated arguments (decimal or 0x hex).
    #[arg(long, default_value = "")]
    pub args: String,
    /// Seccomp single input: the instruction pointer.
    #[arg(long, default_value = "0")]
    pub ip: String,
}

impl SingleInputArgs {
    /// The input, resolved ([`single_input`]).
    pub fn data(&self) -> Result<cbpf::SeccompData> {
        single_input(&self.arch, self.nr.as_deref(), &self.args, &self.ip)
    }
}

/// skb metadata for ancillary loads. Defaults describe a packet received on
/// an Ethernet device: protocol from the frame's EtherType (else IPv4),
/// PACKET_HOST, ifindex 1, ARPHRD_ETHER, everything else 0.
#[derive(Args, Debug)]
pub struct SkbArgs {
    /// `skb->protocol` (host order); default: the Ethernet frame's EtherType.
    #[arg(long)]
    protocol: Option<String>,
    /// `skb->pkt_type` (0 = PACKET_HOST).
    #[arg(long, default_value = "0")]
    pkt_type: String,
    /// `skb->dev->ifindex`; `none` for no device.
    #[arg(long, default_value = "1")]
    ifindex: String,
    /// `skb->dev->type` (1 = ARPHRD_ETHER).
    #[arg(long, default_value = "1")]
    hatype: String,
    /// `skb->mark`.
    #[arg(long, default_value = "0")]
    mark: String,
    /// `skb->queue_mapping`.
    #[arg(long, default_value = "0")]
    queue: String,
    /// `skb->hash`.
    #[arg(long, default_value = "0")]
    rxhash: String,
    /// `skb->vlan_tci`.
    #[arg(long, default_value = "0")]
    vlan_tci: String,
    /// `skb->vlan_proto` (host order).
    #[arg(long, default_value = "0")]
    vlan_proto: String,
    /// What SKF_AD_CPU reads.
    #[arg(long, default_value = "0")]
    cpu: String,
    /// What SKF_AD_RANDOM reads.
    #[arg(long, default_value = "0")]
    random: String,
    /// Offset of the network header (default 14, after an Ethernet header).
    #[arg(long, default_value = "14")]
    net_offset: String,
}

/// Parses a decimal or `0x` hex number.
pub fn number(text: &str, what: &str) -> Result<u64> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    };
    parsed.map_err(|_| Failure::usage(format!("{what}: `{text}` is not a number")))
}

fn small<T: TryFrom<u64>>(text: &str, what: &str) -> Result<T> {
    T::try_from(number(text, what)?).map_err(|_| Failure::usage(format!("{what}: `{text}` is out of range")))
}

/// `bpfconv run`.
pub fn run(args: &RunArgs) -> Result<i32> {
    let kind: EngineKind = args.engine.parse().map_err(Failure::usage)?;
    if args.target.is_some() && !(kind == EngineKind::KernelJit && args.mode == ModeArg::Socket) {
        return Err(Failure::usage("--target is for socket filters on --engine kernel-jit"));
    }
    let insns = args.source.read()?;
    let socket_kernel = kind == EngineKind::Kernel && args.mode == ModeArg::Socket;
    let prog = match cbpf::validate(&insns, args.mode.mode()) {
        Ok(prog) => prog,
        Err(e) if socket_kernel => return Err(Failure::rejected(format!("{e}{}", kernel_also(&insns)))),
        Err(e) => return Err(e.into()),
    };
    let prepared = match Prepared::new(prog) {
        Ok(prepared) => prepared,
        Err(e) if socket_kernel => return Err(Failure::rejected(format!("{e}{}", kernel_also(&insns)))),
        Err(e) => return Err(e.into()),
    };
    let mut out = Out::stdout();
    let code = match args.mode {
        ModeArg::Seccomp => run_seccomp(args, kind, &prepared, &mut out),
        ModeArg::Socket => run_socket(args, kind, &prepared, &mut out),
    }?;
    out.finish()?;
    Ok(code)
}

/// What `SO_ATTACH_FILTER` says of a program our check refused, as a
/// suffix for the error line (the kernel engine compares both).
fn kernel_also(insns: &[cbpf::Insn]) -> String {
    match kernel::socket::attach(insns) {
        Ok(kernel::socket::Attach::Rejected { errno }) => {
            format!("; the kernel refuses it too: {}", std::io::Error::from_raw_os_error(errno))
        }
        Ok(kernel::socket::Attach::Accepted) => "; the kernel ACCEPTS it (a disagreement)".to_string(),
        Ok(kernel::socket::Attach::OverOptmem) => {
            "; the kernel converts it (then refuses it over net.core.optmem_max: a disagreement)".to_string()
        }
        Err(e) => format!("; the kernel could not be asked: {e}"),
    }
}

/// Loads the socket engine; a kernel refusal of a filter our check accepts
/// names the kernel's errno and says that `check` disagrees.
fn socket_engine(kind: EngineKind, prepared: &Prepared, target: HookTargetArg) -> Result<SocketEngine> {
    match SocketEngine::for_hook(kind, prepared, target.target()) {
        Ok(engine) => Ok(engine),
        Err(engine::EngineError::Kernel(kernel::KernelError::FilterRejected { errno, .. })) => {
            Err(attach_refused(errno))
        }
        Err(e) => Err(e.into()),
    }
}

/// `SO_ATTACH_FILTER`'s refusal of a filter our check accepts: over
/// `net.core.optmem_max` (ENOMEM: `__sk_filter_charge()`, the check
/// `sock_kmalloc()` makes), or a disagreement.
fn attach_refused(errno: i32) -> Failure {
    let why = std::io::Error::from_raw_os_error(errno);
    Failure::rejected(if why.kind() == std::io::ErrorKind::OutOfMemory {
        format!("kernel: SO_ATTACH_FILTER: {why}: the converted filter exceeds net.core.optmem_max (`check --mode socket` accepts it: valid, converts)")
    } else {
        format!("kernel: SO_ATTACH_FILTER refused the filter: {why}; `check --mode socket` accepts it (a disagreement)")
    })
}

fn run_seccomp(args: &RunArgs, kind: EngineKind, prepared: &Prepared, out: &mut Out) -> Result<i32> {
    if args.packet.is_some() || args.pcap.is_some() {
        return Err(Failure::usage("--packet and --pcap need --mode socket"));
    }
    if let Some(path) = &args.vectors {
        if path == "-" && args.source.file == "-" {
            return Err(Failure::usage("the filter and --vectors cannot both be read from stdin (`-`)"));
        }
        let mut engine = SeccompEngine::new(kind, prepared)?;
        return stream_vectors(args.check, path, &mut engine, out);
    }
    let data = args.input.data()?;
    if args.trace {
        return trace_seccomp(kind, prepared, &data, out);
    }
    let mut engine = SeccompEngine::new(kind, prepared)?;
    match engine.eval(&data)? {
        Outcome::Action(a) => {
            outln!(out, "{} ({a:#010x})", seccomp::Action::from_u32(a))?;
            Ok(0)
        }
        Outcome::NotObservable(why) => {
            Err(Failure::rejected(format!("engine {kind} cannot observe this input: {why}")))
        }
    }
}

/// One seccomp input from `--arch`, `--nr` (number or name), `--args`
/// (up to six, comma-separated) and `--ip`, as `run` and `bench` take them.
pub fn single_input(arch: &str, nr: Option<&str>, args: &str, ip: &str) -> Result<cbpf::SeccompData> {
    let arch = parse_arch(Some(arch))?.unwrap_or(seccomp::Arch::X86_64);
    let nr_text = nr.ok_or_else(|| Failure::usage("give --vectors FILE or --nr N (with --arch, --args, --ip)"))?;
    let nr = match number(nr_text, "--nr") {
        Ok(n) => {
            u32::try_from(n).map_err(|_| Failure::usage(format!("--nr {nr_text} is out of range")))? | arch.nr_bit()
        }
        Err(_) => seccomp::syscalls::number(arch, nr_text)
            .ok_or_else(|| Failure::usage(format!("--nr: no syscall `{nr_text}` for {arch}")))?,
    };
    let mut sargs = [0u64; 6];
    let given: Vec<&str> = args.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if given.len() > 6 {
        return Err(Failure::usage("--args takes at most 6 values"));
    }
    for (slot, text) in sargs.iter_mut().zip(&given) {
        *slot = number(text, "--args")?;
    }
    Ok(cbpf::SeccompData {
        nr: nr as i32,
        arch: arch.audit_arch(),
        instruction_pointer: number(ip, "--ip")?,
        args: sargs,
    })
}

/// Vectors evaluated per engine call (the kernel engine forks per batch).
const VECTOR_CHUNK: usize = 4096;

/// The longest vectors line accepted.
const MAX_VECTOR_LINE: usize = 1 << 20;

/// Counts of `--check`.
#[derive(Debug, Default)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
}

/// Reads, evaluates and answers the vectors line by line, in bounded chunks:
/// memory stays constant whatever the file's length.
fn stream_vectors(check: bool, path: &str, engine: &mut SeccompEngine<'_>, out: &mut Out) -> Result<i32> {
    use std::io::BufRead;
    let mut input = open_input(path)?;
    let mut tally = Tally::default();
    let mut chunk: Vec<engine::vectors::Vector> = Vec::with_capacity(VECTOR_CHUNK);
    let mut buf = Vec::new();
    let mut line = 0usize;
    let mut seen = 0usize;
    loop {
        buf.clear();
        line += 1;
        let n = (&mut input)
            .take(MAX_VECTOR_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(crate::fail::io(format!("reading {path}")))?;
        if n == 0 {
            break;
        }
        if buf.len() > MAX_VECTOR_LINE {
            return Err(Failure::rejected(format!("{path}: line {line}: longer than {MAX_VECTOR_LINE} bytes")));
        }
        let mut bytes = buf.as_slice();
        if line == 1 {
            bytes = bytes.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(bytes);
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| Failure::rejected(format!("{path}: line {line}: not UTF-8 text: {e}")))?;
        if text.trim().is_empty() {
            continue;
        }
        let v = engine::vectors::parse_line(text.trim_end_matches(['\n', '\r']), line)
            .map_err(|e| Failure::rejected(format!("{path}: {e}")))?;
        seen += 1;
        chunk.push(v);
        if chunk.len() >= VECTOR_CHUNK {
            answer_chunk(check, path, engine, &chunk, &mut tally, out)?;
            chunk.clear();
        }
    }
    answer_chunk(check, path, engine, &chunk, &mut tally, out)?;
    if seen == 0 {
        return Err(Failure::rejected(format!("{path}: no vectors")));
    }
    if check {
        let Tally { passed, failed, skipped } = tally;
        if skipped > 0 {
            outln!(out, "{passed} passed, {failed} failed, {skipped} skipped")?;
        } else {
            outln!(out, "{passed} passed, {failed} failed")?;
        }
        return Ok(if failed > 0 { 1 } else { 0 });
    }
    Ok(0)
}

/// A reader over a file, or stdin for `-`.
pub fn open_input(path: &str) -> Result<Box<dyn std::io::BufRead>> {
    if path == "-" {
        Ok(Box::new(std::io::stdin().lock()))
    } else {
        let f = std::fs::File::open(path).map_err(crate::fail::io(format!("reading {path}")))?;
        Ok(Box::new(std::io::BufReader::new(f)))
    }
}

fn answer_chunk(
    check: bool,
    path: &str,
    engine: &mut SeccompEngine<'_>,
    vectors: &[engine::vectors::Vector],
    tally: &mut Tally,
    out: &mut Out,
) -> Result<()> {
    if vectors.is_empty() {
        return Ok(());
    }
    let inputs: Vec<cbpf::SeccompData> = vectors.iter().map(|v| v.data).collect();
    let outcomes = engine.eval_batch(&inputs)?;
    for (v, o) in vectors.iter().zip(&outcomes) {
        if !check {
            match o {
                Outcome::Action(a) => outln!(out, "{{\"action\": {a}}}")?,
                Outcome::NotObservable(why) => {
                    outln!(out, "{{\"action\": null, \"not_observable\": {}}}", json_str(why))?
                }
            }
            continue;
        }
        match (o, v.action) {
            (_, None) => {
                return Err(Failure::rejected(format!("{path}: line {}: no `action` to check against", v.line)))
            }
            (Outcome::NotObservable(why), Some(_)) => {
                tally.skipped += 1;
                if tally.skipped <= 3 {
                    eprintln!("{path}:{}: skipped, not observable: {why}", v.line);
                }
            }
            (Outcome::Action(a), Some(want)) if *a == want => tally.passed += 1,
            (Outcome::Action(a), Some(want)) => {
                tally.failed += 1;
                if tally.failed <= 10 {
                    eprintln!(
                        "{path}:{}: arch {:#x} nr {} args {:?}: got {} ({a:#010x}), want {} ({want:#010x})",
                        v.line,
                        v.data.arch,
                        v.data.nr,
                        v.data.args,
                        seccomp::Action::from_u32(*a),
                        seccomp::Action::from_u32(want)
                    );
                }
            }
        }
    }
    Ok(())
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn trace_seccomp(kind: EngineKind, prepared: &Prepared, data: &cbpf::SeccompData, out: &mut Out) -> Result<i32> {
    if kind != EngineKind::Cbpf {
        return Err(Failure::usage(format!("--trace is available on the cbpf engine (not {kind})")));
    }
    let interp = cbpf::Interp::new(prepared.program());
    let mut failed = None;
    let ret = interp.trace_seccomp(&data.to_bytes(), step_printer(prepared.program(), out, &mut failed))?;
    if let Some(f) = failed {
        return Err(f);
    }
    outln!(out, "=> {} ({ret:#010x})", seccomp::Action::from_u32(ret))?;
    Ok(0)
}

/// Prints one traced step: the instruction as `tcpdump -d` shows it, then A, X and M[].
/// The first write error is kept in `failed`; later steps print nothing.
fn step_printer<'a>(
    prog: &cbpf::Program,
    out: &'a mut Out,
    failed: &'a mut Option<Failure>,
) -> impl FnMut(&cbpf::TraceStep) + 'a {
    let lines: Vec<String> = cbpf::text::print_pcap(prog.original()).lines().map(str::to_string).collect();
    move |s: &cbpf::TraceStep| {
        if failed.is_some() {
            return;
        }
        let mem: Vec<String> = s.mem.iter().map(|m| format!("{m:x}")).collect();
        let text = lines.get(s.pc.0).map(String::as_str).unwrap_or("?");
        if let Err(f) = outln!(out, "{text:<40} A={:#010x} X={:#010x} M=[{}]", s.a, s.x, mem.join(" ")) {
            *failed = Some(f);
        }
    }
}

/// One `--format json` line: `ret` (the return value, or what the kernel
/// kept of a packet it shortened), `ret_at_least` (the kernel kept the
/// whole packet), or `not_observable` with the reason.
fn json_line(i: usize, outcome: &SocketOutcome) -> String {
    use kernel::socket::Delivery;
    match outcome {
        SocketOutcome::Ret(r) => format!("{{\"packet\": {i}, \"ret\": {r}}}"),
        SocketOutcome::Delivered(Delivery::Dropped) => format!("{{\"packet\": {i}, \"ret\": 0}}"),
        SocketOutcome::Delivered(Delivery::Kept { kept, len }) if kept < len => {
            format!("{{\"packet\": {i}, \"ret\": {kept}}}")
        }
        SocketOutcome::Delivered(Delivery::Kept { len, .. }) => {
            format!("{{\"packet\": {i}, \"ret_at_least\": {}}}", (*len).max(1))
        }
        other => {
            let why = other.to_string();
            let why = why.strip_prefix("not-observable: ").unwrap_or(&why);
            format!("{{\"packet\": {i}, \"not_observable\": {}}}", serde_json::Value::from(why))
        }
    }
}

fn skb_for<'a>(args: &SkbArgs, data: &'a [u8]) -> Result<cbpf::Skb<'a>> {
    let mut skb = cbpf::Skb::test_bpf(data);
    let ethertype = match (data.get(12), data.get(13)) {
        (Some(&hi), Some(&lo)) => u16::from_be_bytes([hi, lo]),
        _ => 0x0800,
    };
    skb.protocol = match &args.protocol {
        Some(p) => small(p, "--protocol")?,
        None => ethertype,
    };
    skb.pkt_type = small(&args.pkt_type, "--pkt-type")?;
    skb.dev = if args.ifindex == "none" {
        None
    } else {
        Some(cbpf::NetDevice { ifindex: small(&args.ifindex, "--ifindex")?, hatype: small(&args.hatype, "--hatype")? })
    };
    skb.mark = small(&args.mark, "--mark")?;
    skb.queue_mapping = small(&args.queue, "--queue")?;
    skb.rxhash = small(&args.rxhash, "--rxhash")?;
    skb.vlan_tci = small(&args.vlan_tci, "--vlan-tci")?;
    skb.vlan_proto = small(&args.vlan_proto, "--vlan-proto")?;
    skb.cpu = small(&args.cpu, "--cpu")?;
    skb.random = small(&args.random, "--random")?;
    skb.network_offset = small::<usize>(&args.net_offset, "--net-offset")?.min(data.len());
    skb.mac_offset = Some(0);
    Ok(skb)
}

fn run_socket(args: &RunArgs, kind: EngineKind, prepared: &Prepared, out: &mut Out) -> Result<i32> {
    if args.vectors.is_some() || args.input.nr.is_some() {
        return Err(Failure::usage(
            "--vectors and --nr are for seccomp filters; socket filters take --packet or --pcap",
        ));
    }
    let mut engine = socket_engine(kind, prepared, args.target.unwrap_or_default())?;
    if let Some(hex) = &args.packet {
        let data = parse_hex(hex)?;
        let skb = skb_for(&args.skb, &data)?;
        if args.trace {
            if kind != EngineKind::Cbpf {
                return Err(Failure::usage(format!("--trace is available on the cbpf engine (not {kind})")));
            }
            let mut failed = None;
            let ret = cbpf::Interp::new(prepared.program())
                .trace_socket(&skb, step_printer(prepared.program(), out, &mut failed))?;
            if let Some(f) = failed {
                return Err(f);
            }
            outln!(out, "=> {ret}")?;
            return Ok(0);
        }
        outln!(out, "{}", engine.eval(&skb)?)?;
        return Ok(0);
    }
    let Some(path) = &args.pcap else {
        return Err(Failure::usage("socket filters need --packet HEX or --pcap FILE"));
    };
    let bytes = read_input(path)?;
    let capture = pcap::parse(&bytes).map_err(|e| Failure::rejected(format!("{path}: {e}")))?;
    let (mut accepted, mut total, mut unobservable) = (0usize, 0usize, 0usize);
    for (i, rec) in capture.records.iter().enumerate() {
        let mut skb = skb_for(&args.skb, rec.data)?;
        if capture.link_type == pcap::LINKTYPE_RAW {
            skb.network_offset = 0;
            skb.mac_offset = None;
            if args.skb.protocol.is_none() {
                skb.protocol = match rec.data.first().map(|b| b >> 4) {
                    Some(6) => 0x86dd,
                    _ => 0x0800,
                };
            }
        }
        if args.len == LenSource::Wire {
            skb.wire_len = Some(rec.orig_len);
        }
        let outcome = engine.eval(&skb)?;
        total += 1;
        match outcome.accepted() {
            Some(true) => accepted += 1,
            Some(false) => {}
            None => unobservable += 1,
        }
        if args.format == PcapFormat::Json {
            outln!(out, "{}", json_line(i, &outcome))?;
        }
    }
    if args.format == PcapFormat::Text {
        if unobservable == 0 {
            outln!(out, "{accepted} of {total} packets accepted")?;
        } else {
            outln!(out, "{accepted} of {total} packets accepted, {unobservable} not observable")?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests;
