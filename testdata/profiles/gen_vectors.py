#!/usr/bin/python3
"""Inputs (action-less) for docker_like: every table nr per arch, a few outside, arg-rule edges."""
import json, seccomp, sys
X86_64, I386, X32 = 0xc000003e, 0x40000003, 0xc000003e
IP = 0x5ebf00001019
M = 0xffffffffffffffff
def names(a):
    out = []
    for n in range(0, 600):
        try:
            seccomp.resolve_syscall(a, n); out.append(n)
        except Exception:
            pass
    return out
def vec(arch, nr, args=(0,)*6):
    args = list(args) + [0] * (6 - len(args))
    print(json.dumps({"arch": arch, "nr": nr, "ip": IP, "args": args}))
tabs = [(X86_64, seccomp.Arch.X86_64, 0), (I386, seccomp.Arch.X86, 0), (X32, seccomp.Arch.X32, 0x40000000)]
edges = [0, 1, 0xf, 0x10, 0x11, 8, 0x20008, 0xffffffff, 0xffffffff_00000000, 0x1_00000000, 0x7e020000,
         0x00020000, 0x40000000, 0x10000, 0x20000, 0x80000000, 40, 39, 41, 2, 3, M]
for arch, a, bit in tabs:
    nrs = names(a)
    for n in nrs:
        vec(arch, (n | bit) if bit else n)
    for n in (max(nrs) + 1, 1000, 0x3fffffff, -1):
        vec(arch, n if n < 0 else (n | bit))
    for name in ("personality", "clone", "socket", "ptrace", "mbind", "set_mempolicy",
                 "get_mempolicy", "move_pages"):
        try:
            n = seccomp.resolve_syscall(a, name)
        except Exception:
            continue
        n = n | bit
        for e in edges:
            for i in range(6):
                args = [0] * 6; args[i] = e; vec(arch, n, args)
