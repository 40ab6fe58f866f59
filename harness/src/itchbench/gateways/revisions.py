"""Revisions of the gateway: resolved in a git repository, each built once in
its own git worktree and cached under reports/cache/builds/ by (the content of
its build inputs, flags): commits that differ elsewhere share one build. The
working tree with its uncommitted changes is a revision too (`WORKTREE`),
cached by the hash of its diff.

Revisions compared with each other are built with identical flags; a build
flavour (other flags, LTO, PGO: a scenario's [build] table) is the other way
round — one revision, built several ways (docs/builds.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

from .. import cache, paths
from . import compiler_cache, contract, provenance

WORKTREE = "WORKTREE"
# Identical for every revision: what is compared is the code, never the flags.
BUILD_OPTIONS = ["-DCMAKE_BUILD_TYPE=Release", "-DITCHBENCH_TESTS=OFF", "-DITCHBENCH_BENCHMARKS=ON"]
BUILD_TARGET = "itch-gateway"
# Built when the revision has them (older ones may not): a scenario's [microbench] runs the revision's own.
BENCHMARK_TARGETS = ("book_bench", "decode_bench")


class RevisionError(RuntimeError):
    """A revision cannot be resolved or built; the message says why."""


class BuildFailed(RevisionError):
    """A revision resolved, and its build failed: a commit a bisect steps over (git bisect's skip)."""


@dataclass(frozen=True)
class Revision:
    spec: str            # as the user gave it
    commit: str          # full sha (the HEAD under a dirty working tree)
    diff_hash: str       # "" for a commit; sha256 of `git diff HEAD` for the working tree
    subject: str         # the commit message's first line: what documents use as a title
    body: str = ""       # the rest of the message (why, what was measured): shown beside the title

    @property
    def dirty(self) -> bool:
        return bool(self.diff_hash)

    @property
    def label(self) -> str:
        return self.commit[:12] + ("+dirty-" + self.diff_hash[:8] if self.dirty else "")

    def as_dict(self) -> dict[str, object]:
        return {"spec": self.spec, "commit": self.commit, "dirty": self.dirty, "diff_sha256": self.diff_hash,
                "subject": self.subject, "body": self.body, "label": self.label}


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RevisionError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def require_repository(repo: Path) -> None:
    """RevisionError unless repo is in a git work tree, said as a user would fix it (git's own words name no
    folder: `fatal: not a git repository (or any of the parent directories)`)."""
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                          text=True)
    if proc.returncode != 0 or proc.stdout.strip() != "true":
        raise RevisionError(f"{repo.absolute()} is not in a git repository: run from the gateway's repository, or "
                            "name it with --repo")


def resolve(repo: Path, spec: str) -> Revision:
    """A commit, branch, tag or expression (HEAD~3), or WORKTREE."""
    require_repository(repo)
    if spec == WORKTREE:
        commit = git(repo, "rev-parse", "HEAD").strip()
        digest = provenance.tree_diff_sha256(repo)
        return Revision(spec, commit, digest, "(working tree)") if digest else Revision(spec, commit, "",
                                                                                           *_message(repo, commit))
    try:
        commit = git(repo, "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}").strip()
    except RevisionError:
        raise RevisionError(f"'{spec}' is not a commit of {repo} (a commit, branch, tag, HEAD~N or {WORKTREE})") \
            from None
    return Revision(spec, commit, "", *_message(repo, commit))


def _message(repo: Path, commit: str) -> tuple[str, str]:
    """The commit message's subject and body."""
    subject, _, body = git(repo, "log", "-1", "--format=%s%x00%b", commit).partition("\0")
    return subject.strip(), body.strip()


def cache_root() -> Path:
    return paths.cache_dir() / "builds"


@dataclass(frozen=True)
class Flavour:
    """How the gateway is built beyond the set-up's Release (-O3): a scenario's [build] table."""
    cxx_flags: str = ""          # added after Release's flags, so "-O2" wins over its -O3
    lto: bool = False
    pgo_training: str = ""       # a capture: build instrumented, run it on this in simulation, build again

    @classmethod
    def of(cls, table: dict[str, object]) -> "Flavour":
        return cls(str(table["cxx_flags"]), bool(table["lto"]), str(table["pgo_training"]) if table["pgo"] else "")

    @property
    def default(self) -> bool:
        return self == Flavour()

    @property
    def name(self) -> str:
        parts = [self.cxx_flags or "-O3"] + (["LTO"] if self.lto else []) + (["PGO"] if self.pgo_training else [])
        return " ".join(parts)

    def options(self) -> list[str]:
        return ([f"-DITCHBENCH_CXX_EXTRA={self.cxx_flags}"] if self.cxx_flags else []) + \
            (["-DITCHBENCH_LTO=ON"] if self.lto else [])

    def identity(self) -> str:
        """What makes two flavours the same build: their options and the training capture's content."""
        training = hashlib.sha256(Path(self.pgo_training).read_bytes()).hexdigest() if self.pgo_training else ""
        return " ".join(self.options() + ([f"pgo:{training}"] if training else []))


def flags_hash(flavour: Flavour = Flavour()) -> str:
    extra = flavour.identity()
    return hashlib.sha256(" ".join(BUILD_OPTIONS + ([extra] if extra else [])).encode()).hexdigest()[:8]


def build_inputs() -> tuple[str, ...]:
    """What the gateway's build reads (the built-in contract's `sources`): a revision whose copies of these are
    the same as another's builds the same binary, so it shares that build."""
    return contract.load(paths.repo_root() / "itchbench.toml").sources


def measured_sources(repo: Path, rev: Revision) -> str | None:
    """What a run of the revision's built-in gateway measured, as the results store and compare name it
    (provenance.sources_id of the built-in contract's sources and the contract itself): as an `itchbench run` of
    the same checkout records it."""
    built_in = contract.load(paths.repo_root() / "itchbench.toml")
    return provenance.sources_id(repo, rev.commit, provenance.identity_paths(built_in), working_tree=rev.dirty)


def source_key(repo: Path, rev: Revision) -> str:
    """The git object ids of the build inputs (a commit, or a working tree whose changes are elsewhere), or the
    hash of the build inputs' changes (a working tree that changes them)."""
    key = provenance.sources_id(repo, rev.commit, build_inputs(), working_tree=rev.dirty)
    if key is None:
        raise RevisionError(f"{rev.spec}: commit {rev.commit} is not in {repo}")
    return key


def build(repo: Path, rev: Revision, say: Callable[[str], None], *, benchmarks: bool = False,
          flavour: Flavour = Flavour()) -> Path:
    """The gateway binary of a revision, built (once per source and flavour)
    in its own worktree; with benchmarks, its Google Benchmark binaries beside
    it too (those the revision has: gateway/bench/ in the same build). A build
    with them is an entry of its own: making it never replaces a build without
    them that another process may be running."""
    key = f"{source_key(repo, rev)}-{flags_hash(flavour)}{'-bench' if benchmarks else ''}"
    with cache.locked(cache_root() / key):
        return _build_in(repo, rev, say, benchmarks, flavour, cache_root() / key)


# What the configure of a revision writes: the compiler flags its gateway records in every run's manifest.
FLAGS_FILE = "itchbench-cxx-flags.txt"


def flags_difference(repo: Path, base: Revision, head: Revision, say: Callable[[str], None]) -> str:
    """Why two revisions' builds could not be compared, known before either is built: the compiler flags their
    gateways would record differ (a compare checks them again on the runs). Only when the revisions' top-level
    CMakeLists.txt differ, where those flags are set, are both configured (seconds each); "" when they agree or
    a revision does not write its flags at configure (older than FLAGS_FILE)."""
    if _top_cmake(repo, base) == _top_cmake(repo, head):
        return ""
    say("  CMakeLists.txt differs between the revisions: configuring both to compare their compiler flags")
    flags = [configured_flags(repo, rev) for rev in (base, head)]
    if None in flags or flags[0] == flags[1]:
        return ""
    return (f"cxx_flags differ ({flags[0]!r} vs {flags[1]!r}), seen when both were configured: nothing was built "
            "or run")


def _top_cmake(repo: Path, rev: Revision) -> str:
    if rev.dirty:
        path = repo / "CMakeLists.txt"
        return path.read_text() if path.is_file() else ""
    try:
        return git(repo, "show", f"{rev.commit}:CMakeLists.txt")
    except RevisionError:
        return ""


def configured_flags(repo: Path, rev: Revision) -> str | None:
    """The compiler flags the revision's build would record, from a CMake configure of it in a temporary folder
    (its worktree, or the working tree itself), with the options every revision is built with; None when the
    configure fails (the build will then say why) or writes no FLAGS_FILE."""
    with tempfile.TemporaryDirectory(prefix="itchbench-configure-") as tmp:
        source = repo if rev.dirty else Path(tmp) / "src"
        if not rev.dirty:
            git(repo, "worktree", "add", "--detach", "--force", str(source), rev.commit)
        try:
            proc = subprocess.run(["cmake", "-S", str(source), "-B", str(Path(tmp) / "build"), "-G", "Ninja",
                                   *BUILD_OPTIONS], capture_output=True, text=True)
            written = Path(tmp) / "build" / FLAGS_FILE
            return written.read_text().strip() if proc.returncode == 0 and written.is_file() else None
        finally:
            if not rev.dirty:
                git(repo, "worktree", "remove", "--force", str(source))


def build_copy(name: str, identity: str, populate: Callable[[Path], None], say: Callable[[str], None]) -> Path:
    """The gateway built from sources that `populate` writes into an empty folder (not a revision: a patched copy
    of this checkout's, the zoo's mutants of the built-in gateway), cached by `identity`, what those sources are.
    They are built where a revision's are (home/src), so ccache shares every file they do not change."""
    key = f"copy-{hashlib.sha256(identity.encode()).hexdigest()[:16]}-{flags_hash()}"
    rev = Revision(name, "0" * 40, "", name)
    with cache.locked(cache_root() / key):
        return _build_in(Path(), rev, say, False, Flavour(), cache_root() / key, populate)


def _build_in(repo: Path, rev: Revision, say: Callable[[str], None], benchmarks: bool, flavour: Flavour,
              home: Path, populate: Callable[[Path], None] | None = None) -> Path:
    gateway = home / "build" / "gateway" / BUILD_TARGET
    if (home / "ok").is_file() and gateway.is_file():
        say(f"  {rev.label}: cached build ({home})")
        return gateway
    if home.exists():
        shutil.rmtree(home)  # a build that did not finish: start again
    home.mkdir(parents=True)
    source = Path(repo) if rev.dirty else home / "src"  # the working tree itself: its changes are the point
    if populate is not None:
        shutil.rmtree(source, ignore_errors=True)
        populate(source)
    elif not rev.dirty:
        if source.exists():
            shutil.rmtree(source)
            git(repo, "worktree", "prune")
        git(repo, "worktree", "add", "--detach", "--force", str(source), rev.commit)
    log = home / "build.log"
    # A worktree is built in its own build/, as set-up builds the checkout: the same paths relative to the build
    # folder, so ccache takes set-up's objects (and each revision's) for every file a revision does not change.
    work = home / "build" if rev.dirty else source / "build"
    try:
        with open(log, "a") as out:
            flavoured = "" if flavour.default else f", {flavour.name}"
            say(f"  {rev.label}: building {BUILD_TARGET} ({rev.subject[:60]}{flavoured})")
            options = [*BUILD_OPTIONS, *flavour.options()]
            if flavour.pgo_training:
                _compile(source, work, [*options, "-DITCHBENCH_PGO=generate"], rev, out, log)
                _train(work / "gateway" / BUILD_TARGET, Path(flavour.pgo_training), home, rev, say)
                options.append("-DITCHBENCH_PGO=use")
            _compile(source, work, options, rev, out, log)
            if benchmarks:
                say(f"  {rev.label}: building its micro-benchmarks")
                for target in BENCHMARK_TARGETS:  # an older revision may not have one: it is then not built
                    out.write(f"-- {target}: built if this revision has it\n")
                    out.flush()
                    subprocess.run(["cmake", "--build", str(work), "--target", target], stdout=out,
                                   stderr=subprocess.STDOUT, env={**os.environ, **_compiler_environment()})
        if work != home / "build":
            shutil.move(str(work), str(home / "build"))
    finally:  # the binaries are all the cache keeps
        if populate is not None:
            shutil.rmtree(source, ignore_errors=True)
        elif not rev.dirty:
            git(repo, "worktree", "remove", "--force", str(source))
    if not gateway.is_file():
        raise BuildFailed(f"{rev.label}: the build made no {BUILD_TARGET}")
    (home / "ok").write_text(rev.commit + "\n")
    return gateway


def _compiler_environment() -> dict[str, str]:
    """Paths under the repository are taken relative to the build folder (SRC/build: ../gateway/…), so the same
    file in two worktrees, or in the checkout that set-up built with the same cache (harness/bin/setup), is one
    ccache entry."""
    return compiler_cache.environment(paths.repo_root())


def _compile(source: Path, work: Path, options: list[str], rev: Revision, out: IO[str], log: Path) -> None:
    env = _compiler_environment()
    for cmd in (["cmake", "-S", str(source), "-B", str(work), "-G", "Ninja", *options,
                 *compiler_cache.cmake_options()],
                ["cmake", "--build", str(work), "--target", BUILD_TARGET]):
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env})
        if proc.returncode != 0:
            out.flush()
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise BuildFailed(f"{rev.label} does not build ({' '.join(cmd[:2])} failed):\n{tail}")


def _train(gateway: Path, capture: Path, home: Path, rev: Revision, say: Callable[[str], None]) -> None:
    """The instrumented gateway's training run: the capture in simulation, every stage stamped, as runs are."""
    say(f"  {rev.label}: PGO training run on {capture.name}")
    logs = home / "pgo-training"
    logs.mkdir(exist_ok=True)
    proc = subprocess.run([str(gateway), "--source", "sim", "--capture", str(capture), "--out", str(logs)],
                          capture_output=True, text=True)
    shutil.rmtree(logs)
    if proc.returncode != 0:
        raise RevisionError(f"{rev.label}: the PGO training run on {capture} failed (exit {proc.returncode}): "
                            f"{proc.stderr.strip()[-500:]}")


def flavoured_gateway(flavour: Flavour, say: Callable[[str], None]) -> Path:
    """This checkout's gateway (its working tree as it is) built as the flavour asks, cached."""
    if paths.GATEWAY_OVERRIDE in os.environ:
        raise RevisionError("a [build] flavour builds this checkout's gateway, but another build's gateway is "
                            f"under test here ({paths.GATEWAY_OVERRIDE}={os.environ[paths.GATEWAY_OVERRIDE]}): "
                            "compare and bisect vary the revision, a flavour the flags; not both at once")
    repo = paths.repo_root()
    return build(repo, resolve(repo, WORKTREE), say, flavour=flavour)
