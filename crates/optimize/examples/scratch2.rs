fn main() {
    for path in std::env::args().skip(1) {
        let insns = cbpf::raw::decode(&std::fs::read(&path).unwrap()).unwrap();
        let p = cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap();
        let t = std::time::Instant::now();
        let r = optimize::build(&p, &mut Default::default());
        let el = t.elapsed();
        match r {
            Ok(o) => println!("{path}: {:?} {:?}", el, o.stats),
            Err(e) => println!("{path}: {:?} error {e}", el),
        }
    }
}
