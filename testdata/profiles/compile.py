#!/usr/bin/python3
"""Compile an OCI runtime-spec `linux.seccomp` profile with the system's
libseccomp (Debian's python3-seccomp), rule by rule the way runc adds them.

usage: compile.py PROFILE.json OUT.bpf [--optimize 1|2]
       compile.py --many < JOBS.jsonl

Exit 3 when libseccomp refuses a rule (runc would fail to start). With
`--many`, each stdin line is {"profile": {...}, "out": PATH, "optimize":
null|1|2} and each gets one stdout line: {"ok": true}, or {"refused":
"why"} where libseccomp refused a rule (one interpreter for many profiles:
the differential suite's batches).

runc's rules, as we apply them (libcontainer/seccomp/seccomp_linux.go): the
default action with defaultErrnoRet; every listed architecture added (the
native one is already there); per syscall entry and per name, one rule with
every argument condition ANDed when the entry's argument indices are
distinct, else one rule per condition; SCMP_ACT_ERRNO and SCMP_ACT_TRACE
take the entry's errnoRet, EPERM without one (defaultErrnoRet is the
default action's only); entries whose action (errno included) equals the
default are skipped; names libseccomp cannot resolve are skipped. `--optimize
2` selects libseccomp's binary-tree layout (SCMP_FLTATR_CTL_OPTIMIZE).
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
          "SCMP_ARCH_ARM": s.Arch.ARM, "SCMP_ARCH_MIPS": s.Arch.MIPS,
          "SCMP_ARCH_MIPS64": s.Arch.MIPS64, "SCMP_ARCH_MIPS64N32": s.Arch.MIPS64N32,
          "SCMP_ARCH_MIPSEL": s.Arch.MIPSEL, "SCMP_ARCH_MIPSEL64": s.Arch.MIPSEL64,
          "SCMP_ARCH_MIPSEL64N32": s.Arch.MIPSEL64N32, "SCMP_ARCH_PPC": s.Arch.PPC,
          "SCMP_ARCH_PPC64": s.Arch.PPC64, "SCMP_ARCH_PPC64LE": s.Arch.PPC64LE,
          "SCMP_ARCH_RISCV64": s.Arch.RISCV64, "SCMP_ARCH_S390": s.Arch.S390,
          "SCMP_ARCH_S390X": s.Arch.S390X}
EPERM = 1


def action(name, errno):
    """The action runc's getAction() gives libseccomp, and its value (to
    compare with the default as runc does)."""
    code = (EPERM if errno is None else errno) & 0xffff
    actions = {
        "SCMP_ACT_ALLOW": (s.ALLOW, 0x7fff0000),
        "SCMP_ACT_ERRNO": (s.ERRNO(code), 0x00050000 | code),
        "SCMP_ACT_KILL_PROCESS": (s.KILL_PROCESS, 0x80000000),
        "SCMP_ACT_KILL": (s.KILL, 0),
        "SCMP_ACT_KILL_THREAD": (s.KILL, 0),
        "SCMP_ACT_TRAP": (s.TRAP, 0x00030000),
        "SCMP_ACT_LOG": (s.LOG, 0x7ffc0000),
        "SCMP_ACT_TRACE": (s.TRACE(code), 0x7ff00000 | code),
        "SCMP_ACT_NOTIFY": (s.NOTIFY, 0x7fc00000),
    }
    if name in actions:
        return actions[name]
    raise SystemExit(f"compile.py: unknown action {name}")


class Refused(Exception):
    """libseccomp refused a rule: runc fails to start the container."""


def compile_profile(profile, out_path, optimize=None):
    default, default_value = action(profile["defaultAction"], profile.get("defaultErrnoRet"))
    try:
        f = s.SyscallFilter(defaction=default)
    except RuntimeError as e:
        raise Refused(f"libseccomp refused the default action: {e}")
    if optimize is not None:
        f.set_attr(s.Attr.CTL_OPTIMIZE, optimize)
    for arch in profile.get("architectures") or []:
        if not f.exist_arch(ARCHES[arch]):
            f.add_arch(ARCHES[arch])
    for entry in profile.get("syscalls") or []:
        act, value = action(entry["action"], entry.get("errnoRet"))
        if value == default_value:
            continue
        entry_args = entry.get("args") or []
        conds = [s.Arg(a["index"], OPS[a["op"]], a["value"], a.get("valueTwo", 0))
                 for a in entry_args]
        indices = [a["index"] for a in entry_args]
        for name in entry["names"]:
            if s.resolve_syscall(s.Arch.NATIVE, name) == -1:
                continue  # libseccomp cannot resolve it: runc skips it too
            try:
                if len(set(indices)) == len(indices):
                    f.add_rule(act, name, *conds)
                else:
                    for c in conds:
                        f.add_rule(act, name, c)
            except (RuntimeError, ValueError) as e:
                raise Refused(f"libseccomp refused a rule of {name}: {e}")
    with open(out_path, "wb") as out:
        f.export_bpf(out)


def main():
    import json
    args = sys.argv[1:]
    if args == ["--many"]:
        for line in sys.stdin:
            job = json.loads(line)
            try:
                compile_profile(job["profile"], job["out"], job.get("optimize"))
                print(json.dumps({"ok": True}), flush=True)
            except Refused as e:
                print(json.dumps({"refused": str(e)}), flush=True)
        return
    optimize = None
    if "--optimize" in args:
        i = args.index("--optimize")
        optimize = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        raise SystemExit(__doc__)
    profile = json.load(open(args[0]))
    try:
        compile_profile(profile, args[1], optimize)
    except Refused as e:
        # runc fails to start the container here.
        print(f"compile.py: {e}", file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    main()
