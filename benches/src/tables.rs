//! The four published tables (SPEC §10) as rows of filter chains and system
//! call inputs. Shared by the `tables` binary and the criterion benches, so
//! both measure exactly the same evaluations.
//!
//! | table | workload | rows |
//! |---|---|---|
//! | A (2013 ARM JIT) | `getppid` | no filter; `seed_fast` (9 insns); `seed_slow` (94); `seed_slow_opt2` (116) |
//! | B (2014 eBPF conversion) | `brk(0)` on the short filters, `chdir(NULL, 1, 0)` on the large ones | no filter (each syscall); `long_jumps_short` (9), `_opt2` (10); `long_jumps_large` (1219), `_opt2` (1250) |
//! | C (2020 `seccomp_benchmark`) | `getpid` | native; 1 and 2 bitmap filters; 3 and 4 filters that run in full |
//! | D (2018 hash-map proposal) | `getppid`; `chdir(a0, 1, 0)` | no filter; `allow306_front`, `_middle`, `_end`, `_opt2` (316..395 insns); `bpfconv optimize`'s output for front, middle and end; the Docker-sized pair of testdata/profiles (`docker_like`, 994 insns, `_opt2`, 1235) and `optimize`'s output for it; one level down, `long_jumps_large` (1219) on chdir allowed by its first, middle and last argument rule (A0 = 99, 50, 0), as written and optimised |
//!
//! Table B's published workload, `syscall(199, 100)`, is killed by every
//! `long_jumps_*` filter here (they have no rule for 199), so each filter is
//! driven by the allowed call that walks its longest path: `chdir` with
//! `A0 == 0, A1 != 0, A2 < SSIZE_MAX`, the last of the 100 `chdir` rules,
//! runs 315 classic instructions of `long_jumps_large`; the short filters
//! only allow `close` and `brk`, and `brk` is checked second.
//!
//! In tables A, B and D our engines evaluate the one filter directly (the
//! point is the interpreter's cost). Table C evaluates the whole stack with
//! the kernel's rules: the newest filter's constant-action cache first
//! ([`seccomp::cache::ActionCache`]), then every filter, newest first,
//! combined by [`seccomp::stack::combine`].

use cbpf::Program;
use seccomp::cache::{ActionCache, CacheConfig};

use crate::engines::{Engine, Runner};
use crate::filters::{self, Filter, AUDIT_ARCH_X86_64, RET_ALLOW};
use crate::BenchError;

/// One of the published tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableId {
    A,
    B,
    C,
    D,
}

impl TableId {
    /// All four, in order.
    pub const ALL: [TableId; 4] = [TableId::A, TableId::B, TableId::C, TableId::D];

    /// `"A"`..`"D"` (the JSON `table` field).
    pub fn letter(self) -> &'static str {
        match self {
            TableId::A => "A",
            TableId::B => "B",
            TableId::C => "C",
            TableId::D => "D",
        }
    }

    /// Lower-case letter, for criterion IDs (`[a-z0-9_-]` only).
    pub fn slug(self) -> &'static str {
        match self {
            TableId::A => "a",
            TableId::B => "b",
            TableId::C => "c",
            TableId::D => "d",
        }
    }

    /// Parses `A`..`D` (either case).
    pub fn parse(s: &str) -> Option<TableId> {
        TableId::ALL.into_iter().find(|t| t.letter().eq_ignore_ascii_case(s))
    }

    /// Heading of the table.
    pub fn title(self) -> &'static str {
        match self {
            TableId::A => "Table A — fast vs slow filter, interpreted vs JIT (2013 seccomp JIT on ARM)",
            TableId::B => "Table B — short vs large filter, classic vs eBPF (2014 \"seccomp: convert seccomp to use extended BPF\")",
            TableId::C => "Table C — constant-action bitmaps (2020 kernel seccomp_benchmark)",
            TableId::D => "Table D — position of the syscall in a 306-entry allow-list (2018 hash-map proposal)",
        }
    }

    /// What the published table showed, to compare our shape with.
    pub fn published(self) -> &'static str {
        match self {
            TableId::A => {
                "Published (getpid, seconds per 1M calls): no filter 0.137; fast 0.406 / slow 1.688 interpreted; \
                 fast 0.365 / slow 0.480 JIT. Shape: the slow filter costs ~4x the fast one interpreted; \
                 the JIT nearly erases the difference."
            }
            TableId::B => {
                "Published (x86_64, seconds for the loop): short 2.7 cBPF / 2.58 eBPF; large 8.6 cBPF / 5.7 eBPF. \
                 Shape: the branchy large filter runs ~1.5x faster after conversion; the short one slightly faster."
            }
            TableId::C => {
                "Published (x86_64, ns per getpid): native 646; 1 bitmap 675; 2 bitmap 675; 3 full 732; 4 full 752. \
                 Derived: entry overhead 29 ns, per-filter overhead ~20 ns."
            }
            TableId::D => {
                "Published (min TSC ticks per getppid): disabled 620; first 722; middle 1392; last 2452; \
                 306-entry eBPF hash map 800. Shape: linear filters cost grows with the syscall's position; \
                 a lookup structure makes it flat."
            }
        }
    }
}

impl TableId {
    /// What our version of the table runs, where it departs from the original.
    pub fn workload(self) -> &'static str {
        match self {
            TableId::A => {
                "Ours: getppid (the call the seed filters allow) under seed_fast (accepted after the arch/x32 checks) \
                 and seed_slow (85 other syscalls checked first). The kernel caches getppid as constant-ALLOW for \
                 these filters, so `kernel` shows the cache hit and `kernel, forced` the filter actually running."
            }
            TableId::B => {
                "Ours: the published `syscall(199, 100)` is killed by these filters (no rule for 199), so each \
                 filter runs the allowed call with its longest path: `chdir(NULL, 1, 0)` walks 315 instructions of \
                 long_jumps_large (its last chdir rule, A0 == 0); the short filters allow only close and brk, and \
                 `brk(0)` is checked second. chdir(NULL) fails with EFAULT after the filter ran; its no-filter row \
                 carries the same cost."
            }
            TableId::C => {
                "Ours: the exact filters of seccomp_benchmark (`ld [0]; ret ALLOW` cached, `ld [16]; ret ALLOW` \
                 not) stacked 0..4 deep, getpid. In-process engines evaluate the stack with the kernel's rules: \
                 the newest filter's constant-action bitmap, then every filter newest first."
            }
            TableId::D => {
                "Ours: getppid at comparison #1, #153 and #306 of a 306-syscall allow-list, and the binary-tree \
                 layout; the `fast` column is the lookup-structure engine (the hash map's role). The kernel caches \
                 getppid for these filters, so `kernel, forced` is the comparable column. Then the same question one \
                 level down: chdir allowed by the first (A0 == 99), middle (A0 == 50) and last (A0 == 0) of \
                 long_jumps_large's 100 argument rules, as written and as `bpfconv optimize` lays them out (a tree \
                 over the arguments); argument checks are never cached, so the kernel runs the filter on every call."
            }
        }
    }
}

/// A system call input: what the kernel column calls and what our engines
/// see as `struct seccomp_data` (native x86_64, instruction pointer 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syscall {
    /// Name, for labels.
    pub name: &'static str,
    /// x86_64 number.
    pub nr: i32,
    /// Register values of the six arguments.
    pub args: [u64; 6],
}

impl Syscall {
    /// `getpid()` (Table C, as `seccomp_benchmark` calls it).
    pub const GETPID: Syscall = Syscall { name: "getpid", nr: 39, args: [0; 6] };
    /// `getppid()` (tables A and D: the filters' allowed call).
    pub const GETPPID: Syscall = Syscall { name: "getppid", nr: 110, args: [0; 6] };
    /// `brk(0)`: the longest allowed path of the short `long_jumps` filters.
    pub const BRK: Syscall = Syscall { name: "brk", nr: 12, args: [0; 6] };
    /// `chdir(NULL, 1, 0)`: the longest allowed path of `long_jumps_large`
    /// (A0 == 0 is its last `chdir` rule). The kernel fails it with EFAULT
    /// after the filter ran, at the same cost with and without filters.
    pub const CHDIR: Syscall = Syscall::chdir(0);

    /// `chdir(a0, 1, 0)`: long_jumps_large's chdir rule `A0 == a0` allows
    /// it; its rules are checked from A0 == 99 (first) down to A0 == 0
    /// (last), each after the ones before.
    pub const fn chdir(a0: u64) -> Syscall {
        Syscall { name: "chdir", nr: 80, args: [a0, 1, 0, 0, 0, 0] }
    }

    /// The `struct seccomp_data` bytes our engines evaluate.
    pub fn data(&self) -> [u8; 64] {
        cbpf::SeccompData { nr: self.nr, arch: AUDIT_ARCH_X86_64, instruction_pointer: 0, args: self.args }.to_bytes()
    }

    /// `name(a0, a1, ...)` with the arguments that matter.
    pub fn label(&self) -> String {
        let used = self.args.iter().rposition(|&a| a != 0).map_or(0, |i| i + 1);
        let args: Vec<String> = self.args.iter().take(used).map(|a| format!("{a}")).collect();
        format!("{}({})", self.name, args.join(", "))
    }
}

/// One row of a table: a stack of filters and the call evaluated under it.
#[derive(Debug, Clone)]
pub struct Row {
    /// Row ID (`[a-z0-9_-]`), used in JSON and criterion IDs.
    pub id: &'static str,
    /// Human label.
    pub label: String,
    /// The filters, oldest first (installation order); empty = no filter.
    pub filters: Vec<Filter>,
    /// Evaluate the stack with the kernel's constant-action cache (Table C);
    /// otherwise our engines run the single filter directly.
    pub cached: bool,
    /// The call.
    pub syscall: Syscall,
}

impl Row {
    /// The JSON `filter` field: the filter names, oldest first, or `none`.
    pub fn filter_name(&self) -> String {
        if self.filters.is_empty() {
            "none".to_string()
        } else {
            self.filters.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(",")
        }
    }

    /// Classic instructions of the single filter (`None` for stacks).
    pub fn insns(&self) -> Option<usize> {
        match self.filters.as_slice() {
            [one] => Some(one.len()),
            _ => None,
        }
    }

    /// Classic instructions executed for the row's call, summed over the stack
    /// (what the kernel runs when nothing is cached).
    pub fn path_length(&self) -> usize {
        let data = self.syscall.data();
        self.filters.iter().map(|f| f.path_length(&data)).sum()
    }

    /// Does the kernel's constant-action cache let this call through without
    /// running any filter? (Then the kernel column measures only the cache.)
    pub fn kernel_skips_filters(&self) -> bool {
        let nr = self.syscall.nr as u32;
        !self.filters.is_empty() && self.filters.iter().all(|f| f.kernel_caches(nr))
    }

    /// Should the kernel column also time the stack forced to run? Yes where
    /// the cache would skip the filters, except in Table C, whose rows
    /// measure the cache on purpose.
    pub fn wants_forced(&self) -> bool {
        !self.cached && self.kernel_skips_filters()
    }

    /// The same stack with every filter forced to run under the kernel's
    /// cache ([`filters::forced`]); `None` when [`Row::wants_forced`] is false
    /// or a filter is too long to prepend to.
    pub fn forced(&self) -> Option<Vec<Filter>> {
        if !self.wants_forced() {
            return None;
        }
        self.filters
            .iter()
            .map(|f| {
                let insns = filters::forced(f.original())?;
                Filter::new(&format!("{}+ld16", f.name), &insns).ok()
            })
            .collect()
    }

    /// The result every engine must return: our classic interpreter's,
    /// combined with the kernel's rules.
    pub fn expected(&self) -> u32 {
        let data = self.syscall.data();
        let results = self.filters.iter().rev().map(|f| f.interp.run_seccomp(&data).unwrap_or(0));
        if self.filters.is_empty() {
            RET_ALLOW
        } else {
            seccomp::stack::combine(results)
        }
    }

    /// Prepares this row for `engine`. `Ok(None)`: nothing to evaluate (a
    /// no-filter baseline outside Table C is a kernel-only row).
    pub fn prepare<'r>(&'r self, engine: &Engine) -> Result<Option<Box<dyn Runner + 'r>>, String> {
        match (self.filters.as_slice(), self.cached) {
            ([], false) => Ok(None),
            ([one], false) => (engine.prepare)(one).map(Some),
            // The fast engine evaluates a stack through one combined table
            // (`FastStack`): that is its design, not a shortcut the others lack.
            (stack, cached) if engine.name == "fast" => Ok(Some(Box::new(FastStackRunner::new(stack, cached)?))),
            (stack, _) => {
                let chain = ChainRunner::new(engine, stack, self.cached)?;
                Ok(Some(Box::new(chain)))
            }
        }
    }
}

/// The cache configuration of an x86_64 kernel (native x86_64, compat i386).
pub fn x86_64_cache_config() -> CacheConfig {
    let nr = |arch| seccomp::syscalls::table(arch).map_or(512, |t| t.nr_syscalls);
    CacheConfig {
        native_arch: AUDIT_ARCH_X86_64,
        native_nr: nr(seccomp::Arch::X86_64),
        compat: Some((seccomp::arch::AUDIT_ARCH_I386, nr(seccomp::Arch::I386))),
    }
}

/// A filter stack on the fast engine: the newest filter's kernel cache (as
/// `seccomp_run_filters()` checks it), then `seccomp::fast::FastStack`, whose
/// combined table already holds the kernel's precedence rules.
pub struct FastStackRunner {
    chain: seccomp::fast::FastStack,
    cache: Option<ActionCache>,
}

impl std::fmt::Debug for FastStackRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastStackRunner").field("cached", &self.cache.is_some()).finish_non_exhaustive()
    }
}

impl FastStackRunner {
    /// Builds the combined table for `oldest_first` (and the cache, when `cached`).
    pub fn new(oldest_first: &[Filter], cached: bool) -> Result<Self, String> {
        let newest_first: Vec<Program> = oldest_first.iter().rev().map(|f| f.program.clone()).collect();
        let chain = seccomp::fast::FastStack::build(&newest_first).map_err(|e| e.to_string())?;
        let cache = cached.then(|| {
            let config = x86_64_cache_config();
            oldest_first.iter().fold(None, |prev: Option<ActionCache>, f| {
                Some(ActionCache::prepare(f.original(), prev.as_ref(), config))
            })
        });
        Ok(FastStackRunner { chain, cache: cache.flatten() })
    }
}

impl Runner for FastStackRunner {
    /// # Deviations
    /// As in [`ChainRunner`], an empty stack returns ALLOW.
    fn run(&mut self, data: &mut [u8; 64]) -> Result<u32, String> {
        if self.chain.filters().is_empty() {
            return Ok(RET_ALLOW);
        }
        if let Some(cache) = &self.cache {
            let [n0, n1, n2, n3, a0, a1, a2, a3, ..] = *data;
            if cache.check_allow(u32::from_ne_bytes([a0, a1, a2, a3]), i32::from_ne_bytes([n0, n1, n2, n3])) {
                return Ok(RET_ALLOW);
            }
        }
        Ok(self.chain.eval(&cbpf::SeccompData::from_bytes(data)))
    }
}

/// A filter stack evaluated as `seccomp_run_filters()` does.
pub struct ChainRunner<'f> {
    /// Newest first.
    runners: Vec<Box<dyn Runner + 'f>>,
    /// The newest filter's constant-action cache, when caching.
    cache: Option<ActionCache>,
}

impl std::fmt::Debug for ChainRunner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainRunner")
            .field("filters", &self.runners.len())
            .field("cached", &self.cache.is_some())
            .finish()
    }
}

impl<'f> ChainRunner<'f> {
    /// Prepares every filter of `oldest_first` for `engine`; with `cached`,
    /// also builds the newest filter's action cache, one attach at a time.
    pub fn new(engine: &Engine, oldest_first: &'f [Filter], cached: bool) -> Result<Self, String> {
        let runners = oldest_first.iter().rev().map(|f| (engine.prepare)(f)).collect::<Result<Vec<_>, _>>()?;
        let cache = cached.then(|| {
            let config = x86_64_cache_config();
            oldest_first.iter().fold(None, |prev: Option<ActionCache>, f| {
                Some(ActionCache::prepare(f.original(), prev.as_ref(), config))
            })
        });
        Ok(ChainRunner { runners, cache: cache.flatten() })
    }
}

impl Runner for ChainRunner<'_> {
    /// Mirrors `seccomp_run_filters()` in kernel/seccomp.c (Linux 6.18):
    /// the newest filter's cache, then every filter newest first, combined
    /// with the signed `ACTION_ONLY` precedence.
    ///
    /// # Deviations
    /// An empty stack returns ALLOW: a task without filters never enters
    /// seccomp (the kernel's own empty-list path is a `WARN_ON`).
    fn run(&mut self, data: &mut [u8; 64]) -> Result<u32, String> {
        if self.runners.is_empty() {
            return Ok(RET_ALLOW);
        }
        if let Some(cache) = &self.cache {
            let [n0, n1, n2, n3, a0, a1, a2, a3, ..] = *data;
            if cache.check_allow(u32::from_ne_bytes([a0, a1, a2, a3]), i32::from_ne_bytes([n0, n1, n2, n3])) {
                return Ok(RET_ALLOW);
            }
        }
        let mut failure = None;
        let combined = seccomp::stack::combine(self.runners.iter_mut().map(|r| {
            r.run(data).unwrap_or_else(|e| {
                failure = Some(e);
                0
            })
        }));
        match failure {
            Some(e) => Err(e),
            None => Ok(combined),
        }
    }
}

/// Most vectors a mix row cycles through: longer files are sampled, every
/// k-th line with k = ceil(lines / MIX_MAX).
pub const MIX_MAX: usize = 1024;

/// Most vectors of a mix row the kernel-jit column times (every k-th): each
/// is a test run of at least 1 ms a round.
pub const KERNEL_JIT_MIX_MAX: usize = 32;

/// A mix row: one filter evaluated on every vector of a testdata
/// `.vectors.jsonl` in turn (at most [`MIX_MAX`] of them), timed as the
/// median per evaluation over the whole cycle.
#[derive(Debug, Clone)]
pub struct MixRow {
    /// Row ID: the single-input row's, then `_mix` (`short_mix`).
    pub id: String,
    /// Human label, naming the file and the sampling.
    pub label: String,
    /// The filter (the single-input row's).
    pub filter: Filter,
    /// The inputs, in file order.
    pub datas: Vec<[u8; 64]>,
    /// Every `stride`-th line of the file was taken (1: every line).
    pub stride: usize,
}

impl MixRow {
    /// The mix of `row`'s filter over `NAME.vectors.jsonl` (`vectors` = NAME).
    fn of(row: &Row, vectors: &str) -> Result<MixRow, BenchError> {
        let [filter] = row.filters.as_slice() else {
            return Err(BenchError::Filter { name: row.filter_name(), why: "a mix row needs one filter".to_string() });
        };
        let all = filters::load_vectors(vectors)?;
        let stride = all.len().div_ceil(MIX_MAX).max(1);
        let datas: Vec<[u8; 64]> = all.iter().step_by(stride).map(cbpf::SeccompData::to_bytes).collect();
        let every = if stride == 1 { "every line".to_string() } else { format!("every {stride}th line") };
        let label = format!("{}, mix of {} vectors ({every} of {vectors}.vectors.jsonl)", row.label, datas.len());
        Ok(MixRow { id: format!("{}_mix", row.id), label, filter: filter.clone(), datas, stride })
    }

    /// Our classic interpreter's result on each input, in order: what
    /// every engine must return.
    pub fn expected(&self) -> Vec<Result<u32, String>> {
        self.datas.iter().map(|d| self.filter.interp.run_seccomp(d).map_err(|e| e.to_string())).collect()
    }

    /// Mean classic path over the inputs, rounded.
    pub fn mean_path(&self) -> usize {
        let total: usize = self.datas.iter().map(|d| self.filter.path_length(d)).sum();
        (total + self.datas.len() / 2) / self.datas.len().max(1)
    }
}

/// One table's rows.
#[derive(Debug, Clone)]
pub struct Table {
    /// Which table.
    pub id: TableId,
    /// Rows in published order.
    pub rows: Vec<Row>,
    /// Mix rows, shown after `rows`.
    pub mixes: Vec<MixRow>,
}

/// Which rows of each table get a mix row, and the vectors file each uses
/// (the equivalent filters of testdata/profiles share docker_like's).
fn mix_sources(id: TableId) -> &'static [(&'static str, &'static str)] {
    match id {
        TableId::A => &[("fast", "seed_fast"), ("slow", "seed_slow"), ("slow_opt2", "seed_slow_opt2")],
        TableId::B => &[
            ("short", "long_jumps_short"),
            ("short_opt2", "long_jumps_short_opt2"),
            ("large", "long_jumps_large"),
            ("large_opt2", "long_jumps_large_opt2"),
        ],
        TableId::C => &[],
        TableId::D => &[
            ("front", "allow306_front"),
            ("middle", "allow306_middle"),
            ("end", "allow306_end"),
            ("opt2", "allow306_opt2"),
            ("docker", "docker_like"),
            ("docker_opt2", "docker_like"),
        ],
    }
}

fn single(id: &'static str, label: &str, name: &str, syscall: Syscall) -> Result<Row, BenchError> {
    let filter = Filter::load(name)?;
    let label = format!("{label} ({name}, {} insns)", filter.len());
    Ok(Row { id, label, filters: vec![filter], cached: false, syscall })
}

/// `bpfconv optimize`'s output for `filter` ([`optimize::optimize`]: proved
/// equal to it by `equiv`), as a row.
fn optimised(id: &'static str, label: &str, filter: &Filter, syscall: Syscall) -> Result<Row, BenchError> {
    let fail = |why: String| BenchError::Filter { name: filter.name.clone(), why };
    let out = optimize::optimize(&filter.program, &Default::default()).map_err(|e| fail(e.to_string()))?;
    if let Some(why) = out.stats.kept_input {
        return Err(fail(format!("optimize kept the input: {why}")));
    }
    let filter = Filter::new(&format!("{}+optimize", filter.name), out.program.original())?;
    let label = format!("{label} ({}, {} insns)", filter.name, filter.len());
    Ok(Row { id, label, filters: vec![filter], cached: false, syscall })
}

/// The Docker-sized pair of testdata/profiles (994 and 1235 insns).
fn profile(id: &'static str, label: &str, name: &str, syscall: Syscall) -> Result<Row, BenchError> {
    let filter = Filter::new(name, &filters::load_profile(name)?)?;
    let label = format!("{label} ({name}, {} insns)", filter.len());
    Ok(Row { id, label, filters: vec![filter], cached: false, syscall })
}

fn native(id: &'static str, syscall: Syscall) -> Row {
    Row { id, label: format!("no filter, {}", syscall.label()), filters: Vec::new(), cached: false, syscall }
}

/// Table D one level down: chdir allowed by the first (A0 == 99), middle
/// (50) and last (0) of long_jumps_large's 100 argument rules, as written,
/// then optimised.
fn argument_rule_rows() -> Result<Vec<Row>, BenchError> {
    const POSITIONS: [(&str, &str, &str, u64); 3] = [
        ("ljl_front", "ljl_front_optimised", "first", 99),
        ("ljl_middle", "ljl_middle_optimised", "middle", 50),
        ("ljl_end", "ljl_end_optimised", "last", 0),
    ];
    let large = Filter::load("long_jumps_large")?;
    let mut rows = Vec::with_capacity(2 * POSITIONS.len());
    for (id, _, place, a0) in POSITIONS {
        rows.push(single(id, &format!("chdir, {place} argument rule"), "long_jumps_large", Syscall::chdir(a0))?);
    }
    for (_, id, place, a0) in POSITIONS {
        rows.push(optimised(id, &format!("chdir, {place} argument rule, optimised"), &large, Syscall::chdir(a0))?);
    }
    Ok(rows)
}

/// Filter lengths of the sweep behind `length.svg` (4095: the forced
/// kernel variant adds one instruction and must stay within `BPF_MAXINSNS`).
pub const SWEEP_LENGTHS: &[usize] = &[8, 32, 128, 512, 2048, 4095];

/// The filter-length sweep: synthetic allow-lists
/// ([`filters::synthetic_allow_list`]) of [`SWEEP_LENGTHS`] instructions,
/// each driven by getppid, which they check last; plus the no-filter
/// baseline for the kernel column.
pub fn length_sweep() -> Result<Vec<Row>, BenchError> {
    const IDS: [&str; 6] = ["n8", "n32", "n128", "n512", "n2048", "n4095"];
    let mut rows = vec![native("native", Syscall::GETPPID)];
    for (&len, id) in SWEEP_LENGTHS.iter().zip(IDS) {
        let filter = Filter::new(&format!("allow_list_{len}"), &filters::synthetic_allow_list(len))?;
        let label = format!("allow-list of {len} insns, getppid last");
        rows.push(Row { id, label, filters: vec![filter], cached: false, syscall: Syscall::GETPPID });
    }
    Ok(rows)
}

/// Builds a table's rows (loads, validates and converts its filters).
pub fn build(id: TableId) -> Result<Table, BenchError> {
    let mut rows = match id {
        TableId::A => vec![
            native("native", Syscall::GETPPID),
            single("fast", "fast", "seed_fast", Syscall::GETPPID)?,
            single("slow", "slow", "seed_slow", Syscall::GETPPID)?,
            single("slow_opt2", "slow, binary tree", "seed_slow_opt2", Syscall::GETPPID)?,
        ],
        TableId::B => vec![
            native("native_brk", Syscall::BRK),
            single("short", "short", "long_jumps_short", Syscall::BRK)?,
            single("short_opt2", "short, binary tree", "long_jumps_short_opt2", Syscall::BRK)?,
            native("native_chdir", Syscall::CHDIR),
            single("large", "large", "long_jumps_large", Syscall::CHDIR)?,
            single("large_opt2", "large, binary tree", "long_jumps_large_opt2", Syscall::CHDIR)?,
        ],
        TableId::C => {
            let bitmap = Filter::new("bitmap", &filters::bitmap_filter())?;
            let full = Filter::new("full", &filters::full_filter())?;
            let stack = |id, label: &str, filters: Vec<Filter>| Row {
                id,
                label: label.to_string(),
                filters,
                cached: true,
                syscall: Syscall::GETPID,
            };
            vec![
                stack("native", "native", vec![]),
                stack("bitmap1", "1 filter (bitmap)", vec![bitmap.clone()]),
                stack("bitmap2", "2 filters (bitmap)", vec![bitmap.clone(), bitmap.clone()]),
                stack("filter1", "3 filters (full)", vec![bitmap.clone(), bitmap.clone(), full.clone()]),
                stack("filter2", "4 filters (full)", vec![bitmap.clone(), bitmap.clone(), full, bitmap]),
            ]
        }
        TableId::D => vec![
            native("native", Syscall::GETPPID),
            single("front", "getppid first", "allow306_front", Syscall::GETPPID)?,
            single("middle", "getppid in the middle", "allow306_middle", Syscall::GETPPID)?,
            single("end", "getppid last", "allow306_end", Syscall::GETPPID)?,
            single("opt2", "binary tree", "allow306_opt2", Syscall::GETPPID)?,
            optimised(
                "front_optimised",
                "getppid first, optimised",
                &Filter::load("allow306_front")?,
                Syscall::GETPPID,
            )?,
            optimised(
                "middle_optimised",
                "getppid in the middle, optimised",
                &Filter::load("allow306_middle")?,
                Syscall::GETPPID,
            )?,
            optimised("end_optimised", "getppid last, optimised", &Filter::load("allow306_end")?, Syscall::GETPPID)?,
            profile("docker", "Docker-sized, linear", "docker_like", Syscall::GETPPID)?,
            profile("docker_opt2", "Docker-sized, binary tree", "docker_like_opt2", Syscall::GETPPID)?,
            optimised(
                "docker_optimised",
                "Docker-sized, optimised",
                &Filter::new("docker_like", &filters::load_profile("docker_like")?)?,
                Syscall::GETPPID,
            )?,
            native("native_chdir", Syscall::CHDIR),
        ],
    };
    if id == TableId::D {
        rows.extend(argument_rule_rows()?);
    }
    let mixes = mix_sources(id)
        .iter()
        .map(|&(row_id, vectors)| match rows.iter().find(|r| r.id == row_id) {
            Some(row) => MixRow::of(row, vectors),
            None => Err(BenchError::Filter { name: row_id.to_string(), why: "no such row".to_string() }),
        })
        .collect::<Result<_, _>>()?;
    Ok(Table { id, rows, mixes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::ENGINES;

    #[test]
    fn every_row_allows_its_call() {
        for id in TableId::ALL {
            let table = build(id).unwrap();
            for row in &table.rows {
                assert_eq!(row.expected(), RET_ALLOW, "{}/{}", id.letter(), row.id);
            }
        }
    }

    /// `optimize`'s rows (Table D): never longer than their input, and the
    /// call's path no longer than under libseccomp's binary tree (opt2) and
    /// the same at every position of getppid.
    #[test]
    fn optimised_rows_are_short_and_flat() {
        let d = build(TableId::D).unwrap();
        let row = |id: &str| d.rows.iter().find(|r| r.id == id).unwrap();
        let opt2 = row("opt2").path_length();
        let paths: Vec<usize> =
            ["front_optimised", "middle_optimised", "end_optimised"].iter().map(|id| row(id).path_length()).collect();
        assert!(paths.iter().all(|&p| p == paths[0] && p <= opt2), "{paths:?} vs opt2 {opt2}");
        for (opt, orig) in [("front_optimised", "front"), ("end_optimised", "end"), ("docker_optimised", "docker")] {
            assert!(row(opt).insns() <= row(orig).insns(), "{opt}");
        }
        assert!(row("docker_optimised").path_length() <= row("docker_opt2").path_length());
        // One level down: long_jumps_large's chdir rules as written grow with
        // the rule's position; optimised, every position runs the same path.
        let written: Vec<usize> =
            ["ljl_front", "ljl_middle", "ljl_end"].iter().map(|id| row(id).path_length()).collect();
        assert!(written[0] < written[1] && written[1] < written[2], "{written:?}");
        let flat: Vec<usize> = ["ljl_front_optimised", "ljl_middle_optimised", "ljl_end_optimised"]
            .iter()
            .map(|id| row(id).path_length())
            .collect();
        assert!(flat.iter().all(|&p| p == flat[0] && p <= 32), "{flat:?}");
    }

    #[test]
    fn every_engine_agrees_with_the_reference_on_every_row() {
        let mut failures = Vec::new();
        for id in TableId::ALL {
            let table = build(id).unwrap();
            for row in &table.rows {
                for engine in ENGINES {
                    let mut data = row.syscall.data();
                    let name = format!("{}/{}/{}", id.slug(), row.id, engine.name);
                    match row.prepare(engine) {
                        Ok(Some(mut runner)) => match runner.run(&mut data) {
                            Ok(got) if got == row.expected() => {}
                            other => failures.push(format!("{name}: {other:?}")),
                        },
                        // Only rbpf's JIT may refuse (its 4 KiB page), and only
                        // no-filter baselines outside Table C have nothing to run.
                        Err(why) if engine.name != "rbpf-jit" => failures.push(format!("{name}: {why}")),
                        Ok(None) if !row.filters.is_empty() || row.cached => {
                            failures.push(format!("{name}: nothing to run"))
                        }
                        Ok(None) | Err(_) => {}
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn table_b_inputs_walk_the_longest_allowed_paths() {
        let table = build(TableId::B).unwrap();
        let path = |id: &str| table.rows.iter().find(|r| r.id == id).unwrap().path_length();
        assert_eq!(path("large"), 315);
        let large = Filter::load("long_jumps_large").unwrap();
        // No other chdir argument walks further.
        for a0 in 0..100 {
            let call = Syscall { args: [a0, 1, 0, 0, 0, 0], ..Syscall::CHDIR };
            assert!(large.path_length(&call.data()) <= 315);
        }
        assert!(path("short") >= 6);
    }

    #[test]
    fn forcing_applies_exactly_where_the_kernel_caches() {
        let a = build(TableId::A).unwrap();
        let d = build(TableId::D).unwrap();
        let b = build(TableId::B).unwrap();
        for row in a.rows.iter().chain(&d.rows).filter(|r| !r.filters.is_empty()) {
            // chdir's argument checks are never cached: no forcing needed.
            if row.syscall.name == "chdir" {
                assert!(!row.kernel_skips_filters() && row.forced().is_none(), "{}", row.id);
                continue;
            }
            assert!(row.kernel_skips_filters(), "{}", row.id);
            let forced = row.forced().unwrap();
            assert!(forced.iter().all(|f| !f.kernel_caches(110)), "{}", row.id);
        }
        let large = b.rows.iter().find(|r| r.id == "large").unwrap();
        assert!(!large.kernel_skips_filters());
        assert!(large.forced().is_none());
    }

    #[test]
    fn table_c_cache_covers_bitmap_rows_only() {
        let c = build(TableId::C).unwrap();
        let skips: Vec<bool> = c.rows.iter().map(Row::kernel_skips_filters).collect();
        assert_eq!(skips, [false, true, true, false, false]);
    }

    #[test]
    fn the_sweep_has_one_row_per_length_and_is_forced_in_the_kernel() {
        let rows = length_sweep().unwrap();
        let lens: Vec<usize> = rows.iter().filter_map(Row::insns).collect();
        assert_eq!(lens, SWEEP_LENGTHS);
        for row in rows.iter().skip(1) {
            assert_eq!(row.expected(), RET_ALLOW);
            assert!(row.wants_forced(), "{}", row.id);
            assert!(row.forced().is_some(), "{}", row.id);
        }
    }

    /// Tables A, B and D carry a mix row per testdata filter, each a cycle of
    /// at most MIX_MAX vectors that the classic interpreter runs cleanly.
    #[test]
    fn mix_rows_cover_the_testdata_filters() {
        let want: [(TableId, &[&str]); 4] = [
            (TableId::A, &["fast_mix", "slow_mix", "slow_opt2_mix"]),
            (TableId::B, &["short_mix", "short_opt2_mix", "large_mix", "large_opt2_mix"]),
            (TableId::C, &[]),
            (TableId::D, &["front_mix", "middle_mix", "end_mix", "opt2_mix", "docker_mix", "docker_opt2_mix"]),
        ];
        for (id, ids) in want {
            let table = build(id).unwrap();
            let got: Vec<&str> = table.mixes.iter().map(|m| m.id.as_str()).collect();
            assert_eq!(got, ids, "{}", id.letter());
            for mix in &table.mixes {
                let row = table.rows.iter().find(|r| format!("{}_mix", r.id) == mix.id).unwrap();
                assert_eq!(mix.filter.original(), row.filters[0].original(), "{}", mix.id);
                assert!(!mix.datas.is_empty() && mix.datas.len() <= MIX_MAX, "{}", mix.id);
                assert!(mix.label.contains(&format!("mix of {} vectors", mix.datas.len())), "{}", mix.label);
                assert!(mix.expected().iter().all(Result::is_ok), "{}", mix.id);
            }
        }
        // 7813 lines: every 8th.
        let b = build(TableId::B).unwrap();
        let large = b.mixes.iter().find(|m| m.id == "large_mix").unwrap();
        assert_eq!((large.stride, large.datas.len()), (8, 977));
        assert!(large.label.contains("every 8th line of long_jumps_large.vectors.jsonl"), "{}", large.label);
    }

    #[test]
    fn ids_are_criterion_safe() {
        let sweep = Table { id: TableId::D, rows: length_sweep().unwrap(), mixes: Vec::new() };
        for table in TableId::ALL.map(|id| build(id).unwrap()).into_iter().chain([sweep]) {
            let mix_ids = table.mixes.iter().map(|m| m.id.as_str());
            for id in table.rows.iter().map(|r| r.id).chain(mix_ids) {
                assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'));
            }
        }
        for engine in ENGINES {
            assert!(engine.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        }
    }
}
