fn main() {
    let path = std::env::args().nth(1).unwrap();
    let insns = cbpf::raw::decode(&std::fs::read(&path).unwrap()).unwrap();
    let p = cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap();
    let part = seccomp::fast::Partition::build(&p, &mut Default::default(), 100000).unwrap();
    for a in &part.arches {
        println!("arch {:#x} {:?} ranges {}", a.arch, a.cut, a.ranges.len());
    }
    println!("other {:?}", part.other_arches);
    for (i, r) in part.residuals.iter().enumerate() {
        println!("residual {i}: {} insns reads_a {} reads_x {}", r.program.len(), r.reads_a, r.reads_x);
        if r.program.len() < 400 {
            print!("{}", seccomp::disasm::disasm(r.program.original(), Default::default()));
        }
    }
    let out = optimize::build(&p, &mut Default::default()).unwrap();
    println!("{:?}", out.stats);
    if std::env::args().nth(2).is_some() {
        print!("{}", seccomp::disasm::disasm(out.program.original(), Default::default()));
    }
}
