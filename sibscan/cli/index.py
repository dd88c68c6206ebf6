"""``sibscan index build|add|info``: a reusable train index (embed the training set once)."""
from __future__ import annotations

from typing import Optional

import typer

from ..options import EncoderOptions, LoadOptions
from ._common import user_errors
from ._options import with_options

index_app = typer.Typer(
    help="A reusable train index: embed a training set once, then scan new test sets against it with "
    "'sibscan scan --index IDX --test NEW'.",
    no_args_is_help=True,
)


_LOAD_FLAGS = ("modality", "label", "id", "group", "text_field", "path_field", "decimals", "znorm")
_MODEL_FLAGS = ("model", "pretrained", "checkpoint", "model_path")


@index_app.command("build", no_args_is_help=True)
@user_errors
@with_options((LoadOptions, {"only": _LOAD_FLAGS}), (EncoderOptions, {"exclude": ("cache_dir",)}))
def build(
    train: str = typer.Argument(..., help="Train items (folder of images, text or table file)."),
    out: str = typer.Option(..., "--out", "-o", help="Index directory to create."),
    force: bool = typer.Option(False, "--force", help="Rebuild an existing index."),
    options: Optional[dict] = None,
) -> None:
    """Build an index of TRAIN: items, exact fingerprints and embeddings."""
    from ..index import TrainIndex

    given = {k: v for k, v in (options or {}).items() if v is not None}
    common = {k: given.pop(k) for k in ("decimals", "znorm", "device", "batch_size", "encoder") if k in given}
    idx = TrainIndex.build(
        train, out, encoder_options={k: given.pop(k) for k in _MODEL_FLAGS if k in given}, load_options=given,
        force=force, **common,
    )
    typer.echo(f"index {out}: {idx.meta['n_items']:,} {idx.meta['modality']} items, encoder {idx.meta['encoder']['identity']}")


@index_app.command("add", no_args_is_help=True)
@user_errors
@with_options((EncoderOptions, {"only": ("device", "batch_size")}))
def add(
    index: str = typer.Argument(..., help="Index directory."),
    more: str = typer.Argument(..., help="More train items (same modality and columns)."),
    options: Optional[dict] = None,
) -> None:
    """Append MORE to the index, embedding only the new items."""
    from ..index import TrainIndex

    idx = TrainIndex.open(index)
    n = idx.add(more, **{k: v for k, v in (options or {}).items() if v is not None})
    typer.echo(f"added {n:,} items; index {index} now holds {idx.meta['n_items']:,}")


@index_app.command("info")
@user_errors
def info(index: str = typer.Argument(..., help="Index directory.")) -> None:
    """Print what an index holds."""
    from ..atomic import dumps_json
    from ..index import TrainIndex

    typer.echo(dumps_json(TrainIndex.open(index).meta))


def register(app: typer.Typer) -> None:
    app.add_typer(index_app, name="index")
