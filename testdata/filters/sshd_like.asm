; sshd_like: a hand-written seccomp filter shaped like OpenSSH's preauth
; sandbox (x86_64): arch check, an allow-list, ERRNO for a few calls that
; must fail softly, argument checks on mmap/mprotect protections (ALU AND
; on args[2]) and on socketcall-free x86_64 calls, KILL for the rest.
; Written for bpfconv's test corpus; not taken from OpenSSH.
        ld [4]                          ; arch
        jeq #0xc000003e, arch_ok, kill  ; AUDIT_ARCH_X86_64
arch_ok:
        ld [0]                          ; nr
        jge #0x40000000, kill, native   ; x32 numbers
native:
        jeq #2, eacces, t_openat        ; open
t_openat:
        jeq #257, eacces, t_stat        ; openat
t_stat:
        jeq #4, eacces, t_fstat         ; stat
t_fstat:
        jeq #5, allow, t_brk            ; fstat
t_brk:
        jeq #12, allow, t_gettime       ; brk
t_gettime:
        jeq #228, allow, t_close        ; clock_gettime
t_close:
        jeq #3, allow, t_exit           ; close
t_exit:
        jeq #60, allow, t_exit_group    ; exit
t_exit_group:
        jeq #231, allow, t_futex        ; exit_group
t_futex:
        jeq #202, allow, t_getpgid      ; futex
t_getpgid:
        jeq #121, allow, t_getpid       ; getpgid
t_getpid:
        jeq #39, allow, t_getrandom     ; getpid
t_getrandom:
        jeq #318, allow, t_gettimeofday ; getrandom
t_gettimeofday:
        jeq #96, allow, t_madvise       ; gettimeofday
t_madvise:
        jeq #28, allow, t_mmap          ; madvise
t_mmap:
        jeq #9, prot, t_mprotect        ; mmap
t_mprotect:
        jeq #10, prot, t_munmap         ; mprotect
t_munmap:
        jeq #11, allow, t_nanosleep     ; munmap
t_nanosleep:
        jeq #35, allow, t_poll          ; nanosleep
t_poll:
        jeq #7, allow, t_ppoll          ; poll
t_ppoll:
        jeq #271, allow, t_read         ; ppoll
t_read:
        jeq #0, allow, t_sigprocmask    ; read
t_sigprocmask:
        jeq #14, allow, t_select        ; rt_sigprocmask
t_select:
        jeq #23, allow, t_pselect       ; select
t_pselect:
        jeq #270, allow, t_shutdown     ; pselect6
t_shutdown:
        jeq #48, allow, t_sigreturn     ; shutdown
t_sigreturn:
        jeq #15, allow, t_time          ; rt_sigreturn
t_time:
        jeq #201, allow, t_write        ; time
t_write:
        jeq #1, allow, t_writev         ; write
t_writev:
        jeq #20, allow, t_ioctl         ; writev
t_ioctl:
        jeq #16, ioctl, t_socket        ; ioctl
t_socket:
        jeq #41, eacces, kill           ; socket
prot:
        ld [36]                         ; args[2] high word
        jeq #0, prot_lo, kill
prot_lo:
        ld [32]                         ; args[2] low word (prot)
        and #0xfffffff8                 ; anything but PROT_READ|WRITE|EXEC
        jeq #0, prot_exec, kill
prot_exec:
        ld [32]
        and #0x6                        ; PROT_WRITE|PROT_EXEC together
        jeq #0x6, kill, allow
ioctl:
        ld [28]                         ; args[1] high word
        jeq #0, ioctl_lo, eperm
ioctl_lo:
        ld [24]                         ; args[1] low word (request)
        jeq #0x5401, allow, ioctl_fion  ; TCGETS
ioctl_fion:
        jeq #0x541b, allow, eperm       ; FIONREAD
eacces:
        ret #0x0005000d                 ; ERRNO(EACCES)
eperm:
        ret #0x00050001                 ; ERRNO(EPERM)
allow:
        ret #0x7fff0000
kill:
        ret #0x80000000                 ; KILL_PROCESS
