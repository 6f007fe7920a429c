//! The code against a reference walk of the same nodes, and the checks
//! that keep unsafe trees out.

use proptest::prelude::*;
use test_data::require::{have, Need};

use super::*;

/// What the code must compute: the same walk, in Rust.
fn reference(nodes: &[Node], mut node: u32, data: &[u8; DATA_SIZE]) -> u64 {
    let word = |offset: u32| {
        let at = offset as usize;
        match data.get(at..at + 4) {
            Some(&[a, b, c, d]) => u32::from_ne_bytes([a, b, c, d]),
            _ => 0,
        }
    };
    loop {
        let Some(n) = nodes.get(node as usize) else { return u64::MAX };
        let target = match n.guard {
            Some(g) if word(g.offset) & g.mask != g.value => g.other,
            _ => {
                let v = word(n.offset) & n.mask;
                let run = n.starts.partition_point(|&s| s <= v).saturating_sub(1);
                n.targets.get(run).copied().unwrap_or(Target::Leaf(u64::MAX))
            }
        };
        match target {
            Target::Leaf(v) => return v,
            Target::Node(c) => node = c,
        }
    }
}

/// Compiles `nodes`, or says why the host cannot (a failure under CI).
fn compiled(test: &str, nodes: &[Node]) -> Option<Trees> {
    match Trees::compile(nodes) {
        Err(e @ (NativeError::Unsupported | NativeError::Os(_))) => have::<Trees, _>(test, Need::Native, Err(e)),
        other => Some(other.unwrap_or_else(|e| panic!("{test}: {e}"))),
    }
}

fn data_with(offset: u32, word: u32) -> [u8; DATA_SIZE] {
    let mut data = [0u8; DATA_SIZE];
    if let Some(w) = data.get_mut(offset as usize..offset as usize + 4) {
        w.copy_from_slice(&word.to_ne_bytes());
    }
    data
}

/// libseccomp's shape: `hi == 0` guarding a switch on the low word, whose
/// runs lead to leaves and to an earlier node; 64-bit and 32-bit leaves.
#[test]
fn a_guarded_switch_answers_every_run_and_both_sides_of_its_guard() {
    let nodes = vec![
        Node {
            guard: None,
            offset: 20,
            mask: 0x6,
            starts: vec![0, 6],
            targets: vec![Target::Leaf(7), Target::Leaf(1 << 40)],
        },
        Node {
            guard: Some(Guard { offset: 28, mask: u32::MAX, value: 0, other: Target::Leaf(0x8000_0000) }),
            offset: 24,
            mask: u32::MAX,
            starts: vec![0, 3, 4, 0x5401, 0x5402, 0xffff_fff0],
            targets: vec![
                Target::Leaf(1),
                Target::Node(0),
                Target::Leaf(2),
                Target::Leaf(3),
                Target::Leaf(4),
                Target::Leaf(u64::MAX),
            ],
        },
    ];
    let Some(trees) = compiled("a_guarded_switch_answers_every_run_and_both_sides_of_its_guard", &nodes) else {
        return;
    };
    assert!(trees.code_len() > 0);
    let mut checked = 0;
    for &start in &[0u32, 3, 4, 0x5401, 0x5402, 0xffff_fff0] {
        for v in [start.wrapping_sub(1), start, start.wrapping_add(1)] {
            for hi in [0u32, 1, 0xffff_ffff] {
                for prot in [0u32, 2, 6, 7] {
                    let mut data = data_with(24, v);
                    data[28..32].copy_from_slice(&hi.to_ne_bytes());
                    data[20..24].copy_from_slice(&prot.to_ne_bytes());
                    assert_eq!(trees.eval(1, &data), Some(reference(&nodes, 1, &data)), "v {v:#x} hi {hi} prot {prot}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 6 * 3 * 3 * 4);
    assert_eq!(trees.eval(1, &data_with(24, 3)), Some(7), "through node 0");
    assert_eq!(trees.eval(2, &[0; DATA_SIZE]), None, "no node 2");
}

/// Trees the code must not run are refused, each with what is wrong.
#[test]
fn unsafe_or_malformed_nodes_are_refused() {
    let node = |offset, starts: Vec<u32>, targets: Vec<Target>| Node { guard: None, offset, mask: 1, starts, targets };
    let leaf = Target::Leaf(0);
    let cases = [
        (vec![node(62, vec![0], vec![leaf])], "offset 62"),
        (vec![node(64, vec![0], vec![leaf])], "offset 64"),
        (vec![node(0, vec![0, 1], vec![leaf])], "2 run starts for 1 targets"),
        (vec![node(0, vec![1], vec![leaf])], "not ascending from 0"),
        (vec![node(0, vec![0, 5, 5], vec![leaf; 3])], "not ascending from 0"),
        (vec![node(0, vec![0], vec![Target::Node(0)])], "target node 0 does not come before it"),
        (vec![node(0, vec![0], vec![leaf]), node(4, vec![0], vec![Target::Node(3)])], "node 1: target node 3"),
        (vec![node(5, vec![0], vec![leaf])], "offset 5"),
    ];
    for (nodes, want) in cases {
        match Trees::compile(&nodes) {
            Ok(_) => panic!("accepted {nodes:?}"),
            Err(e) => assert!(e.to_string().contains(want), "{e} lacks {want:?}"),
        }
    }
    let guarded = Node {
        guard: Some(Guard { offset: 4, mask: 1, value: 0, other: Target::Node(0) }),
        ..node(0, vec![0], vec![leaf])
    };
    let refused = Trees::compile(&[guarded]);
    assert!(matches!(refused, Err(NativeError::ForwardTarget { node: 0, target: 0 })), "{refused:?}");
}

/// Random trees: each node switches on a random word with a random mask
/// over random runs, naming random earlier nodes; the code and the
/// reference agree on random inputs and around every run start.
fn arb_nodes() -> impl Strategy<Value = Vec<Node>> {
    let node = (
        0u32..16,
        prop_oneof![Just(u32::MAX), any::<u32>(), Just(0xff)],
        prop::collection::btree_set(1u32.., 0..40),
        prop::collection::vec((any::<bool>(), any::<u64>(), any::<u32>()), 41),
        prop::option::of((0u32..16, any::<u32>(), any::<u32>(), any::<bool>(), any::<u32>())),
    );
    prop::collection::vec(node, 1..12).prop_map(|raw| {
        let target = |i: usize, (to_node, leaf, pick): (bool, u64, u32)| {
            if to_node && i > 0 {
                Target::Node(pick % i as u32)
            } else {
                Target::Leaf(leaf)
            }
        };
        raw.into_iter()
            .enumerate()
            .map(|(i, (word, mask, starts, picks, guard))| {
                let starts: Vec<u32> = std::iter::once(0).chain(starts).collect();
                let targets = starts.iter().zip(&picks).map(|(_, &p)| target(i, p)).collect();
                let guard = guard.map(|(gword, gmask, value, to_node, pick)| Guard {
                    offset: gword * 4,
                    mask: gmask,
                    value: value & gmask,
                    other: target(i, (to_node, u64::from(pick), pick)),
                });
                Node { guard, offset: word * 4, mask, starts, targets }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn native_trees_walk_as_the_reference_does(nodes in arb_nodes(), inputs in prop::collection::vec(prop::array::uniform16(any::<u32>()), 8)) {
        let Some(trees) = compiled("native_trees_walk_as_the_reference_does", &nodes) else { return Ok(()) };
        let last = nodes.len() as u32 - 1;
        let mut datas: Vec<[u8; DATA_SIZE]> = Vec::new();
        for words in &inputs {
            let mut data = [0u8; DATA_SIZE];
            for (chunk, w) in data.chunks_exact_mut(4).zip(words) {
                chunk.copy_from_slice(&w.to_ne_bytes());
            }
            datas.push(data);
        }
        // Around every run start of every node, on its word (unmasked
        // starts are what the masked word is compared with).
        for n in &nodes {
            for &s in &n.starts {
                for v in [s.wrapping_sub(1), s, s.wrapping_add(1)] {
                    datas.push(data_with(n.offset, v));
                    if let Some(g) = n.guard {
                        let mut d = data_with(n.offset, v);
                        d[g.offset as usize..g.offset as usize + 4].copy_from_slice(&g.value.to_ne_bytes());
                        datas.push(d);
                    }
                }
            }
        }
        for data in &datas {
            for node in 0..=last {
                prop_assert_eq!(trees.eval(node, data), Some(reference(&nodes, node, data)));
            }
        }
    }
}
