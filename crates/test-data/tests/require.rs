#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `require::missing` decides between a printed skip and a failure from the
//! environment; each case runs this test binary again (the ignored
//! `child` test) with its own environment, so no test changes its own.

use std::process::{Command, Output};

use test_data::require::{self, Need};

/// Runs the `child` test with `CI` and `BPFCONV_REQUIRE` as given and
/// `CHILD_NEED` naming what it reports missing.
fn run_child(need: Need, ci: Option<&str>, listed: Option<&str>) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "child", "--nocapture", "--test-threads", "1"]);
    cmd.env_remove("CI").env_remove("BPFCONV_REQUIRE").env("CHILD_NEED", need.name());
    if let Some(ci) = ci {
        cmd.env("CI", ci);
    }
    if let Some(listed) = listed {
        cmd.env("BPFCONV_REQUIRE", listed);
    }
    cmd.output().unwrap()
}

#[test]
#[ignore = "run by the other tests with their own environment"]
fn child() {
    let need = Need::from_name(&std::env::var("CHILD_NEED").unwrap()).unwrap();
    require::missing("child", need, "gone for this test");
    println!("returned after the skip");
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn a_missing_prerequisite_is_a_visible_skip_on_a_developer_machine() {
    let o = run_child(Need::Libseccomp, None, None);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("SKIPPED: child: gone for this test"), "{}", text(&o));
    assert!(text(&o).contains("returned after the skip"), "{}", text(&o));
    // CI set to anything but `true` is no CI run.
    assert!(run_child(Need::Kernel, Some("1"), None).status.success());
}

#[test]
fn under_ci_a_missing_prerequisite_fails_the_test() {
    for need in Need::ALL.into_iter().filter(|n| n.required_by_ci()) {
        let o = run_child(need, Some("true"), None);
        assert!(!o.status.success(), "{need:?}: {}", text(&o));
        let out = text(&o);
        assert!(out.contains("SKIPPED: child: gone for this test"), "{out}");
        assert!(out.contains(&format!("the prerequisite `{}` is required here (CI=true)", need.name())), "{out}");
        assert!(!out.contains("returned after the skip"), "{out}");
    }
}

#[test]
fn host_build_dependent_prerequisites_fail_only_when_named() {
    for need in [Need::Int80, Need::Ptrace] {
        let o = run_child(need, Some("true"), None);
        assert!(o.status.success(), "{need:?}: {}", text(&o));
        assert!(text(&o).contains("SKIPPED: child"), "{}", text(&o));
        let o = run_child(need, None, Some(&format!("kernel, {}", need.name())));
        assert!(!o.status.success(), "{need:?}: {}", text(&o));
        assert!(text(&o).contains(&format!("required here (BPFCONV_REQUIRE=kernel, {})", need.name())), "{}", text(&o));
    }
}

#[test]
fn bpfconv_require_names_prerequisites_or_all() {
    assert!(!run_child(Need::Prlimit, None, Some("prlimit")).status.success());
    assert!(run_child(Need::Prlimit, None, Some("kernel,libseccomp")).status.success());
    assert!(!run_child(Need::Dot, None, Some("all")).status.success());
    let o = run_child(Need::Dot, None, Some("kernal"));
    assert!(!o.status.success());
    assert!(text(&o).contains("unknown prerequisite `kernal`"), "{}", text(&o));
}
