"""``sibscan index build|add|info``: a reusable train index (embed the training set once)."""
from __future__ import annotations

from typing import Optional

import typer

from ..options import EncoderOptions, LoadOptions
from ._common import Command, Group, user_errors
from ._flags import IndexAddOptions, IndexBuildOptions, JsonOption
from ._options import with_options
from ..atomic import dumps_json

index_app = typer.Typer(
    help="A reusable train index: embed a training set once, then scan new test sets against it with "
    "'sibscan scan --index IDX NEW_TEST --out DIR'.",
    no_args_is_help=True,
    cls=Group,
)

_LOAD_FLAGS = ("modality", "label", "id", "group", "text_field", "path_field", "decimals", "znorm")
_MODEL_FLAGS = ("model", "pretrained", "checkpoint", "model_path")
_NOT_FOR_INDEX = ("cache_dir", "train_features", "test_features", "features_id")


def _summary(idx, index: str, added: Optional[int] = None) -> dict:
    meta = idx.meta
    out = {"index": str(index), "n_items": meta["n_items"], "modality": meta["modality"],
           "encoder": meta["encoder"]["identity"]}
    if added is not None:
        out["added"] = added
    out["skipped"] = idx.last_skipped  # by this build or add; all of them: index.json's "skipped"
    return out


def _skipped_note(s: dict) -> str:
    """What the build or add could not load, as the scan says it."""
    return f" (skipped: {s['skipped']:,} — listed in index.json)" if s.get("skipped") else ""


@index_app.command("build", no_args_is_help=True, cls=Command)
@user_errors
@with_options((LoadOptions, {"only": _LOAD_FLAGS}), (EncoderOptions, {"exclude": _NOT_FOR_INDEX}),
              (IndexBuildOptions, {}))
def build(
    train: str = typer.Argument(..., help="Train items (folder of images, text or table file)."),
    options: Optional[dict] = None,
) -> None:
    """Build an index of TRAIN: items, exact fingerprints and embeddings."""
    from ..index import TrainIndex
    given = {k: v for k, v in (options or {}).items() if v is not None}
    out, force, as_json = given.pop("out"), given.pop("force", False), given.pop("as_json", False)
    common = {k: given.pop(k) for k in ("decimals", "znorm", "device", "batch_size", "encoder") if k in given}
    idx = TrainIndex.build(
        train, out, encoder_options={k: given.pop(k) for k in _MODEL_FLAGS if k in given}, load_options=given,
        force=force, **common,
    )
    s = _summary(idx, out)
    typer.echo(dumps_json(s) if as_json else f"index {out}: {s['n_items']:,} {s['modality']} items, encoder {s['encoder']}"
               + _skipped_note(s))


@index_app.command("add", no_args_is_help=True, cls=Command)
@user_errors
@with_options((EncoderOptions, {"only": ("device", "batch_size")}), (IndexAddOptions, {}))
def add(
    index: str = typer.Argument(..., help="Index directory."),
    more: str = typer.Argument(..., help="More train items (same modality and columns)."),
    options: Optional[dict] = None,
) -> None:
    """Append MORE to the index, embedding only the new items."""
    from ..index import TrainIndex
    given = {k: v for k, v in (options or {}).items() if v is not None}
    id_, as_json = given.pop("id_", None), given.pop("as_json", False)
    idx = TrainIndex.open(index)
    n = idx.add(more, id=id_, **given)
    s = _summary(idx, index, added=n)
    typer.echo(dumps_json(s) if as_json else f"added {n:,} items; index {index} now holds {s['n_items']:,}" + _skipped_note(s))


@index_app.command("info", cls=Command)
@user_errors
@with_options((JsonOption, {}), spread=True)
def info(index: str = typer.Argument(..., help="Index directory."), as_json=False) -> None:
    """Print what an index holds (--json: its whole index.json)."""
    from ..index import TrainIndex
    idx = TrainIndex.open(index)
    if as_json:
        typer.echo(dumps_json(idx.meta))
        return
    s = _summary(idx, index)
    typer.echo(f"index {index}: {s['n_items']:,} {s['modality']} items, encoder {s['encoder']} "
               f"(built with sibscan {idx.meta.get('sibscan_version')})")


def register(app: typer.Typer) -> None:
    app.add_typer(index_app, name="index")
