"""Shared fixtures and markers.

CUDA tests carry ``@pytest.mark.cuda`` and are skipped with a reason where torch sees no GPU.
Ray tests take the session-wide ``local_ray`` fixture (one local Ray with 2 CPUs for the whole run,
skipped with Ray's own reason where its node cannot start on an overloaded machine) and are marked
slow.
Browser tests carry ``@pytest.mark.browser`` and share the session-wide ``browser`` fixture (one
headless Chromium): skipped where /usr/bin/chromium is missing, except under CI (CI=true), where a
missing browser is a failure.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest


_OWN_CACHE = None  # the cache folder this run made (removed at the end), None when one was given


def pytest_configure(config):
    # exported ONNX models (sibscan.encoders.onnxrt) go to a fresh folder per run unless one is given
    global _OWN_CACHE
    if "SIBSCAN_CACHE_DIR" not in os.environ:
        _OWN_CACHE = tempfile.mkdtemp(prefix="sibscan-test-cache-")
        os.environ["SIBSCAN_CACHE_DIR"] = _OWN_CACHE


def pytest_unconfigure(config):
    # each run's exported models take up to ~30 MB; hundreds of runs left behind filled /tmp
    global _OWN_CACHE
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)
        os.environ.pop("SIBSCAN_CACHE_DIR", None)
        _OWN_CACHE = None


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    # torch is imported (seconds) only when a collected test asks for CUDA
    cuda = any("cuda" in item.keywords for item in items) and _has_cuda()
    chromium = shutil.which("chromium") or os.path.exists("/usr/bin/chromium")
    in_ci = os.environ.get("CI", "").lower() == "true"
    for item in items:
        if "cuda" in item.keywords and not cuda:
            item.add_marker(pytest.mark.skip(reason="no CUDA GPU visible to torch (runs on the "
                                                    "GPU machine via benchmarks/gpu_check.sh)"))
        if "browser" in item.keywords and not chromium and not in_ci:
            item.add_marker(pytest.mark.skip(reason="Debian chromium not installed (apt-get "
                                                    "install chromium chromium-driver)"))
    # the session-wide Playwright (fixture 'browser') keeps its event loop marked running in the main
    # thread until the session ends: browser tests run last, so no other test runs under that loop
    items.sort(key=lambda item: "browser" in getattr(item, "fixturenames", ()))  # stable: order kept within each part


@pytest.fixture(autouse=True, scope="session")
def _fsync_without_waiting_for_the_disk():
    """``os.fsync`` checks its descriptor (a closed one raises as before) but does not wait for the
    disk: thousands of small scan files each waited ~6 ms on a busy disk, about a tenth of the run,
    and no test can observe durability. Tests that patch ``os.fsync`` themselves still can."""
    def fsync(fd):
        os.fstat(fd if isinstance(fd, int) else fd.fileno())

    mp = pytest.MonkeyPatch()
    mp.setattr(os, "fsync", fsync)
    yield
    mp.undo()


@pytest.fixture(autouse=True, scope="session")
def _one_click_command_per_typer_app():
    """Typer's ``CliRunner.invoke(app, ...)`` converted the whole Typer app into its click command tree
    on every call (~25 ms each, hundreds of calls); the tree is the same each time, so each app is
    converted once per run and the command reused, as click's own ``CliRunner`` reuses a command."""
    import typer.testing

    convert = typer.testing._get_command
    commands: dict = {}

    def command_of(app):
        if id(app) not in commands:
            commands[id(app)] = (app, convert(app))  # the app is kept, so its id is never reused
        return commands[id(app)][1]

    mp = pytest.MonkeyPatch()
    mp.setattr(typer.testing, "_get_command", command_of)
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def _progress_as_it_was():
    """A command run with ``--quiet`` (or ``sibscan.progress.set_quiet``) silences progress for the whole
    process, as it should for a user; in a test session it silenced every later test's progress too, and a
    test that reads the progress lines failed or passed by the order the tests ran in."""
    from sibscan import progress

    before = progress.is_quiet()
    yield
    progress.set_quiet(before)


#: Debian's Chromium, headless, as every browser test drives it
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (Playwright) for every browser test of the run, launched once (each
    launch took seconds); each test opens its own pages, each page in a fresh browser context."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray (2 CPUs) shared by every Ray test of the run; the engines reuse an initialised Ray.

    Where Ray is installed but its local node cannot start (its raylet gives the dashboard agent a
    fixed 15 s to report its ports, which an overloaded machine misses: "timed out during startup"),
    the tests are skipped with that reason: that is the machine, not sibscan. Any other error fails.
    """
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'sibscan[ray]')")
    started = not ray.is_initialized()
    if started:
        mp = pytest.MonkeyPatch()
        mp.setenv("RAY_agent_register_timeout_ms", "120000")  # the runtime-env agent's port wait
        mp.setenv("RAY_raylet_start_wait_time_s", "120")  # a loaded 2-core machine starts raylets slowly
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for a node that did not start
            if "timed out during startup" not in str(exc):
                raise
            ray.shutdown()
            pytest.skip(f"a local Ray node could not start on this machine ({exc}); "
                        "see /tmp/ray/session_latest/logs/raylet.out")
        finally:
            mp.undo()
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture()
def flip_and_crop_folders(tmp_path):
    """``tmp_path`` with ``train/`` (12 random 96-px photos, ``0.png`` .. ``11.png``) and ``test/``:
    ``flip5.png`` (photo 5 mirrored) and ``crop3.png`` (a crop of photo 3, resized back)."""
    pytest.importorskip("PIL")
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        (tmp_path / split).mkdir()
    photos = [(rng.random((8, 8, 3)) * 255).astype(np.uint8) for _ in range(12)]
    for i, p in enumerate(photos):
        Image.fromarray(p).resize((96, 96), Image.BICUBIC).save(tmp_path / "train" / f"{i}.png")
    Image.fromarray(photos[5]).resize((96, 96), Image.BICUBIC).transpose(Image.FLIP_LEFT_RIGHT).save(
        tmp_path / "test" / "flip5.png")
    Image.fromarray(photos[3]).resize((96, 96), Image.BICUBIC).crop((10, 20, 70, 80)).resize((96, 96)).save(
        tmp_path / "test" / "crop3.png")
    return tmp_path
