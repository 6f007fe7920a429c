#!/usr/bin/python3
"""Compile an OCI runtime-spec `linux.seccomp` profile with the system's
libseccomp (Debian's python3-seccomp), rule by rule the way runc adds them.

usage: compile.py PROFILE.json OUT.bpf [--optimize 1|2]

runc's rules, as we apply them: the default action and errno; every listed
architecture added (the native one is already there); per syscall entry and
per name, one rule with every argument condition ANDed when the entry's
argument indices are distinct, else one rule per condition; entries whose
action equals the default are skipped; names unknown on every listed arch
are skipped. `--optimize 2` selects libseccomp's binary-tree layout
(SCMP_FLTATR_CTL_OPTIMIZE).
"""
import sys

import seccomp as s

OPS = {
    "SCMP_CMP_NE": s.NE, "SCMP_CMP_LT": s.LT, "SCMP_CMP_LE": s.LE,
    "SCMP_CMP_EQ": s.EQ, "SCMP_CMP_GE": s.GE, "SCMP_CMP_GT": s.GT,
    "SCMP_CMP_MASKED_EQ": s.MASKED_EQ,
}
ARCHES = {"SCMP_ARCH_X86_64": s.Arch.X86_64, "SCMP_ARCH_X86": s.Arch.X86,
          "SCMP_ARCH_X32": s.Arch.X32, "SCMP_ARCH_AARCH64": s.Arch.AARCH64,
          "SCMP_ARCH_ARM": s.Arch.ARM}


def action(name, errno, default_errno):
    if name == "SCMP_ACT_ALLOW":
        return s.ALLOW
    if name == "SCMP_ACT_ERRNO":
        return s.ERRNO(default_errno if errno is None else errno)
    if name == "SCMP_ACT_KILL_PROCESS":
        return s.KILL_PROCESS
    if name in ("SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD"):
        return s.KILL
    if name == "SCMP_ACT_TRAP":
        return s.TRAP
    if name == "SCMP_ACT_LOG":
        return s.LOG
    if name == "SCMP_ACT_TRACE":
        return s.TRACE(default_errno if errno is None else errno)
    raise SystemExit(f"compile.py: unknown action {name}")


def main():
    import json
    args = sys.argv[1:]
    optimize = None
    if "--optimize" in args:
        i = args.index("--optimize")
        optimize = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        raise SystemExit(__doc__)
    profile = json.load(open(args[0]))
    default_errno = profile.get("defaultErrnoRet", 1)
    default = profile["defaultAction"]
    f = s.SyscallFilter(defaction=action(default, None, default_errno))
    if optimize is not None:
        f.set_attr(s.Attr.CTL_OPTIMIZE, optimize)
    for arch in profile.get("architectures", []):
        if not f.exist_arch(ARCHES[arch]):
            f.add_arch(ARCHES[arch])
    for entry in profile["syscalls"]:
        if entry["action"] == default and entry.get("errnoRet") is None:
            continue
        act = action(entry["action"], entry.get("errnoRet"), default_errno)
        conds = [s.Arg(a["index"], OPS[a["op"]], a["value"], a.get("valueTwo", 0))
                 for a in entry.get("args", [])]
        indices = [a["index"] for a in entry.get("args", [])]
        for name in entry["names"]:
            try:
                if len(set(indices)) == len(indices):
                    f.add_rule(act, name, *conds)
                else:
                    for c in conds:
                        f.add_rule(act, name, c)
            except (RuntimeError, ValueError):
                pass  # a name no listed arch knows: runc skips it too
    with open(args[1], "wb") as out:
        f.export_bpf(out)


if __name__ == "__main__":
    main()
