#!/usr/bin/python3
"""Hand-written sandbox filters in the shapes real sandboxes emit, and their inputs.

Written for bpfconv's test corpus (our own code and our own filters): the
RULES are those of two real sandboxes, the instructions are ours, laid out
the way each project's filter builder lays them out.

* sshd_preauth (x86_64) and sshd_preauth_i386: the rules of OpenSSH's
  preauth sandbox (sandbox-seccomp-filter.c, openssh-portable at
  0ef0f5a8, 2026-08), as its SC_* macros lay them out: one linear `jeq #nr`
  chain, every argument check loading the low and the high word of the
  64-bit argument, `and` masks for "only these bits" (mmap prot and flags,
  mprotect prot, futex op with the private/clock flags masked off), `jeq`
  chains for madvise advice values and futex ops, setsockopt
  (level, optname) pairs, socketcall calls (i386), and `ld [0]` reloaded
  after each rule. Each arch gets the rules its `__NR_*` exist for
  (Linux 6.18 tables in xtask/syscalls).
* chromium_baseline (x86_64): rules of Chromium's baseline seccomp-bpf
  policy (sandbox/linux/seccomp-bpf-helpers/baseline_policy.cc and
  syscall_parameters_restrictions.cc; a subset of syscall_sets.cc's
  allow-lists), laid out as Chromium's policy compiler does
  (sandbox/linux/bpf_dsl/policy_compiler.cc): arch check, `jset` of the
  x32 bit, a binary search of `jge` over ranges of numbers with the same
  policy, each 32-bit argument checked as (high word 0, or all ones with
  the low word's sign bit set) and then its low word, masks as
  `jset`/`and`, `Switch(...).Cases(...)` as one full check per case,
  identical instructions shared (the filter is a DAG) and `ja` where a
  jump would be longer than 255.

Usage: sandboxes.py asm          writes NAME.asm for every filter
       sandboxes.py inputs NAME  prints NAME's inputs (JSON lines, no action)
       sandboxes.py merge NAME INPUTS KERNEL_OUTPUT
                                 prints NAME.vectors.jsonl: each input with
                                 the action `bpfconv run --engine kernel
                                 --vectors` gave it; inputs the kernel
                                 could not observe are dropped
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TBL = os.path.join(HERE, "../../xtask/syscalls/arch/x86/entry/syscalls")

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003

RET_KILL = 0x00000000  # SECCOMP_RET_KILL (KILL_THREAD)
RET_TRAP = 0x00030000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

EACCES, EINVAL, EPERM, ENOSYS = 13, 22, 1, 38

# bpf opcodes
LD_W_ABS, ALU_AND_K, RET_K = 0x20, 0x54, 0x06
JA, JEQ, JGE, JSET = 0x05, 0x15, 0x35, 0x45


def table(abi):
    path = os.path.join(TBL, "syscall_64.tbl" if abi == "x86_64" else "syscall_32.tbl")
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            nr, kind, name = line.split()[:3]
            if abi == "x86_64" and kind == "x32":
                continue
            out.setdefault(name, int(nr))
    return out


def arg_lo(i):
    return 16 + 8 * i


def arg_hi(i):
    return 20 + 8 * i


# ---------------------------------------------------------------- OpenSSH

class Linear:
    """A program written in order, jump offsets relative as in C macros."""

    def __init__(self):
        self.insns = []  # (code, jt, jf, k, comment)

    def stmt(self, code, k, comment=""):
        self.insns.append((code, 0, 0, k, comment))

    def jump(self, code, k, jt, jf, comment=""):
        self.insns.append((code, jt, jf, k, comment))


def sshd_preauth(abi):
    """OpenSSH's preauth rules, in its order, for the numbers `abi` defines."""
    nr = table(abi)
    arch = AUDIT_ARCH_X86_64 if abi == "x86_64" else AUDIT_ARCH_I386
    p = Linear()

    def deny(name, errno):
        if name in nr:
            p.jump(JEQ, nr[name], 0, 1, name)
            p.stmt(RET_K, RET_ERRNO | errno)

    def allow(name):
        if name in nr:
            p.jump(JEQ, nr[name], 0, 1, name)
            p.stmt(RET_K, RET_ALLOW)

    def allow_arg(name, arg, value):
        p.jump(JEQ, nr[name], 0, 6, f"{name}: args[{arg}] == {value:#x}")
        p.stmt(LD_W_ABS, arg_lo(arg))
        p.jump(JEQ, value & 0xFFFFFFFF, 0, 3)
        p.stmt(LD_W_ABS, arg_hi(arg))
        p.jump(JEQ, value >> 32, 0, 1)
        p.stmt(RET_K, RET_ALLOW)
        p.stmt(LD_W_ABS, 0)

    def arg_mask(name, arg, mask, fail):
        """SC_ALLOW_ARG_MASK (fail None: ALLOW when only bits of `mask` are
        set) or SC_DENY_UNLESS_ARG_MASK (fail an errno: ERRNO(fail) unless)."""
        what = "" if fail is None else f"ERRNO({fail}) unless "
        p.jump(JEQ, nr[name], 0, 8, f"{name}: {what}args[{arg}] only bits {mask:#x}")
        p.stmt(LD_W_ABS, arg_lo(arg))
        p.stmt(ALU_AND_K, ~mask & 0xFFFFFFFF)
        p.jump(JEQ, 0, 0, 4 if fail is None else 3)
        p.stmt(LD_W_ABS, arg_hi(arg))
        p.stmt(ALU_AND_K, ~(mask >> 32) & 0xFFFFFFFF)
        p.jump(JEQ, 0, *((0, 1) if fail is None else (1, 0)))
        p.stmt(RET_K, RET_ALLOW if fail is None else RET_ERRNO | fail)
        p.stmt(LD_W_ABS, 0)

    futex_flags = 128 | 256  # FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME

    def allow_futex_op(name, op):
        p.jump(JEQ, nr[name], 0, 8, f"{name}: op & ~{futex_flags:#x} == {op}")
        p.stmt(LD_W_ABS, arg_lo(1))
        p.stmt(ALU_AND_K, ~futex_flags & 0xFFFFFFFF)
        p.jump(JEQ, op, 0, 4)
        p.stmt(LD_W_ABS, arg_hi(1))
        p.stmt(ALU_AND_K, 0xFFFFFFFF)
        p.jump(JEQ, 0, 0, 1)
        p.stmt(RET_K, RET_ALLOW)
        p.stmt(LD_W_ABS, 0)

    def futex(name):
        if name in nr:
            # FUTEX_WAIT, _WAIT_BITSET, _WAKE, _WAKE_BITSET, _REQUEUE, _CMP_REQUEUE
            for op in (0, 9, 1, 10, 3, 4):
                allow_futex_op(name, op)

    def allow_setsockopt(level, optname):
        p.jump(JEQ, nr["setsockopt"], 0, 10, f"setsockopt({level}, {optname})")
        p.stmt(LD_W_ABS, arg_lo(1))
        p.jump(JEQ, level, 0, 7)
        p.stmt(LD_W_ABS, arg_hi(1))
        p.jump(JEQ, 0, 0, 5)
        p.stmt(LD_W_ABS, arg_lo(2))
        p.jump(JEQ, optname, 0, 3)
        p.stmt(LD_W_ABS, arg_hi(2))
        p.jump(JEQ, 0, 0, 1)
        p.stmt(RET_K, RET_ALLOW)
        p.stmt(LD_W_ABS, 0)

    # MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_FIXED_NOREPLACE
    mmap_flags = 0x02 | 0x20 | 0x10 | 0x100000
    prot = 1 | 2 | 0  # PROT_READ | PROT_WRITE | PROT_NONE

    def mmap(name):
        if name in nr:
            arg_mask(name, 3, mmap_flags, EINVAL)
            arg_mask(name, 2, prot, None)

    p.stmt(LD_W_ABS, 4, "arch")
    p.jump(JEQ, arch, 1, 0)
    p.stmt(RET_K, RET_KILL)
    p.stmt(LD_W_ABS, 0, "nr")
    for name in ("lstat", "lstat64", "fstat", "fstat64", "fstatat64", "open", "openat", "newfstatat",
                 "stat", "stat64", "shmget", "shmat", "shmdt", "ipc", "statx"):
        deny(name, EACCES)
    for name in ("brk", "clock_gettime", "clock_gettime64", "close", "exit", "exit_group"):
        allow(name)
    futex("futex")
    futex("futex_time64")
    for name in ("geteuid", "geteuid32", "getpgid", "getpid", "getrandom", "gettid", "gettimeofday",
                 "getuid", "getuid32"):
        allow(name)
    if "madvise" in nr:
        # MADV_NORMAL, _FREE, _DONTNEED, _DONTFORK, _DONTDUMP, _WIPEONFORK
        for advice in (0, 8, 4, 10, 16, 18):
            allow_arg("madvise", 2, advice)
        deny("madvise", EINVAL)
    mmap("mmap")
    mmap("mmap2")
    if "mprotect" in nr:
        arg_mask("mprotect", 2, prot, None)
    for name in ("mremap", "munmap", "nanosleep", "clock_nanosleep", "clock_nanosleep_time64",
                 "clock_gettime64", "_newselect", "ppoll", "ppoll_time64", "poll", "pselect6",
                 "pselect6_time64", "read", "riscv_hwprobe", "rt_sigprocmask", "select", "shutdown",
                 "sigprocmask", "time", "write", "writev", "getsockopt", "getsockname", "getpeername",
                 "uname"):
        allow(name)
    if "setsockopt" in nr:
        allow_setsockopt(41, 67)  # IPPROTO_IPV6, IPV6_TCLASS
        allow_setsockopt(0, 1)  # IPPROTO_IP, IP_TOS
    if "socketcall" in nr:
        # SYS_GETPEERNAME, SYS_GETSOCKNAME, SYS_GETSOCKOPT, SYS_SHUTDOWN
        for call in (7, 6, 15, 13):
            allow_arg("socketcall", 0, call)
        deny("socketcall", EACCES)
    p.stmt(RET_K, RET_KILL, "default")
    return p.insns


# ---------------------------------------------------------------- Chromium

class Dag:
    """A program built from its end, identical instructions shared."""

    def __init__(self):
        self.rev = []  # (code, jt_pos, jf_pos, k, comment); position = index here
        self.memo = {}

    def _append(self, key, insn):
        self.rev.append(insn)
        self.memo[key] = len(self.rev) - 1
        return len(self.rev) - 1

    def ret(self, k):
        key = (RET_K, k)
        if key in self.memo:
            return self.memo[key]
        return self._append(key, (RET_K, None, None, k, ""))

    def ja(self, target):
        key = (JA, target)
        if key in self.memo and len(self.rev) - 1 - self.memo[key] <= 255:
            return self.memo[key]
        return self._append(key, (JA, target, None, 0, ""))

    def stmt(self, code, k, nxt):
        key = (code, k, nxt)
        if key in self.memo:
            return self.memo[key]
        if nxt != len(self.rev) - 1:
            nxt = self.ja(nxt)
        return self._append(key, (code, nxt, None, k, ""))

    def jump(self, code, k, t, f):
        if t == f:
            return t
        key = (code, k, t, f)
        if key in self.memo:
            return self.memo[key]
        reach = lambda target: len(self.rev) - target - 1 <= 255
        if not reach(t):
            t = self.ja(t)
        if not reach(f):
            f = self.ja(f)
        if not reach(t):
            t = self.ja(t)
        return self._append(key, (code, t, f, k, ""))

    def insns(self):
        n = len(self.rev)
        at = lambda pos: n - 1 - pos
        out = []
        for pos in range(n - 1, -1, -1):
            code, a, b, k, comment = self.rev[pos]
            here = at(pos)
            if code == RET_K:
                out.append((code, 0, 0, k, comment))
            elif code == JA:
                out.append((code, 0, 0, at(a) - here - 1, comment))
            elif b is None:
                out.append((code, 0, 0, k, comment))
            else:
                out.append((code, at(a) - here - 1, at(b) - here - 1, k, comment))
        return out


def chromium_baseline():
    nr = table("x86_64")
    pid = 4242  # the policy's own pid (BaselinePolicy::policy_pid_)
    trap = {"crash": 1, "clone": 2, "prctl": 3, "ioctl": 4, "kill": 5, "fstatat": 6}
    g = Dag()
    kill = lambda: g.ret(RET_KILL)  # DefaultPanic

    # Results and conditions are functions of (passed, failed) -> node.
    def allow():
        return g.ret(RET_ALLOW)

    def error(e):
        return g.ret(RET_ERRNO | e)

    def crash(kind="crash"):
        return g.ret(RET_TRAP | trap[kind])

    def masked_eq(argno, width, mask, value):
        """PolicyCompiler::MaskedEqual: (args[argno] & mask) == value."""

        def half(upper, passed, failed):
            if width == 4 and upper:
                invalid = kill()
                sign = g.stmt(LD_W_ABS, arg_lo(argno), g.jump(JSET, 1 << 31, passed, invalid))
                ones = g.jump(JEQ, 0xFFFFFFFF, sign, invalid)
                return g.stmt(LD_W_ABS, arg_hi(argno), g.jump(JEQ, 0, passed, ones))
            idx = arg_hi(argno) if upper else arg_lo(argno)
            m = (mask >> 32) if upper else mask & 0xFFFFFFFF
            v = (value >> 32) if upper else value & 0xFFFFFFFF
            if m == 0:
                return passed
            if m == 0xFFFFFFFF:
                return g.stmt(LD_W_ABS, idx, g.jump(JEQ, v, passed, failed))
            if v == 0:
                return g.stmt(LD_W_ABS, idx, g.jump(JSET, m, failed, passed))
            if m == v and m & (m - 1) == 0:
                return g.stmt(LD_W_ABS, idx, g.jump(JSET, m, passed, failed))
            return g.stmt(LD_W_ABS, idx, g.stmt(ALU_AND_K, m, g.jump(JEQ, v, passed, failed)))

        return lambda passed, failed: half(True, half(False, passed, failed), failed)

    def eq(argno, value, width=4):
        return masked_eq(argno, width, (1 << (8 * width)) - 1, value & ((1 << (8 * width)) - 1))

    def any_of(*conds):
        """The first condition that passes passes; each failure tries the next."""
        def compile_(passed, failed):
            node = failed
            for c in reversed(conds):
                node = c(passed, node)
            return node
        return compile_

    def not_(cond):
        return lambda passed, failed: cond(failed, passed)

    def all_of(*conds):
        """De Morgan: none of the negations passes (the same nodes, built in the same order)."""
        return not_(any_of(*map(not_, conds)))

    def if_(cond, then, else_):
        return lambda: cond(then(), else_())

    def switch(argno, cases, default, width=4, mask=None):
        """Switch(arg [& mask]).Cases(...): one full check per case."""
        def compile_():
            node = default()
            for values, result in reversed(cases):
                r = result()
                for v in reversed(values):
                    if mask is None:
                        node = eq(argno, v, width)(r, node)
                    else:
                        node = masked_eq(argno, width, mask, v)(r, node)
            return node
        return compile_

    A = lambda: allow()

    def restrict_clone():
        flags = 0
        for bit in (0x100, 0x200, 0x400, 0x800, 0x10000, 0x40000, 0x80000, 0x100000, 0x200000):
            flags |= bit
        glibc = eq(0, flags, 8)
        fork_or_vfork = any_of(masked_eq(0, 8, 0x100 | 0x10000, 0), masked_eq(0, 8, 0x4000 | 0x100, 0x4000 | 0x100))
        return lambda: glibc(allow(), fork_or_vfork(error(EPERM), crash("clone")))

    not_allowed_open = (1 << 32) - 1
    restrict_mmap = if_(masked_eq(3, 4, ~0x26833 & not_allowed_open, 0), A, crash)
    restrict_mprotect = if_(masked_eq(2, 4, ~0x7 & not_allowed_open, 0), A, crash)
    restrict_fcntl = switch(1, [
        ((3, 1, 1034, 2, 6, 7, 5, 0, 1030), A),
        ((4,), if_(masked_eq(2, 8, ~0x1C9C03 & ((1 << 64) - 1), 0), A, crash)),
        ((1033,), if_(masked_eq(2, 8, ~0x7 & ((1 << 64) - 1), 0), A, crash)),
    ], crash)
    restrict_prctl = switch(0, [((16, 15, 3, 4), A)], if_(eq(0, 0x59616D61), lambda: error(EPERM), lambda: crash("prctl")))
    restrict_ioctl = switch(1, [((0x5401, 0x541B), A)], lambda: crash("ioctl"))
    restrict_futex = switch(1, [((0, 1, 3, 4, 5, 9, 10), A)], lambda: error(EINVAL), mask=~0x180 & not_allowed_open)
    restrict_priority = if_(eq(0, 0), switch(1, [((0, pid), A)], lambda: error(EPERM)), crash)
    restrict_getrandom = if_(masked_eq(2, 4, ~1 & not_allowed_open, 0), A, crash)
    restrict_madvise = if_(any_of(eq(2, 4), eq(2, 1), eq(2, 9), eq(2, 0), eq(2, 8)), A, lambda: error(EPERM))
    restrict_socketpair = if_(eq(0, 1), A, crash)
    restrict_kill = if_(eq(0, pid), A, lambda: crash("kill"))
    restrict_statx = if_(eq(3, 0x7FF), lambda: error(ENOSYS), lambda: error(EPERM))
    restrict_sockopt = if_(all_of(eq(1, 1), eq(2, 42)), A, crash)
    restrict_tgsigqueueinfo = if_(eq(0, pid), A, lambda: error(EPERM))
    restrict_clock = if_(masked_eq(0, 4, 0x80000000, 0), switch(0, [((7, 1, 6, 4, 2, 0, 5, 3), A)], crash), crash)
    restrict_pkey_alloc = if_(eq(0, 0), A, crash)

    allowed = """brk mlock munlock munmap sched_yield sched_getaffinity epoll_create epoll_wait epoll_pwait
        epoll_create1 epoll_ctl eventfd eventfd2 fstat ftruncate get_robust_list exit exit_group wait4 waitid
        lseek poll ppoll pselect6 read readv pread64 preadv recvfrom recvmsg select write writev pwrite64 pwritev
        sendmsg sendto pipe pipe2 gettimeofday time rt_sigaction rt_sigprocmask rt_sigreturn rt_sigtimedwait
        sigaltstack capget getegid geteuid getgid getgroups getpid getppid getresgid getsid gettid getuid
        getresuid restart_syscall close dup dup2 dup3 shutdown nanosleep uname rseq pkey_free mincore
        memfd_create""".split()
    filesystem = """access chmod chown creat futimesat lchown link lstat mkdir mknod open readlink rename rmdir
        stat symlink unlink uselib ustat utimes execve faccessat faccessat2 fchmodat fchownat linkat
        mkdirat mknodat openat readlinkat renameat renameat2 statfs symlinkat truncate unlinkat utime
        utimensat getcwd chdir fchdir""".split()
    eperm = """sendfile fork vfork set_robust_list seccomp shmget shmat shmctl shmdt semget semop semctl
        semtimedop msgget msgsnd msgrcv msgctl umask fallocate fchmod fchown getdents getdents64 accept
        accept4 bind connect socket listen capset ioperm iopl setfsgid setfsuid setgid setgroups setregid
        setresgid setresuid setreuid setuid""".split()
    rules = {
        "clone": restrict_clone(), "clone3": lambda: error(ENOSYS), "pidfd_open": lambda: error(ENOSYS),
        "fcntl": restrict_fcntl, "futex": restrict_futex, "getpriority": restrict_priority,
        "setpriority": restrict_priority, "getrandom": restrict_getrandom, "madvise": restrict_madvise,
        "mmap": restrict_mmap, "mprotect": restrict_mprotect, "pkey_mprotect": restrict_mprotect,
        "prctl": restrict_prctl, "socketpair": restrict_socketpair, "kill": restrict_kill,
        "tgkill": restrict_kill, "tkill": lambda: crash("kill"), "statx": restrict_statx,
        "getsockopt": restrict_sockopt, "setsockopt": restrict_sockopt,
        "rt_tgsigqueueinfo": restrict_tgsigqueueinfo, "clock_gettime": restrict_clock,
        "clock_getres": restrict_clock, "clock_nanosleep": restrict_clock,
        "pkey_alloc": restrict_pkey_alloc, "ioctl": restrict_ioctl,
        "newfstatat": lambda: crash("fstatat"),
    }
    for name in allowed:
        rules.setdefault(name, A)
    for name in filesystem:
        rules.setdefault(name, lambda: error(EPERM))
    for name in eperm:
        rules.setdefault(name, lambda: error(EPERM))
    unknown = [n for n in rules if n not in nr]
    assert not unknown, unknown
    by_nr = {nr[n]: f for n, f in rules.items()}
    top = max(nr.values()) + 1
    # Policy per number, then ranges of equal nodes (FindRanges); the
    # compiled nodes are shared, so equal policies give equal nodes.
    ranges = []
    for n in range(top + 1):
        node = by_nr.get(n, crash)() if n < top else crash()
        if not ranges or ranges[-1][1] != node:
            ranges.append((n, node))

    def jump_table(rs):
        if len(rs) == 1:
            return rs[0][1]
        mid = len(rs) // 2
        f = jump_table(rs[:mid])
        t = jump_table(rs[mid:])
        return g.jump(JGE, rs[mid][0], t, f)

    table_ = jump_table(ranges)
    x32 = g.jump(JSET, 0x40000000, kill(), table_)
    load_nr = g.stmt(LD_W_ABS, 0, x32)
    entry = g.stmt(LD_W_ABS, 4, g.jump(JEQ, AUDIT_ARCH_X86_64, load_nr, kill()))
    assert entry == len(g.rev) - 1
    return g.insns()


# ---------------------------------------------------------------- output

MNEMONIC = {JEQ: "jeq", JGE: "jge", JSET: "jset"}


def asm(insns, title):
    targets = set()
    for pc, (code, jt, jf, k, _) in enumerate(insns):
        if code == JA:
            targets.add(pc + 1 + k)
        elif code in MNEMONIC:
            targets.update((pc + 1 + jt, pc + 1 + jf))
    lines = [f"; {line}" if line else ";" for line in title.splitlines()]
    for pc, (code, jt, jf, k, comment) in enumerate(insns):
        label = f"l{pc}:" if pc in targets else ""
        if code == LD_W_ABS:
            text = f"ld [{k}]"
        elif code == ALU_AND_K:
            text = f"and #{k:#x}"
        elif code == RET_K:
            text = f"ret #{k:#x}"
        elif code == JA:
            text = f"ja l{pc + 1 + k}"
        else:
            text = f"{MNEMONIC[code]} #{k:#x}, l{pc + 1 + jt}, l{pc + 1 + jf}"
        line = f"{label:8}{text}"
        if comment:
            line = f"{line:40}; {comment}"
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


FILTERS = {
    "sshd_preauth": (lambda: sshd_preauth("x86_64"), "x86_64"),
    "sshd_preauth_i386": (lambda: sshd_preauth("i386"), "i386"),
    "chromium_baseline": (chromium_baseline, "x86_64"),
}

TITLES = {
    "sshd_preauth": "sshd_preauth: OpenSSH's preauth sandbox rules (x86_64), laid out as its SC_* macros do.",
    "sshd_preauth_i386": "sshd_preauth_i386: OpenSSH's preauth sandbox rules (i386: socketcall, mmap2, *_time64).",
    "chromium_baseline": "chromium_baseline: rules of Chromium's baseline policy (x86_64), laid out as its\n"
    "policy compiler does (jge search over nr ranges, 32-bit argument checks, shared instructions).",
}


def inputs(name):
    _, abi = FILTERS[name]
    nr = table(abi)
    arch = AUDIT_ARCH_X86_64 if abi == "x86_64" else AUDIT_ARCH_I386
    ip = 0
    out = []

    def vec(n, args=(0,) * 6, a=arch):
        args = list(args) + [0] * (6 - len(args))
        out.append({"arch": a, "nr": n, "ip": ip, "args": args})

    for n in range(max(nr.values()) + 4):
        vec(n)
    for n in (1000, 0x3FFFFFFF, 0x40000000 | nr["read"], 0x40000000 | nr["close"], -1):
        vec(n)
    vec(nr["read"], a=AUDIT_ARCH_I386 if abi == "x86_64" else AUDIT_ARCH_X86_64)
    # Argument edges for every syscall whose rule reads an argument.
    edges = [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 13, 15, 16, 18, 41, 42, 67, 0x80, 0x81, 0x89, 0x100, 0x183,
             0x7FF, 0x1092, 0x4000, 0x4100, 0x5401, 0x541B, 0x20000, 0x26833, 0x100032, 0x3D0F00,
             0x59616D61, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x1_00000000, 0xFFFFFFFF_00000000,
             0xFFFFFFFF_80000000, 0xFFFFFFFF_FFFFFFFF]
    if abi != "x86_64":
        edges = [e for e in edges if e < 1 << 32]
    checked = ("madvise mmap mmap2 mprotect futex futex_time64 setsockopt socketcall clone fcntl getpriority "
               "setpriority getrandom prctl socketpair kill tgkill statx getsockopt rt_tgsigqueueinfo "
               "clock_gettime clock_getres clock_nanosleep pkey_alloc ioctl pkey_mprotect").split()
    for name_ in checked:
        if name_ not in nr:
            continue
        for i in range(4):
            for e in edges:
                args = [0] * 6
                args[i] = e
                vec(nr[name_], args)
    # Pairs the rules combine: setsockopt / getsockopt (level, optname).
    for name_ in ("setsockopt", "getsockopt"):
        if name_ in nr:
            for level in (0, 1, 41, 0x1_00000000):
                for opt in (1, 42, 67, 0x1_00000000 | 1):
                    if abi == "x86_64" or (level < 1 << 32 and opt < 1 << 32):
                        vec(nr[name_], [3, level, opt, 0, 0, 0])
    for name_ in ("getpriority", "setpriority"):
        if name_ in nr:
            for which in (0, 1):
                for who in (0, 4242, 4243):
                    vec(nr[name_], [which, who])
    return out


def main(argv):
    if argv[1:2] == ["asm"]:
        for name, (build, _) in FILTERS.items():
            with open(os.path.join(HERE, f"{name}.asm"), "w") as f:
                f.write(asm(build(), TITLES[name] + "\nGenerated by sandboxes.py (our own); see README.md."))
    elif argv[1:2] == ["inputs"]:
        for v in inputs(argv[2]):
            print(json.dumps(v, separators=(",", ":")))
    elif argv[1:2] == ["merge"]:
        with open(argv[3]) as a, open(argv[4]) as b:
            for line, result in zip(a, b):
                v, r = json.loads(line), json.loads(result)
                if r.get("action") is None:
                    continue
                v["action"] = r["action"]
                print(json.dumps(v, separators=(",", ":")))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
