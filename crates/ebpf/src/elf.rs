//! A program as a relocatable ELF object (`ET_REL`, `ELFCLASS64`,
//! little-endian, `EM_BPF`), the form clang emits and libbpf, `bpftool
//! prog load`, `ip link set … xdp obj`, `tc filter … bpf obj` and
//! `llvm-objdump -d` read.
//!
//! ```text
//! [0] (null)
//! [1] <section>   PROGBITS  AX  align 8   the instructions (libbpf's section name picks the program type: xdp, tc, socket)
//! [2] license     PROGBITS  WA  align 1   NUL-terminated licence string (libbpf passes it to BPF_PROG_LOAD)
//! [3] .symtab     SYMTAB        align 8   null; <name> GLOBAL FUNC in [1], size 8 × n; _license GLOBAL OBJECT in [2]
//! [4] .strtab     STRTAB
//! [5] .shstrtab   STRTAB
//! ```
//!
//! No `.BTF`/`.BTF.ext`: libbpf loads programs without them (it needs
//! BTF only for BTF-defined maps, global data, CO-RE relocations and
//! `struct_ops`, none of which a converted filter has), and no
//! relocations (the programs use no maps). A hand-written writer rather
//! than the `object` crate's: the layout above is fixed, about a hundred
//! lines, and a dependency would bring its own builder for the same six
//! sections.
//!
//! ```
//! use ebpf::elf::Object;
//! let insns = [ebpf::Insn::new(0xb4, 0, 0, 0, 2), ebpf::Insn::new(0x95, 0, 0, 0, 0)];
//! let bytes = Object { section: "xdp", symbol: "filter", license: "Dual MIT/GPL", insns: &insns }.to_bytes()?;
//! assert_eq!(&bytes[..4], b"\x7fELF");
//! assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 247); // EM_BPF
//! # Ok::<(), ebpf::elf::ElfError>(())
//! ```

use crate::insn::{encode, Insn};

/// `EM_BPF` (include/uapi/linux/elf-em.h).
pub const EM_BPF: u16 = 247;

const ELF_HEADER: usize = 64;
const SECTION_HEADER: usize = 64;
const SYMBOL: usize = 24;
const ET_REL: u16 = 1;
const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;
const STB_GLOBAL: u8 = 1;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;

/// Why an object cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElfError {
    #[error("ELF {what} `{name}` is empty or holds a NUL byte")]
    BadName { what: &'static str, name: String },
    #[error("an ELF object needs at least one instruction")]
    Empty,
}

/// One program in one section.
#[derive(Debug, Clone, Copy)]
pub struct Object<'a> {
    /// The program's section (`xdp`, `tc`, `socket`, ... as libbpf names them).
    pub section: &'a str,
    /// The program's symbol: the name libbpf and bpftool give it.
    pub symbol: &'a str,
    /// The `license` section's string.
    pub license: &'a str,
    pub insns: &'a [Insn],
}

/// A string table under construction: offsets of NUL-terminated names.
struct Strtab(Vec<u8>);

impl Strtab {
    fn new() -> Strtab {
        Strtab(vec![0])
    }

    fn add(&mut self, name: &str) -> u32 {
        let at = self.0.len() as u32;
        self.0.extend_from_slice(name.as_bytes());
        self.0.push(0);
        at
    }
}

/// One section header's fields.
struct Section {
    name: u32,
    kind: u32,
    flags: u64,
    offset: usize,
    size: usize,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

impl Section {
    /// A section of `kind` at `(offset, size)` of the file, with no link,
    /// info or entry size.
    fn new(name: u32, kind: u32, flags: u64, (offset, size): (usize, usize), align: u64) -> Section {
        Section { name, kind, flags, offset, size, link: 0, info: 0, align, entsize: 0 }
    }
}

impl Object<'_> {
    /// The object file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ElfError> {
        for (what, name) in [("section", self.section), ("symbol", self.symbol), ("license", self.license)] {
            if name.is_empty() || name.contains('\0') {
                return Err(ElfError::BadName { what, name: name.to_string() });
            }
        }
        if self.insns.is_empty() {
            return Err(ElfError::Empty);
        }
        let text = encode(self.insns);
        let mut license = self.license.as_bytes().to_vec();
        license.push(0);
        let mut strtab = Strtab::new();
        let (program_name, license_name) = (strtab.add(self.symbol), strtab.add("_license"));
        let mut symtab = vec![0u8; SYMBOL];
        symbol(&mut symtab, program_name, STT_FUNC, 1, text.len());
        symbol(&mut symtab, license_name, STT_OBJECT, 2, license.len());
        let mut shstrtab = Strtab::new();
        let names = [self.section, "license", ".symtab", ".strtab", ".shstrtab"].map(|n| shstrtab.add(n));

        // Contents in section order, each at its alignment.
        let mut out = vec![0u8; ELF_HEADER];
        let place = |out: &mut Vec<u8>, bytes: &[u8], align: usize| {
            while out.len() % align != 0 {
                out.push(0);
            }
            let at = out.len();
            out.extend_from_slice(bytes);
            at
        };
        let text_at = place(&mut out, &text, 8);
        let license_at = place(&mut out, &license, 1);
        let symtab_at = place(&mut out, &symtab, 8);
        let strtab_at = place(&mut out, &strtab.0, 1);
        let shstrtab_at = place(&mut out, &shstrtab.0, 1);
        let sections = [
            Section::new(names[0], SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, (text_at, text.len()), 8),
            Section::new(names[1], SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, (license_at, license.len()), 1),
            // Linked to .strtab; the first non-local symbol is the program's.
            Section {
                link: 4,
                info: 1,
                entsize: SYMBOL as u64,
                ..Section::new(names[2], SHT_SYMTAB, 0, (symtab_at, symtab.len()), 8)
            },
            Section::new(names[3], SHT_STRTAB, 0, (strtab_at, strtab.0.len()), 1),
            Section::new(names[4], SHT_STRTAB, 0, (shstrtab_at, shstrtab.0.len()), 1),
        ];
        let shoff = place(&mut out, &[], 8);
        out.extend_from_slice(&[0u8; SECTION_HEADER]);
        for s in &sections {
            section_header(&mut out, s);
        }
        let shnum = (sections.len() + 1) as u16;
        let mut header = Vec::with_capacity(ELF_HEADER);
        header.extend_from_slice(b"\x7fELF");
        header.extend_from_slice(&[2, 1, 1, 0]); // ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_NONE
        header.extend_from_slice(&[0; 8]);
        header.extend_from_slice(&ET_REL.to_le_bytes());
        header.extend_from_slice(&EM_BPF.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes()); // e_version
        header.extend_from_slice(&0u64.to_le_bytes()); // e_entry
        header.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
        header.extend_from_slice(&(shoff as u64).to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes()); // e_flags
        header.extend_from_slice(&(ELF_HEADER as u16).to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes()); // e_phentsize
        header.extend_from_slice(&0u16.to_le_bytes()); // e_phnum
        header.extend_from_slice(&(SECTION_HEADER as u16).to_le_bytes());
        header.extend_from_slice(&shnum.to_le_bytes());
        header.extend_from_slice(&(shnum - 1).to_le_bytes()); // .shstrtab is the last
        if let Some(slot) = out.get_mut(..ELF_HEADER) {
            slot.copy_from_slice(&header);
        }
        Ok(out)
    }
}

/// Appends an `Elf64_Sym`: a global symbol of `kind` in section `shndx`.
fn symbol(out: &mut Vec<u8>, name: u32, kind: u8, shndx: u16, size: usize) {
    out.extend_from_slice(&name.to_le_bytes());
    out.push((STB_GLOBAL << 4) | kind);
    out.push(0); // STV_DEFAULT
    out.extend_from_slice(&shndx.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // st_value
    out.extend_from_slice(&(size as u64).to_le_bytes());
}

/// Appends an `Elf64_Shdr`.
fn section_header(out: &mut Vec<u8>, s: &Section) {
    out.extend_from_slice(&s.name.to_le_bytes());
    out.extend_from_slice(&s.kind.to_le_bytes());
    out.extend_from_slice(&s.flags.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // sh_addr
    out.extend_from_slice(&(s.offset as u64).to_le_bytes());
    out.extend_from_slice(&(s.size as u64).to_le_bytes());
    out.extend_from_slice(&s.link.to_le_bytes());
    out.extend_from_slice(&s.info.to_le_bytes());
    out.extend_from_slice(&s.align.to_le_bytes());
    out.extend_from_slice(&s.entsize.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16_at(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes([b[at], b[at + 1]])
    }
    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    /// The headers point at the right bytes: the program section holds the
    /// encoded instructions, the names are where the tables say.
    #[test]
    fn sections_hold_what_they_say() {
        let insns = [Insn::new(0xb4, 0, 0, 0, 2), Insn::new(0x95, 0, 0, 0, 0)];
        let bytes = Object { section: "xdp", symbol: "f", license: "GPL", insns: &insns }.to_bytes().unwrap();
        let shoff = u64_at(&bytes, 40) as usize;
        let shnum = usize::from(u16_at(&bytes, 60));
        assert_eq!(shnum, 6);
        let sh = |i: usize| &bytes[shoff + 64 * i..shoff + 64 * (i + 1)];
        let content = |i: usize| {
            let (off, size) = (u64_at(sh(i), 24) as usize, u64_at(sh(i), 32) as usize);
            &bytes[off..off + size]
        };
        let shstr = content(5);
        let name = |i: usize| {
            let at = u32::from_le_bytes(sh(i)[..4].try_into().unwrap()) as usize;
            let end = shstr[at..].iter().position(|&b| b == 0).unwrap();
            std::str::from_utf8(&shstr[at..at + end]).unwrap().to_string()
        };
        assert_eq!((1..6).map(name).collect::<Vec<_>>(), ["xdp", "license", ".symtab", ".strtab", ".shstrtab"]);
        assert_eq!(content(1), encode(&insns));
        assert_eq!(content(2), b"GPL\0");
        assert_eq!(content(4), b"\0f\0_license\0");
        let sym = &content(3)[24..48];
        assert_eq!(sym[4], 0x12, "GLOBAL FUNC");
        assert_eq!(u16_at(sym, 6), 1);
        assert_eq!(u64_at(sym, 16), 16);
    }

    #[test]
    fn bad_names_are_refused() {
        let insns = [Insn::new(0x95, 0, 0, 0, 0)];
        let o = Object { section: "", symbol: "f", license: "GPL", insns: &insns };
        assert!(matches!(o.to_bytes(), Err(ElfError::BadName { what: "section", .. })));
        let o = Object { section: "xdp", symbol: "f", license: "GPL", insns: &[] };
        assert_eq!(o.to_bytes(), Err(ElfError::Empty));
    }
}
