//! The program that checks a commit out where a job runs (`falcon_exp::code::CHECKOUT`), run as a job runs it:
//! from the snapshot in the job's folder; where that folder is not reachable (a Kubernetes pod), by cloning a URL
//! repository, its tree checked against the one recorded; and the clear failure (exit 70) of each way it can fail.

use falcon_exp::code::checkout_command;
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A repository of one commit holding `hello.txt`: its folder, commit and tree.
fn repo(dir: &Path) -> (String, String) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("hello.txt"), "from the commit\n").unwrap();
    git(dir, &["add", "hello.txt"]);
    git(dir, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one"]);
    (git(dir, &["rev-parse", "HEAD"]), git(dir, &["rev-parse", "HEAD^{tree}"]))
}

/// Runs the checkout of `commit` with the command `cat hello.txt; echo $FALCON_CODE_COMMIT; pwd`: (status, stdout,
/// stderr).
fn run(archive: &str, commit: &str, tree: &str, url: &str, tmp: &Path) -> (i32, String, String) {
    let command: Vec<String> =
        ["sh", "-c", "cat hello.txt && echo \"$FALCON_CODE_COMMIT\" && pwd"].iter().map(|s| s.to_string()).collect();
    let argv = checkout_command(archive, commit, tree, url, &command);
    let out = Command::new(&argv[0]).args(&argv[1..]).env("TMPDIR", tmp).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_checkout_unpacks_the_snapshot_or_clones_the_url_and_says_why_it_cannot() {
    let d = tempfile::tempdir().unwrap();
    let (commit, tree) = repo(&d.path().join("repo"));
    let tmp = d.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let archive = d.path().join("code.tar.gz");
    git(&d.path().join("repo"), &["archive", "--format=tar.gz", "-o", archive.to_str().unwrap(), &commit]);
    // From the snapshot: the command runs in a fresh folder under TMPDIR holding the commit's files, removed after.
    let (rc, out, err) = run(archive.to_str().unwrap(), &commit, &tree, "", &tmp);
    assert_eq!(rc, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(&lines[..2], ["from the commit", commit.as_str()], "{out}");
    assert!(lines[2].starts_with(tmp.join("falcon-code.").to_str().unwrap()), "{out}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the checkout is removed when the command ends");
    // The snapshot out of reach (a pod): the URL is cloned and the commit checked out, its tree checked.
    let url = format!("file://{}", d.path().join("repo").display());
    let (rc, out, err) = run("/nonexistent/code.tar.gz", &commit, &tree, &url, &tmp);
    assert_eq!((rc, out.lines().next()), (0, Some("from the commit")), "{err}");
    let (rc, _, err) = run("/nonexistent/code.tar.gz", &commit, &"0".repeat(40), &url, &tmp);
    assert_eq!(rc, 70);
    assert!(err.contains("is not the tree Falcon recorded"), "{err}");
    // Neither: it says so, and the command never runs.
    let (rc, out, err) = run("/nonexistent/code.tar.gz", &commit, &tree, "", &tmp);
    assert_eq!((rc, out.as_str()), (70, ""));
    assert!(err.contains("not reachable where this job runs"), "{err}");
    // A corrupt snapshot.
    std::fs::write(&archive, b"not a tarball").unwrap();
    let (rc, _, err) = run(archive.to_str().unwrap(), &commit, &tree, "", &tmp);
    assert_eq!(rc, 70);
    assert!(err.contains("cannot unpack the code of"), "{err}");
    // The command's own status is passed on.
    let argv = checkout_command("/nonexistent", &commit, &tree, &url, &["sh".into(), "-c".into(), "exit 7".into()]);
    let status = Command::new(&argv[0]).args(&argv[1..]).env("TMPDIR", &tmp).status().unwrap();
    assert_eq!(status.code(), Some(7));
}

#[tokio::test]
async fn falcons_own_folders_in_a_work_tree_are_not_changes_of_its_code() {
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("repo");
    let (commit, _) = repo(&tree);
    let jobs = tree.join(".falcon-jobs");
    std::fs::create_dir_all(jobs.join("e-1")).unwrap();
    std::fs::write(jobs.join("e-1/config.json"), "{}").unwrap();
    // Falcon's job folder inside the tree (the default `<data_dir>-jobs` beside a `.falcon` there): still clean.
    let clean = falcon_exp::code::record_work_tree(&tree, &[jobs.as_path()]).await.unwrap();
    assert_eq!(
        (clean.commit.as_str(), clean.dirty, clean.diff_sha256.as_deref()),
        (commit.as_str(), Some(false), None)
    );
    assert_eq!((clean.origin.as_str(), clean.branch.as_deref()), ("work_tree", Some("main")));
    // The same folder counted when it is not Falcon's; a change of the code always.
    let counted = falcon_exp::code::record_work_tree(&tree, &[]).await.unwrap();
    assert_eq!(counted.dirty, Some(true));
    std::fs::write(tree.join("hello.txt"), "changed\n").unwrap();
    let changed = falcon_exp::code::record_work_tree(&tree, &[jobs.as_path()]).await.unwrap();
    assert_eq!(changed.dirty, Some(true));
    assert_eq!(changed.diff_sha256.as_ref().map(String::len), Some(64));
    // Outside any work tree: nothing recorded.
    assert!(falcon_exp::code::record_work_tree(d.path(), &[]).await.is_none());
}
