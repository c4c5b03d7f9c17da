//! Code versions: a spec's `code` resolved to a full commit and its tree archived once into the artifact store,
//! and the git work tree a spec without `code` was submitted from, recorded.
//!
//! Git runs as a program — the user's own `git`, with the user's credentials and URL rewrites, as MLflow and W&B
//! read a run's commit — never through a shell, each call bounded in time ([`SHORT`], [`LONG`]) and in what it
//! may print ([`MAX_OUTPUT`]), hooks and the file-system monitor off, prompts off. What a call needs from its
//! arguments is checked before it runs (`falcon_core::spec::Code::ref_problem`); refs reach git after
//! `--end-of-options`, never where an option could be read.
//!
//! A remote repository (a URL) is mirrored under the data dir (`code/mirrors/<hash of the URL>.git`), fetched
//! at each submission that names it. A snapshot is `git archive --format=tar.gz` of the commit, stored under
//! `code/<tree id>.tar.gz` (content-addressed: fifty experiments at one commit store it once; two commits with
//! the same tree share it), at most [`MAX_SNAPSHOT_BYTES`].

use crate::error::{ExpError, Result};
use falcon_core::spec::Code;
use falcon_infra::meta::{CodeRecord, CodeSnapshot};
use falcon_infra::{ArtifactStore, InfraError, PutMode};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How long a local git call may take.
pub const SHORT: Duration = Duration::from_secs(60);
/// How long a clone, fetch or archive may take.
pub const LONG: Duration = Duration::from_secs(600);
/// The most a git call may print that is read whole (status, rev-list); more is an error naming the call.
pub const MAX_OUTPUT: usize = 16 << 20;
/// The largest snapshot stored: 1 GiB.
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

/// Where a submission comes from, for its code version.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The folder the submitter stood in: for a spec without `code`, the git work tree around it is recorded.
    pub work_dir: Option<PathBuf>,
    /// Whether `code.repo` may name a local path (the CLI and MCP over stdio, read with the user's own rights). The
    /// HTTP API takes URLs only: a path there would be read with the server's rights.
    pub local_repos: bool,
}

impl Origin {
    /// A submitter on this machine, standing in `dir`.
    pub fn local(dir: impl Into<PathBuf>) -> Origin {
        Origin { work_dir: Some(dir.into()), local_repos: true }
    }
}

/// A repository git can read here: a local one, or the mirror of a remote one.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The folder git runs in.
    pub dir: PathBuf,
    /// How it is recorded: the absolute path, or the URL.
    pub name: String,
}

/// A commit's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// Full SHA.
    pub commit: String,
    /// Subject line.
    pub subject: String,
    /// `Name <email>`.
    pub author: String,
    /// Committer date, ISO 8601.
    pub date: String,
}

fn git_error(what: impl Into<String>) -> ExpError {
    ExpError::Invalid(what.into())
}

/// Runs `git -C dir ARGS`, its standard output (at most [`MAX_OUTPUT`]) or an error quoting git's own message.
pub async fn git(dir: &Path, args: &[&str], limit: Duration) -> Result<Vec<u8>> {
    let mut cmd = command(dir, args);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| spawn_error(&e))?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let run = async {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut out = (&mut out).take(MAX_OUTPUT as u64 + 1);
        let mut err = (&mut err).take(64 << 10);
        let (a, b) = tokio::join!(out.read_to_end(&mut stdout), err.read_to_end(&mut stderr));
        a.and(b).map_err(|e| git_error(format!("reading `git {}`: {e}", args.join(" "))))?;
        let status = child.wait().await.map_err(|e| git_error(format!("`git {}`: {e}", args.join(" "))))?;
        Ok::<_, ExpError>((status, stdout, stderr))
    };
    let (status, stdout, stderr) = tokio::time::timeout(limit, run).await.map_err(|_| {
        git_error(format!("`git {}` in {} took longer than {} s", args.join(" "), dir.display(), limit.as_secs()))
    })??;
    if stdout.len() > MAX_OUTPUT {
        return Err(git_error(format!("`git {}` printed more than {} MiB", args.join(" "), MAX_OUTPUT >> 20)));
    }
    if !status.success() {
        let message = String::from_utf8_lossy(&stderr);
        let message = message.trim().lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").to_string();
        return Err(GitFailed { args: args.join(" "), dir: dir.display().to_string(), message }.into());
    }
    Ok(stdout)
}

/// A git call that exited non-zero.
struct GitFailed {
    args: String,
    dir: String,
    message: String,
}

impl From<GitFailed> for ExpError {
    fn from(f: GitFailed) -> ExpError {
        let said = if f.message.is_empty() { String::new() } else { format!(": {}", f.message) };
        ExpError::Invalid(format!("`git {}` failed in {}{said}", f.args, f.dir))
    }
}

fn command(dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    // Never a prompt nor a wait on one: ssh asks nothing (a host key, a passphrase) and gives up on a dead host.
    if std::env::var_os("GIT_SSH_COMMAND").is_none() {
        cmd.env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=15");
    }
    cmd
}

fn spawn_error(e: &std::io::Error) -> ExpError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ExpError::Invalid(
            "`git` is not installed here (PATH has no `git`): install git to record or check out code versions".into(),
        ),
        _ => ExpError::Io(format!("starting git: {e}")),
    }
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// Opens the repository `code.repo` names: a local path (only when `origin` allows; relative to its work dir)
/// or a URL, mirrored under `mirrors` and fetched now.
pub async fn open(repo: &str, origin: &Origin, mirrors: &Path) -> Result<Repo> {
    if let Some(problem) = Code::repo_problem(repo) {
        return Err(ExpError::Invalid(format!("code.repo {problem}")));
    }
    if Code::is_url(repo) && !repo.starts_with("file://") {
        return mirror(repo, mirrors).await;
    }
    if !origin.local_repos {
        return Err(ExpError::Invalid(format!(
            "code.repo `{repo}` is a local path; here the repository must be a URL git can fetch (https://, ssh://, \
             git@host:path): a path would be read with the server's rights. Submit from the CLI to use a local \
             repository"
        )));
    }
    let path = repo.strip_prefix("file://").unwrap_or(repo);
    let mut dir = PathBuf::from(path);
    if dir.is_relative() {
        if let Some(base) = &origin.work_dir {
            dir = base.join(dir);
        }
    }
    let dir = dir.canonicalize().map_err(|e| ExpError::NotFound(format!("code.repo `{repo}`: {e}")))?;
    git(&dir, &["rev-parse", "--git-dir"], SHORT)
        .await
        .map_err(|_| ExpError::Invalid(format!("code.repo `{repo}` is not a git repository ({})", dir.display())))?;
    Ok(Repo { name: dir.display().to_string(), dir })
}

async fn mirror(url: &str, mirrors: &Path) -> Result<Repo> {
    let digest = Sha256::digest(url.as_bytes());
    let id: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
    let dir = mirrors.join(format!("{id}.git"));
    std::fs::create_dir_all(mirrors).map_err(|e| ExpError::Io(format!("creating {}: {e}", mirrors.display())))?;
    if dir.join("HEAD").exists() {
        git(&dir, &["fetch", "--prune", "--quiet"], LONG).await?;
    } else {
        let partial = mirrors.join(format!(".{id}.{}.partial", uuid::Uuid::new_v4().simple()));
        let partial_text = partial.display().to_string();
        let cloned = git(mirrors, &["clone", "--mirror", "--quiet", "--", url, &partial_text], LONG).await;
        if let Err(e) = cloned {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
        if std::fs::rename(&partial, &dir).is_err() {
            // Another submission mirrored it first.
            let _ = std::fs::remove_dir_all(&partial);
        }
    }
    Ok(Repo { dir, name: url.to_string() })
}

impl Repo {
    /// The full commit `reference` names, and the branch when it names one.
    pub async fn resolve(&self, reference: &str) -> Result<(String, Option<String>)> {
        if let Some(problem) = Code::ref_problem(reference) {
            return Err(ExpError::Invalid(format!("code.ref {problem}")));
        }
        let spec = format!("{reference}^{{commit}}");
        let commit = git(&self.dir, &["rev-parse", "--verify", "--quiet", "--end-of-options", &spec], SHORT)
            .await
            .map(text)
            .map_err(|_| ExpError::NotFound(format!("code.ref `{reference}` names no commit in {}", self.name)))?;
        let branch = if reference == "HEAD" {
            git(&self.dir, &["symbolic-ref", "--short", "-q", "HEAD"], SHORT).await.ok().map(text)
        } else {
            let local = format!("refs/heads/{reference}");
            git(&self.dir, &["rev-parse", "--verify", "--quiet", "--end-of-options", &local], SHORT)
                .await
                .ok()
                .map(|_| reference.to_string())
        };
        Ok((commit, branch.filter(|b| !b.is_empty())))
    }

    /// Subject, author and date of `commit` (a full SHA).
    pub async fn describe(&self, commit: &str) -> Result<CommitInfo> {
        let out = git(
            &self.dir,
            &["log", "-1", "--no-show-signature", "--format=%H%x00%s%x00%an <%ae>%x00%cI", "--end-of-options", commit],
            SHORT,
        )
        .await?;
        let out = String::from_utf8_lossy(&out);
        let mut parts = out.trim_end_matches('\n').split('\0');
        let mut next = || parts.next().unwrap_or("").to_string();
        Ok(CommitInfo { commit: next(), subject: next(), author: next(), date: next() })
    }

    /// The commits after `good` up to and including `bad` along first parents, oldest first; refused unless
    /// `good` is an ancestor of `bad`.
    pub async fn first_parents(&self, good: &str, bad: &str) -> Result<Vec<String>> {
        if git(&self.dir, &["merge-base", "--is-ancestor", good, bad], SHORT).await.is_err() {
            return Err(ExpError::Invalid(format!(
                "the good commit {} is not an ancestor of the bad commit {}: bisect searches the commits between \
                 them, so the good one must come first",
                short(good),
                short(bad)
            )));
        }
        let range = format!("{good}..{bad}");
        let out = git(&self.dir, &["rev-list", "--first-parent", "--reverse", &range], SHORT).await?;
        Ok(String::from_utf8_lossy(&out).lines().map(str::to_string).filter(|l| !l.is_empty()).collect())
    }

    /// The tree id of `commit`.
    pub async fn tree(&self, commit: &str) -> Result<String> {
        let spec = format!("{commit}^{{tree}}");
        Ok(text(git(&self.dir, &["rev-parse", "--verify", "--end-of-options", &spec], SHORT).await?))
    }

    /// `commit`'s tree in the artifact store (archived now when it is not there yet) and a local copy of it at
    /// `dest` (made from the stored object, so what the job unpacks is what the record names).
    pub async fn snapshot(&self, commit: &str, store: &ArtifactStore, dest: &Path) -> Result<CodeSnapshot> {
        let tree = self.tree(commit).await?;
        let key = format!("code/{tree}.tar.gz");
        if !store.exists(&key).await? {
            let partial = dest.with_extension(format!("archive-{}", uuid::Uuid::new_v4().simple()));
            let out = partial.display().to_string();
            let archived =
                git(&self.dir, &["archive", "--format=tar.gz", "-o", &out, "--end-of-options", commit], LONG).await;
            let stored = match archived {
                Ok(_) => {
                    let size = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
                    if size > MAX_SNAPSHOT_BYTES {
                        let _ = std::fs::remove_file(&partial);
                        return Err(ExpError::Invalid(format!(
                            "the snapshot of {} is {} MiB, over the {} MiB Falcon stores: keep large data out of the \
                             repository (the workload can read it from storage)",
                            short(commit),
                            size >> 20,
                            MAX_SNAPSHOT_BYTES >> 20
                        )));
                    }
                    store.put_file(&key, &partial, PutMode::Create).await
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&partial);
                    return Err(e);
                }
            };
            let _ = std::fs::remove_file(&partial);
            match stored {
                Ok(_) | Err(InfraError::AlreadyExists { .. }) | Err(InfraError::Conflict(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let info = store.get_to_file(&key, dest).await?;
        Ok(CodeSnapshot { tree, key, size: info.size, sha256: info.sha256 })
    }
}

/// The first 12 digits of a SHA.
pub fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// The code record of a spec's `code`: the repository opened, the ref resolved, the commit described. The
/// snapshot is taken by the caller, which knows where the job's copy goes.
pub async fn resolve_spec_code(code: &Code, origin: &Origin, mirrors: &Path) -> Result<(Repo, CodeRecord)> {
    let repo = open(&code.repo, origin, mirrors).await?;
    let (commit, branch) = repo.resolve(&code.reference).await?;
    let info = repo.describe(&commit).await?;
    let record = CodeRecord {
        commit,
        branch,
        origin: "spec".into(),
        repo: Some(repo.name.clone()),
        reference: Some(code.reference.clone()),
        subject: Some(info.subject),
        author: Some(info.author),
        date: Some(info.date),
        ..CodeRecord::default()
    };
    Ok((repo, record))
}

/// The git work tree around `dir`, recorded: its top folder, commit, branch, whether it has changes and their
/// hash. Falcon's own folders inside the tree (`own`: the data dir, the jobs' work dir) are not changes of the code.
/// `None` outside a work tree, before its first commit, or where git is not installed; a step that fails after the
/// commit is known leaves its field empty (and says so in the log), never the submission.
pub async fn record_work_tree(dir: &Path, own: &[&Path]) -> Option<CodeRecord> {
    let top = text(git(dir, &["rev-parse", "--show-toplevel"], SHORT).await.ok()?);
    let top = PathBuf::from(top);
    let commit = text(git(&top, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], SHORT).await.ok()?);
    if commit.is_empty() {
        return None;
    }
    let repo = Repo { dir: top.clone(), name: top.display().to_string() };
    let branch = git(&top, &["symbolic-ref", "--short", "-q", "HEAD"], SHORT).await.ok().map(text);
    let info = repo.describe(&commit).await.ok();
    // Pathspecs that leave Falcon's own folders out (`:(exclude,top)PATH`, relative to the top).
    let canonical_top = top.canonicalize().unwrap_or_else(|_| top.clone());
    let excluded: Vec<String> = own
        .iter()
        .filter_map(|p| {
            let p = p.canonicalize().ok()?;
            let relative = p.strip_prefix(&canonical_top).ok()?.to_str()?.to_string();
            (!relative.is_empty()).then(|| format!(":(exclude,top){relative}"))
        })
        .collect();
    let (dirty, diff_sha256) = match dirty_state(&top, &excluded).await {
        Ok(state) => state,
        Err(e) => {
            tracing::warn!("recording the work tree {}: its dirty state is unknown: {e}", top.display());
            (None, None)
        }
    };
    Some(CodeRecord {
        commit,
        branch: branch.filter(|b| !b.is_empty()),
        origin: "work_tree".into(),
        repo: Some(repo.name),
        reference: None,
        dirty,
        diff_sha256,
        subject: info.as_ref().map(|i| i.subject.clone()),
        author: info.as_ref().map(|i| i.author.clone()),
        date: info.map(|i| i.date),
        snapshot: None,
    })
}

/// Whether the work tree at `top` has changes, and when it has, the SHA-256 of `git diff HEAD --binary` followed by
/// the status lines (which name the untracked files), streamed (never whole in memory).
async fn dirty_state(top: &Path, excluded: &[String]) -> Result<(Option<bool>, Option<String>)> {
    let mut args = vec!["status", "--porcelain=v1", "-z", "--untracked-files=normal", "--", "."];
    args.extend(excluded.iter().map(String::as_str));
    let status = git(top, &args, SHORT).await?;
    if status.is_empty() {
        return Ok((Some(false), None));
    }
    let mut args = vec!["diff", "HEAD", "--binary", "--no-ext-diff", "--no-textconv", "--", "."];
    args.extend(excluded.iter().map(String::as_str));
    let mut cmd = command(top, &args);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().map_err(|e| spawn_error(&e))?;
    let mut out = child.stdout.take().expect("piped");
    let hashed = async {
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = out.read(&mut buf).await.map_err(|e| ExpError::Io(format!("reading git diff: {e}")))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        hasher.update(&status);
        let _ = child.wait().await;
        Ok::<_, ExpError>(hasher.finalize())
    };
    let digest = tokio::time::timeout(LONG, hashed).await.map_err(|_| {
        git_error(format!("`git diff HEAD` in {} took longer than {} s", top.display(), LONG.as_secs()))
    })??;
    Ok((Some(true), Some(digest.iter().map(|b| format!("{b:02x}")).collect())))
}

/// What a submission's code comes to: the record to store with the experiment, and the local copy of its snapshot
/// (spec code only) waiting to be moved into the job's folder.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    pub record: Option<CodeRecord>,
    pub staged: Option<PathBuf>,
}

/// The file name of a job's snapshot copy, in its folder beside `config.json`.
pub const ARCHIVE_NAME: &str = "code.tar.gz";

impl crate::Exp {
    /// The code version of a submission: a spec's `code` resolved, described and snapshotted (staged under the
    /// jobs' work dir), or the work tree `origin` stands in recorded; nothing for neither.
    pub(crate) async fn prepare_code(
        &self,
        spec: &falcon_core::spec::ExperimentSpec,
        origin: &Origin,
    ) -> Result<Prepared> {
        let Some(code) = &spec.code else {
            let record = match &origin.work_dir {
                Some(dir) => {
                    let own = [self.config.data_dir.as_path(), self.config.jobs.work_dir.as_path()];
                    record_work_tree(dir, &own).await
                }
                None => None,
            };
            return Ok(Prepared { record, staged: None });
        };
        let mirrors = self.config.data_dir.join("code").join("mirrors");
        let (repo, mut record) = resolve_spec_code(code, origin, &mirrors).await?;
        let staging = self.config.jobs.work_dir.join(".code-staging");
        std::fs::create_dir_all(&staging).map_err(|e| ExpError::Io(format!("creating {}: {e}", staging.display())))?;
        let staged = staging.join(format!("{}.tar.gz", uuid::Uuid::new_v4().simple()));
        record.snapshot = Some(repo.snapshot(&record.commit, &self.artifacts, &staged).await?);
        Ok(Prepared { record: Some(record), staged: Some(staged) })
    }

    /// Puts the experiment's snapshot into its job's folder `dir` (moving the staged copy, or — for a job queued
    /// again from its stored spec — fetching it from the store, checked against the record) and returns the
    /// command that unpacks it and runs `command` there; `command` unchanged when the spec names no code.
    pub(crate) async fn place_code(
        &self,
        code: Option<&CodeRecord>,
        dir: &Path,
        staged: Option<&Path>,
        command: &[String],
    ) -> Result<Vec<String>> {
        let Some((code, snapshot)) = code.and_then(|c| c.snapshot.as_ref().map(|s| (c, s))) else {
            return Ok(command.to_vec());
        };
        let archive = dir.join(ARCHIVE_NAME);
        let moved = staged.is_some_and(|s| std::fs::rename(s, &archive).is_ok());
        if !moved {
            let info = self.artifacts.get_to_file(&snapshot.key, &archive).await?;
            if info.sha256 != snapshot.sha256 {
                return Err(ExpError::Invalid(format!(
                    "the stored snapshot {} is not the one recorded (SHA-256 {} ≠ {})",
                    snapshot.key,
                    short(&info.sha256),
                    short(&snapshot.sha256)
                )));
            }
        }
        let url = code.repo.as_deref().filter(|r| Code::is_url(r) && !r.starts_with("file://")).unwrap_or("");
        Ok(checkout_command(&archive.display().to_string(), &code.commit, &snapshot.tree, url, command))
    }
}

/// The shell program that checks the code out where the job runs, then runs the workload's command in it:
/// unpacks the snapshot (`$1`) into a fresh folder under `$TMPDIR`, or — where the job's folder is not reachable,
/// as in a Kubernetes pod — clones `code.repo` when it is a URL (`$4`) and checks out the commit (`$2`), its tree
/// checked against the snapshot's (`$3`); exports `FALCON_CODE_DIR` and `FALCON_CODE_COMMIT`; removes the checkout
/// when the command ends, passing on its status. A checkout that fails exits 70 saying why on stderr.
pub const CHECKOUT: &str = r#"archive=$1 commit=$2 tree=$3 url=$4
shift 4
fail() { echo "falcon: $*" >&2; exit 70; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/falcon-code.XXXXXX") || fail "cannot make a folder for the checkout of $commit"
trap 'rm -rf "$dir"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
if [ -r "$archive" ]; then
  tar -xzf "$archive" -C "$dir" || fail "cannot unpack the code of $commit from $archive"
elif [ -n "$url" ]; then
  git clone --quiet --no-checkout -- "$url" "$dir" >&2 || fail "cannot clone $url"
  git -C "$dir" -c advice.detachedHead=false checkout --quiet "$commit" >&2 || fail "cannot check out $commit from $url"
  [ "$(git -C "$dir" rev-parse "HEAD^{tree}")" = "$tree" ] || fail "$commit from $url is not the tree Falcon recorded ($tree)"
else
  fail "the code snapshot $archive is not reachable where this job runs, and code.repo is no URL to clone"
fi
cd "$dir" || fail "cannot enter $dir"
FALCON_CODE_DIR=$dir
FALCON_CODE_COMMIT=$commit
export FALCON_CODE_DIR FALCON_CODE_COMMIT
"$@""#;

/// `command` run in a checkout ([`CHECKOUT`]).
pub fn checkout_command(archive: &str, commit: &str, tree: &str, url: &str, command: &[String]) -> Vec<String> {
    let mut out: Vec<String> = ["/bin/sh", "-c", CHECKOUT, "falcon-checkout", archive, commit, tree, url]
        .iter()
        .map(|s| s.to_string())
        .collect();
    out.extend(command.iter().cloned());
    out
}
