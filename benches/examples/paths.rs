fn main() {
    let f = bpfconv_benches::filters::Filter::load("long_jumps_large").unwrap();
    for (name, nr, args) in [("brk",12,[0u64;6]),("close",3,[0;6]),("getpid a0=1",39,[1,0,0,0,0,0]),("getpid a0=ptr",39,[0x7ffd_1234_5000,0,0,0,0,0]),("times",100,[1,0,0,0,0,0]),("read",0,[1,0,0,0,0,0]),("chdir 0",80,[0,1,0,0,0,0]),("chdir 99",80,[99,1,0,0,0,0]),("chdir 50",80,[50,1,0,0,0,0])] {
        let d = cbpf::SeccompData { nr, arch: 0xc000003e, instruction_pointer: 0, args }.to_bytes();
        println!("{name}: action {:#x} path {}", f.interp.run_seccomp(&d).unwrap(), f.path_length(&d));
    }
}
