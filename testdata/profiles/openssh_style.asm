; openssh_style: a hand-written filter after the shape of the argument
; checks OpenSSH's preauth sandbox generates (its SC_ALLOW_ARG_MASK and
; futex-op macros: the low word masked and compared, then the high word),
; written for bpfconv's tests, not taken from OpenSSH. mmap is allowed when
; args[3] has no flag outside a mask, ERRNO(EINVAL) otherwise; futex for six
; operations (FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME masked off),
; ERRNO(EACCES) for any other; every other syscall ERRNO(EPERM).
        ld [4]
        jeq #0xc000003e, arch_ok, kill
arch_ok: ld [0]
        jeq #9, mmap, not_mmap
mmap:   ld [40]                     ; args[3].lo
        and #0xffefffcd
        jeq #0, mmap_hi, mmap_deny
mmap_hi: ld [44]                    ; args[3].hi
        and #0xffffffff
        jeq #0, allow, mmap_deny
mmap_deny: ret #0x50016
not_mmap: jeq #202, f0, deny
f0:     ld [24]
        and #0xfffffe7f
        jeq #0, f0hi, f1
f0hi:   ld [28]
        and #0xffffffff
        jeq #0, allow, f1
f1:     ld [24]
        and #0xfffffe7f
        jeq #1, f1hi, f3
f1hi:   ld [28]
        and #0xffffffff
        jeq #0, allow, f3
f3:     ld [24]
        and #0xfffffe7f
        jeq #3, f3hi, f4
f3hi:   ld [28]
        and #0xffffffff
        jeq #0, allow, f4
f4:     ld [24]
        and #0xfffffe7f
        jeq #4, f4hi, f9
f4hi:   ld [28]
        and #0xffffffff
        jeq #0, allow, f9
f9:     ld [24]
        and #0xfffffe7f
        jeq #9, f9hi, f10
f9hi:   ld [28]
        and #0xffffffff
        jeq #0, allow, f10
f10:    ld [24]
        and #0xfffffe7f
        jeq #10, f10hi, futex_deny
f10hi:  ld [28]
        and #0xffffffff
        jeq #0, allow, futex_deny
futex_deny: ret #0x5000d
deny:   ret #0x50001
allow:  ret #0x7fff0000
kill:   ret #0x80000000
