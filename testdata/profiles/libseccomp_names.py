#!/usr/bin/python3
"""Which syscall names the system's libseccomp resolves, per arch.

usage: libseccomp_names.py < REQUEST.json > ANSWER.json

REQUEST is {"SCMP_ARCH_X86_64": ["read", "statmount", ...], ...}; ANSWER
maps each arch and name to the number libseccomp gives it on that arch, or
null where it has none (unknown to this libseccomp version, or a pseudo
number: not a syscall of that arch). Socket and IPC names on the arches
where libseccomp multiplexes them resolve to socketcall/ipc. Our own script
(python3-seccomp, Debian 12: libseccomp 2.5.4).
"""
import json
import sys

import seccomp as s

ARCHES = {"SCMP_ARCH_X86_64": s.Arch.X86_64, "SCMP_ARCH_X86": s.Arch.X86,
          "SCMP_ARCH_X32": s.Arch.X32, "SCMP_ARCH_AARCH64": s.Arch.AARCH64,
          "SCMP_ARCH_ARM": s.Arch.ARM, "SCMP_ARCH_RISCV64": s.Arch.RISCV64,
          "SCMP_ARCH_S390X": s.Arch.S390X, "SCMP_ARCH_PPC64LE": s.Arch.PPC64LE}


def main():
    request = json.load(sys.stdin)
    answer = {}
    for arch, names in request.items():
        nrs = {}
        for name in names:
            nr = s.resolve_syscall(ARCHES[arch], name)
            nrs[name] = nr if nr >= 0 else None
        answer[arch] = nrs
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
