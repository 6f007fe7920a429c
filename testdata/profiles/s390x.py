#!/usr/bin/python3
"""Export a seccomp filter whose only arch is s390x with the system's
libseccomp (Debian's python3-seccomp), and write its test vectors.

usage: s390x.py   (writes s390x.bpf, s390x.pfc, s390x.vectors.jsonl here)

libseccomp writes `struct sock_filter` in the filter's arch byte order, so
s390x.bpf is big-endian (libseccomp refuses to mix arches of different byte
order in one filter: the native x86_64 arch is removed first).

The vectors' actions follow from the rules below, not from any engine.
Arguments are 64-bit values, some with different 32-bit halves (9 and
9 << 32): an s390x kernel stores args[i] big-endian, high half first, and
libseccomp's s390x filter loads the halves from there
(`SeccompData::in_kernel_order` gives our engines the same words).
"""
import errno
import json

import seccomp as s

ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000
KILL = 0x00000000
EPERM = 0x00050000 | errno.EPERM
S390X = 0x80000016
X86_64 = 0xC000003E

ALLOWED = ["read", "write", "exit_group", "rt_sigreturn", "brk", "mmap", "munmap", "close", "fstat", "openat"]


def main():
    f = s.SyscallFilter(defaction=s.KILL_PROCESS)
    f.remove_arch(s.Arch.NATIVE)
    f.add_arch(s.Arch.S390X)
    for name in ALLOWED:
        f.add_rule(s.ALLOW, name)
    f.add_rule(s.ERRNO(errno.EPERM), "kill", s.Arg(1, s.NE, 9))
    f.add_rule(s.ALLOW, "ioctl", s.Arg(1, s.EQ, 0x5401))
    f.add_rule(s.ALLOW, "mprotect", s.Arg(2, s.MASKED_EQ, 4, 0))
    with open("s390x.bpf", "wb") as out:
        f.export_bpf(out)
    with open("s390x.pfc", "w") as out:
        f.export_pfc(out)

    nr = lambda name: s.resolve_syscall(s.Arch.S390X, name)
    both = lambda half: (half << 32) | half
    vectors = []

    def v(arch, number, action, args=(0, 0, 0, 0, 0, 0)):
        vectors.append({"arch": arch, "nr": number, "ip": 0, "args": list(args), "action": action})

    for name in ALLOWED:
        v(S390X, nr(name), ALLOW)
        v(S390X, nr(name), ALLOW, [both(0xFFFFFFFF)] * 6)
    # kill(arg1 != 9): EPERM, else the default.
    for a1, action in ((0, EPERM), (9, KILL_PROCESS), (9 << 32, EPERM), (both(9), EPERM), (both(0xFFFFFFFF), EPERM)):
        v(S390X, nr("kill"), action, [0, a1, 0, 0, 0, 0])
    # ioctl(arg1 == 0x5401) only.
    for a1, action in ((0x5401, ALLOW), (0, KILL_PROCESS), (0x5401 << 32, KILL_PROCESS), (both(0x5401), KILL_PROCESS)):
        v(S390X, nr("ioctl"), action, [0, a1, 0, 0, 0, 0])
    # mprotect(arg2 & 4 == 0).
    for a2, action in ((0, ALLOW), (3, ALLOW), (4, KILL_PROCESS), (4 << 32, ALLOW), (both(4), KILL_PROCESS),
                       (both(0xFFFFFFFF), KILL_PROCESS)):
        v(S390X, nr("mprotect"), action, [0, 0, a2, 0, 0, 0])
    # Numbers without a rule, and another arch (libseccomp's bad-arch KILL).
    for number in (0, 2, 9999, 0x7FFFFFFF):
        v(S390X, number, KILL_PROCESS)
    for number in (0, 1, 59):
        v(X86_64, number, KILL)
    with open("s390x.vectors.jsonl", "w") as out:
        for vec in vectors:
            out.write(json.dumps(vec, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
