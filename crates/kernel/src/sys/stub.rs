//! An executable page holding the two entry stubs whose `syscall` and
//! `int 0x80` instructions sit at fixed offsets, so the
//! `instruction_pointer` the kernel reports for them is known exactly.

use super::errno;

/// Where we ask for the page: the address the kernel-checked vectors in
/// testdata/filters were recorded with, so their `ip` is reproduced.
pub(crate) const PREFERRED_BASE: usize = 0x5ec0_0000_0000;
/// Offset of the 2-byte `syscall` instruction (ip = base + 0x19).
pub(crate) const SYSCALL_OFFSET: usize = 0x17;
/// Offset of the 2-byte `int 0x80` instruction (ip = base + 0x11a).
pub(crate) const INT80_OFFSET: usize = 0x118;
const SYSCALL_ENTRY: usize = 0x40;
const INT80_ENTRY: usize = 0x140;
const PAGE: usize = 4096;
const MAP_FIXED_NOREPLACE: libc::c_int = 0x10_0000;

/// `syscall; ret` at SYSCALL_OFFSET.
const SYSCALL_TAIL: [u8; 3] = [0x0f, 0x05, 0xc3];
/// At SYSCALL_ENTRY, `rdi` = &StubArgs: load rax, rsi, rdx, r10, r8, r9,
/// then rdi last, and jump back to the `syscall` at 0x17.
const SYSCALL_HEAD: [u8; 29] = [
    0x48, 0x8b, 0x07, // mov rax, [rdi]
    0x48, 0x8b, 0x77, 0x10, // mov rsi, [rdi+0x10]
    0x48, 0x8b, 0x57, 0x18, // mov rdx, [rdi+0x18]
    0x4c, 0x8b, 0x57, 0x20, // mov r10, [rdi+0x20]
    0x4c, 0x8b, 0x47, 0x28, // mov r8,  [rdi+0x28]
    0x4c, 0x8b, 0x4f, 0x30, // mov r9,  [rdi+0x30]
    0x48, 0x8b, 0x7f, 0x08, // mov rdi, [rdi+0x08]
    0xeb, 0xba, // jmp 0x17 (0x5d - 0x46)
];
/// `int 0x80; pop rbp; pop rbx; ret` at INT80_OFFSET.
const INT80_TAIL: [u8; 5] = [0xcd, 0x80, 0x5d, 0x5b, 0xc3];
/// At INT80_ENTRY: save rbx/rbp (callee-saved), load the 32-bit
/// registers eax, ebx, ecx, edx, esi, ebp, edi (zero-extending), jump to
/// the `int 0x80` at 0x118.
const INT80_HEAD: [u8; 24] = [
    0x53, // push rbx
    0x55, // push rbp
    0x8b, 0x07, // mov eax, [rdi]
    0x8b, 0x5f, 0x08, // mov ebx, [rdi+0x08]
    0x8b, 0x4f, 0x10, // mov ecx, [rdi+0x10]
    0x8b, 0x57, 0x18, // mov edx, [rdi+0x18]
    0x8b, 0x77, 0x20, // mov esi, [rdi+0x20]
    0x8b, 0x6f, 0x30, // mov ebp, [rdi+0x30]
    0x8b, 0x7f, 0x28, // mov edi, [rdi+0x28]
    0xeb, 0xc0, // jmp 0x118 (0x158 - 0x40)
];

/// Register image for one stub call: `nr` then the six arguments.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub(crate) struct StubArgs {
    pub(crate) nr: u64,
    pub(crate) args: [u64; 6],
}

/// Which entry path (and so which `seccomp_data.arch`) to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// `syscall`: x86_64, and x32 numbers.
    Syscall,
    /// `int 0x80`: i386 (needs IA32 emulation).
    Int80,
}

/// The mapped stub page. Never unmapped: children inherit it.
#[derive(Debug)]
pub(crate) struct StubPage {
    base: usize,
}

impl StubPage {
    /// Maps the page at PREFERRED_BASE if free, else anywhere.
    pub(crate) fn map() -> Result<Self, i32> {
        let base = map_page(PREFERRED_BASE as *mut libc::c_void, MAP_FIXED_NOREPLACE)
            .or_else(|_| map_page(std::ptr::null_mut(), 0))?;
        let mut page = [0xcc_u8; PAGE]; // int3 everywhere else
        let pieces: [(usize, &[u8]); 4] = [
            (SYSCALL_OFFSET, &SYSCALL_TAIL),
            (SYSCALL_ENTRY, &SYSCALL_HEAD),
            (INT80_OFFSET, &INT80_TAIL),
            (INT80_ENTRY, &INT80_HEAD),
        ];
        for (at, bytes) in pieces {
            let end = at + bytes.len();
            if let Some(dst) = page.get_mut(at..end) {
                dst.copy_from_slice(bytes);
            }
        }
        // SAFETY: `base` is a fresh private RW mapping of PAGE bytes that
        // nothing else references; then it is made read+execute only.
        let r = unsafe {
            std::ptr::copy_nonoverlapping(page.as_ptr(), base as *mut u8, PAGE);
            libc::mprotect(base as *mut libc::c_void, PAGE, libc::PROT_READ | libc::PROT_EXEC)
        };
        if r != 0 {
            return Err(errno());
        }
        Ok(StubPage { base })
    }

    /// The `instruction_pointer` seccomp sees for the `syscall` stub.
    pub(crate) fn syscall_ip(&self) -> u64 {
        (self.base + SYSCALL_OFFSET + 2) as u64
    }

    /// The `instruction_pointer` seccomp sees for the `int 0x80` stub.
    pub(crate) fn int80_ip(&self) -> u64 {
        (self.base + INT80_OFFSET + 2) as u64
    }

    /// Issues one system call from the stub; returns the raw `rax`
    /// (for `int 0x80`, the sign-extended `eax`). Async-signal-safe.
    ///
    /// # Safety
    ///
    /// The system call runs for real unless a filter stops it: call only
    /// in a forked child whose installed filter answers every call from
    /// the stub with an ERRNO or a kill (as the engine's rewrite does).
    pub(crate) unsafe fn call(&self, entry: Entry, args: &StubArgs) -> i64 {
        let at = match entry {
            Entry::Syscall => SYSCALL_ENTRY,
            Entry::Int80 => INT80_ENTRY,
        };
        // SAFETY: the page holds, at `at`, a complete function following
        // the SysV C ABI (takes a pointer in rdi, returns in rax, saves
        // rbx/rbp, touches only caller-saved registers otherwise; the
        // kernel's syscall path clobbers only rcx/r11). The page stays
        // mapped for the life of the process.
        let raw = unsafe {
            let f: extern "C" fn(*const StubArgs) -> i64 = std::mem::transmute(self.base + at);
            f(args)
        };
        match entry {
            Entry::Syscall => raw,
            Entry::Int80 => i64::from(raw as i32),
        }
    }
}

fn map_page(hint: *mut libc::c_void, extra: libc::c_int) -> Result<usize, i32> {
    // SAFETY: an anonymous private mapping; with MAP_FIXED_NOREPLACE the
    // kernel refuses rather than replace an existing mapping.
    let p = unsafe {
        libc::mmap(
            hint,
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(errno());
    }
    if extra != 0 && p != hint {
        // An old kernel ignoring the flag placed it elsewhere: fine, but
        // we only keep the page we asked for on this path.
        // SAFETY: unmaps the page just mapped.
        unsafe { libc::munmap(p, PAGE) };
        return Err(libc::EEXIST);
    }
    Ok(p as usize)
}
