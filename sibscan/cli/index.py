"""``sibscan index build|add|info``: a reusable train index (embed the training set once)."""
from __future__ import annotations

from typing import Optional

import typer

from ._common import user_errors

index_app = typer.Typer(
    help="A reusable train index: embed a training set once, then scan new test sets against it with "
    "'sibscan scan --index IDX --test NEW'.",
    no_args_is_help=True,
)


@index_app.command("build", no_args_is_help=True)
@user_errors
def build(
    train: str = typer.Argument(..., help="Train items (folder of images, text or table file)."),
    out: str = typer.Option(..., "--out", "-o", help="Index directory to create."),
    encoder: Optional[str] = typer.Option(None, "--encoder", "-e", help="Encoder name (default by modality)."),
    modality: Optional[str] = typer.Option(None, "--modality", help="image, text or table (default: detected)."),
    label: Optional[str] = typer.Option(None, "--label", help="Label column name."),
    id: Optional[str] = typer.Option(None, "--id", help="Id column name."),
    group: Optional[str] = typer.Option(None, "--group", help="Group/source column."),
    text_field: Optional[str] = typer.Option(None, "--text-field", help="Text column."),
    path_field: Optional[str] = typer.Option(None, "--path-field", help="Image-path column."),
    model: Optional[str] = typer.Option(None, "--model", help="clip architecture."),
    pretrained: Optional[str] = typer.Option(None, "--pretrained", help="open_clip pretrained tag."),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="Local weights for clip."),
    model_path: Optional[str] = typer.Option(None, "--model-path", help="sentence-transformers folder for minilm."),
    decimals: int = typer.Option(6, "--decimals", help="Rounding of numeric rows for exact fingerprints."),
    znorm: bool = typer.Option(False, "--znorm", help="z-normalise rows before exact hashing."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Encoder batch size."),
    force: bool = typer.Option(False, "--force", help="Rebuild an existing index."),
) -> None:
    """Build an index of TRAIN: items, exact fingerprints and embeddings."""
    from ..index import TrainIndex

    load_options = {k: v for k, v in dict(modality=modality, label=label, id=id, group=group, text_field=text_field,
                                          path_field=path_field).items() if v is not None}
    idx = TrainIndex.build(
        train, out, encoder=encoder,
        encoder_options=dict(model=model, pretrained=pretrained, checkpoint=checkpoint, model_path=model_path),
        load_options=load_options, decimals=decimals, znorm=znorm, device=device, batch_size=batch_size, force=force,
    )
    typer.echo(f"index {out}: {idx.meta['n_items']:,} {idx.meta['modality']} items, encoder {idx.meta['encoder']['identity']}")


@index_app.command("add", no_args_is_help=True)
@user_errors
def add(
    index: str = typer.Argument(..., help="Index directory."),
    more: str = typer.Argument(..., help="More train items (same modality and columns)."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Encoder batch size."),
) -> None:
    """Append MORE to the index, embedding only the new items."""
    from ..index import TrainIndex

    idx = TrainIndex.open(index)
    n = idx.add(more, device=device, batch_size=batch_size)
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
