"""What README.md and docs/ point at exists: relative links (and their #anchors), the results files
named as ``results/NAME.json`` / ``benchmarks/results/NAME.json`` / ``*_pairs.json.gz``, results files
named at a git revision (``REV:benchmarks/results/NAME.json``: superseded runs, removed from the tree,
issue 31) and the commits named by their hashes.  Each check is also run on planted bad references, so
it can fail."""
from __future__ import annotations

import fnmatch
import functools
import itertools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), RESULTS / "README.md"]
IDS = [str(p.relative_to(ROOT)) for p in PAGES]

# Written by `bash benchmarks/gpu_check.sh` on a CUDA machine, which docs/benchmarks.md says has not
# been run; checked like any other file once that sentence is gone.
GPU_NOT_YET_RUN = "**GPU** — `bash benchmarks/gpu_check.sh` on a CUDA machine: not yet run"
GPU_FILES = {"search_cuda.json", "gpu_pipeline.json", "verify_share_cuda.json", "gpu_check.json"}

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
RESULT_NAME = re.compile(r"(?<![\w/])(?:benchmarks/)?results/([\w.*{},-]+)|(?<![\w*{},\]/-])([\w*{},-]+_pairs\.json\.gz)")
AT_REVISION = re.compile(r"(?<![\w/])([0-9a-f]{7,40}):benchmarks/results/([\w.*{},-]+)")
HASH = re.compile(r"(?<![\w./#-])([0-9a-f]{7,12})(?![\w-])")
# hashes the text itself says are not on main (branch commits since rebased; the text names their
# counterparts on main, which are checked): each must still be named, so the list cannot go stale
OFF_MAIN = {"10e1281", "7cd7cff", "d4aa94a"}


def prose(text: str) -> str:
    """The page without its fenced code blocks (console output, code)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(page: Path) -> frozenset:
    seen: dict = {}
    out = set()
    for heading in HEADING.findall(prose(page.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def bad_links(page: Path, text: str) -> list:
    """Relative links of ``text`` (written on ``page``) whose file or #anchor does not exist."""
    bad = []
    for target in LINK.findall(prose(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            bad.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            bad.append(f"{target}: no heading with anchor #{anchor} in {file.name}")
    return bad


def expand(name: str) -> list:
    """``a_{1,2}{,_b}.json`` -> every spelling, braces left to right."""
    m = re.search(r"\{([^{}]*)\}", name)
    if not m:
        return [name]
    return list(itertools.chain.from_iterable(
        expand(name[:m.start()] + alt + name[m.end():]) for alt in m.group(1).split(",")))


def result_names(text: str) -> set:
    """The results files ``text`` names in the tree (those named at a revision are not among them)."""
    names = set()
    for in_results, pairs in RESULT_NAME.findall(AT_REVISION.sub("", text)):
        name = (in_results or pairs).rstrip(".,")
        if re.search(r"[A-Z]{2,}", name) or not name.endswith((".json", ".json.gz")):
            continue  # a placeholder (NAME.json) or a folder / stem, not a file
        names.update(expand(name))
    return names


def missing_results(text: str, gpu_pending: bool) -> list:
    missing = []
    for name in sorted(result_names(text)):
        if gpu_pending and name in GPU_FILES:
            continue
        found = list(RESULTS.glob(name)) if "*" in name else (RESULTS / name).is_file()
        if not found:
            missing.append(f"benchmarks/results/{name}")
    return missing


def revision_results(text: str) -> set:
    """``(revision, name)`` of each results file ``text`` names at a git revision (braces expanded)."""
    return {(rev, name) for rev, raw in AT_REVISION.findall(prose(text)) for name in expand(raw.rstrip(".,"))}


def missing_at_revision(refs) -> list:
    """The ``REV:benchmarks/results/NAME`` of ``refs`` that name no file in that revision's tree (a
    ``*`` in NAME: none matches)."""
    import fnmatch

    missing = []
    for rev in sorted({rev for rev, _ in refs}):
        listing = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "benchmarks/results/"], cwd=ROOT,
                                 capture_output=True, text=True)
        files = [p.rsplit("/", 1)[-1] for p in listing.stdout.split()] if listing.returncode == 0 else []
        missing += [f"{rev}:benchmarks/results/{name}" for r, name in sorted(refs) if r == rev
                    and not (fnmatch.filter(files, name) if "*" in name else name in files)]
    return missing


def commit_hashes(text: str) -> set:
    body = prose(text)
    return {h for h in HASH.findall(body) if re.search(r"\d", h) and re.search(r"[a-f]", h)} - OFF_MAIN


def git_usable() -> str:
    """Why the commit check cannot run here ('' when it can)."""
    if shutil.which("git") is None:
        return "git is not installed"
    if not (ROOT / ".git").exists():
        return "not a git checkout (no .git)"
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT,
                             capture_output=True, text=True)
    if shallow.returncode != 0:
        return f"git cannot read the repository: {shallow.stderr.strip()}"
    if shallow.stdout.strip() == "true":
        return "a shallow clone lacks the older commits"
    return ""


def missing_commits(hashes) -> list:
    """The hashes that name no commit in HEAD's history (a commit only on a local branch, or a dangling
    object left by a rebase, would pass an existence check here and fail in a fresh clone)."""
    if not hashes:
        return []
    history = subprocess.run(["git", "rev-list", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    return sorted(h for h in hashes if not any(c.startswith(h) for c in history))


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_relative_links_resolve(page):
    assert bad_links(page, page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_named_results_files_exist(page):
    text = page.read_text(encoding="utf-8")
    gpu_pending = GPU_NOT_YET_RUN in (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert missing_results(text, gpu_pending) == []


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_results_named_at_a_revision_exist_there(page):
    why = git_usable()
    if why:
        pytest.skip(why)
    assert missing_at_revision(revision_results(page.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_named_commits_exist(page):
    why = git_usable()
    if why:
        pytest.skip(why)
    assert missing_commits(commit_hashes(page.read_text(encoding="utf-8"))) == []


def test_the_checks_catch_planted_bad_references():
    page = ROOT / "README.md"
    planted = ("See [x](docs/no-such-page.md), [y](docs/benchmarks.md#no-such-heading) and "
               "[z](docs/benchmarks.md#memory); `results/no_such_run.json`, `results/no_such_{a,b}.json`, "
               "`results/quality_crops_14c*.json`, no_such_pairs.json.gz; commit 0123abcd4567, commit 1b25c1f; "
               "branch commit fedc987, 5c67e57 on main.\n```\nrecord (874285e094c1)\n```\n")
    assert [b.split(":")[0] for b in bad_links(page, planted)] == [
        "docs/no-such-page.md", "docs/benchmarks.md#no-such-heading"]
    assert missing_results(planted, gpu_pending=True) == [
        "benchmarks/results/no_such_a.json", "benchmarks/results/no_such_b.json",
        "benchmarks/results/no_such_pairs.json.gz", "benchmarks/results/no_such_run.json"]
    assert commit_hashes(planted) == {"0123abcd4567", "1b25c1f", "fedc987", "5c67e57"}
    assert commit_hashes("commit 10e1281, a branch commit") == set()  # listed in OFF_MAIN
    if not git_usable():
        assert missing_commits({"0123abcd4567", "1b25c1f"}) == ["0123abcd4567"]
        at_rev = ("`git show cdfe6a1:benchmarks/results/quality_crops_v5_seed{2,9}.json`, `git show "
                  "cdfe6a1:benchmarks/results/verify_share_views*.json`, cdfe6a1:benchmarks/results/nothing_*.json")
        assert result_names(at_rev) == set()  # not looked for in the tree
        assert missing_at_revision(revision_results(at_rev)) == [
            "cdfe6a1:benchmarks/results/nothing_*.json", "cdfe6a1:benchmarks/results/quality_crops_v5_seed9.json"]


def test_the_hashes_said_to_be_off_main_are_still_named():
    text = "".join(p.read_text(encoding="utf-8") for p in PAGES)
    assert {h for h in OFF_MAIN if h not in text} == set()


def table_names(text: str) -> list:
    """The file names (or globs) in the first column of a Markdown table."""
    return [name for row in re.findall(r"^\|([^|\n]*)\|", text, re.M) for name in re.findall(r"`([^`]+)`", row)]


def test_results_readme_lists_each_file_once():
    """benchmarks/results/README.md's table names every results file in the tree, and nothing else."""
    names = table_names((RESULTS / "README.md").read_text(encoding="utf-8"))
    files = sorted(p.name for p in RESULTS.iterdir() if p.name != "README.md")
    matched = {n: [f for f in files if fnmatch.fnmatch(f, n)] for n in names}
    assert [n for n, found in matched.items() if not found] == []
    assert [f for f in files if not any(f in found for found in matched.values())] == []
    assert table_names("| `a.json` | x |\n|---|---|\n| `b*.json`, `c.json` | `not.json` |\n") == ["a.json", "b*.json", "c.json"]


def test_slug_follows_github():
    assert slug("Why seed 2's cutoff landed low, and the calibration rule since") == (
        "why-seed-2s-cutoff-landed-low-and-the-calibration-rule-since")
    assert slug("From README: Verification (`imagefuse`)") == "from-readme-verification-imagefuse"
    assert slug("v5 judged again under the 95 % calibration rule") == "v5-judged-again-under-the-95--calibration-rule"
    assert slug("Install and test") == "install-and-test"
