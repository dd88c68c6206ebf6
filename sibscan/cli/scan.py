"""``sibscan scan``: embed train and test items, find each test item's nearest train neighbours."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._common import user_errors


def _fmt_summary(summary: dict, path: Path) -> str:
    lines = [f"scan written to {path}"]
    lines.append(
        f"  items: {summary['n_train']:,} train, {summary['n_test']:,} test"
        + (f" (skipped: {summary['skipped']['train']} train, {summary['skipped']['test']} test — listed in manifest.json)"
           if summary.get("skipped") and (summary["skipped"]["train"] or summary["skipped"]["test"]) else "")
    )
    lines.append(
        f"  exact twins: {summary['exact_test_rows_with_train_twin']:,} test items "
        f"({summary['exact_test_twin_pct']:.2f} %) have a value-for-value copy in train"
    )
    q = summary.get("nn_score_quantiles") or {}
    if q:
        lines.append("  nearest-train score quantiles: " + ", ".join(f"{k}={v:.4f}" for k, v in q.items()))
    cut = summary["cutoff"]
    if cut.get("value") is None:
        lines.append("  cutoff: none — run 'sibscan calibrate DIR' to measure one, or pass --cutoff X (uncalibrated)")
    else:
        how = "calibrated" if cut["source"] == "calibrated" else "UNCALIBRATED"
        lines.append(
            f"  siblings at cutoff {cut['value']:.4f} ({how}, {cut['score']} score): {summary['siblings']:,} test items "
            f"({summary['sibling_pct']:.2f} %)"
        )
        if "expected_chance_siblings" in summary:
            from ..calibration.baseline import format_expected

            lines.append(f"  expected by chance at this cutoff (random-pair baseline): {format_expected(summary['expected_chance_siblings'])}")
        if summary.get("warning"):
            lines.append(f"  warning: {summary['warning']}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("scan", no_args_is_help=True)
    @user_errors
    def scan(
        train: Optional[str] = typer.Option(None, "--train", help="Train items: a folder of images, a text/table file (CSV, TSV, JSONL, TXT, Parquet, NPY, UCR .tsv, .ts, .arff)."),
        test: Optional[str] = typer.Option(None, "--test", help="Test (evaluation) items, same kinds as --train."),
        out: Optional[str] = typer.Option(None, "--out", "-o", help="Scan directory to write (re-running into it resumes)."),
        index: Optional[str] = typer.Option(None, "--index", help="Use a train index from 'sibscan index build' instead of --train."),
        config: Optional[str] = typer.Option(None, "--config", "-c", help="TOML config file, or a preset name from configs/ (flags override it)."),
        modality: Optional[str] = typer.Option(None, "--modality", help="image, text or table (default: detected from the files)."),
        label: Optional[str] = typer.Option(None, "--label", help="Label column name."),
        id: Optional[str] = typer.Option(None, "--id", help="Id column name (default: row index / relative path)."),
        group: Optional[str] = typer.Option(None, "--group", help="Group/source column (patient, user, page…) for shared-source leaks."),
        text_field: Optional[str] = typer.Option(None, "--text-field", help="Text column of a CSV/JSONL/Parquet file."),
        path_field: Optional[str] = typer.Option(None, "--path-field", help="Image-path column of a CSV/JSONL/Parquet listing."),
        labels_train: Optional[str] = typer.Option(None, "--labels-train", help="Label array (.npy) for an .npy train file."),
        labels_test: Optional[str] = typer.Option(None, "--labels-test", help="Label array (.npy) for an .npy test file."),
        chunk_words: Optional[int] = typer.Option(None, "--chunk-words", help="Split long texts into chunks of N words; a document scores its best chunk."),
        chunk_stride: Optional[int] = typer.Option(None, "--chunk-stride", help="Words between chunk starts (default: --chunk-words)."),
        decimals: Optional[int] = typer.Option(None, "--decimals", help="Rounding of numeric rows for exact fingerprints [default: 6]."),
        znorm: Optional[bool] = typer.Option(None, "--znorm/--no-znorm", help="z-normalise rows before exact hashing (catches rescaled copies)."),
        encoder: Optional[str] = typer.Option(None, "--encoder", "-e", help="Encoder name (see 'sibscan encoders'); default by modality: text minilm, table znorm, image effnet (all offline)."),
        model: Optional[str] = typer.Option(None, "--model", help="Model architecture for clip (e.g. ViT-B-32)."),
        pretrained: Optional[str] = typer.Option(None, "--pretrained", help="open_clip pretrained tag (needs internet once)."),
        checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="Local weights file for clip."),
        model_path: Optional[str] = typer.Option(None, "--model-path", help="A sentence-transformers folder for minilm."),
        device: Optional[str] = typer.Option(None, "--device", help="auto, cpu or cuda [default: auto]."),
        batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Encoder batch size."),
        cache_dir: Optional[str] = typer.Option(None, "--cache-dir", help="Embedding cache (default: OUT/cache); share it between scans to embed nothing twice."),
        k: Optional[int] = typer.Option(None, "--k", "-k", help="Neighbours kept per test item [default: 10]."),
        k_reverse: Optional[int] = typer.Option(None, "--k-reverse", help="Neighbours kept in the train→test and test→test directions [default: 3]."),
        directions: Optional[str] = typer.Option(None, "--directions", help="Comma list of test-train, train-test, test-test [default: all three]."),
        backend: Optional[str] = typer.Option(None, "--backend", help="Search backend: auto, torch, faiss, numpy [default: auto]."),
        block_size: Optional[int] = typer.Option(None, "--block-size", help="Train rows per search block (default: from the memory budget)."),
        engine: Optional[str] = typer.Option(None, "--engine", help="local, or ray: the same search blocks as Ray tasks (identical results) [default: local]."),
        address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address for --engine ray ('auto' = the cluster this machine is in; default: a local Ray)."),
        verify: Optional[bool] = typer.Option(None, "--verify/--no-verify", help="Re-score candidates with a transform-invariant verifier [default: on where one exists]."),
        verifier: Optional[str] = typer.Option(None, "--verifier", help="Verifier name (default by modality)."),
        cutoff: Optional[float] = typer.Option(None, "--cutoff", help="Similarity cutoff to use until a calibration exists (reported as uncalibrated)."),
        calibration: Optional[str] = typer.Option(None, "--calibration", help="Calibration directory (or name under calibration/) whose cutoff to use."),
        baseline_pairs: Optional[int] = typer.Option(None, "--baseline-pairs", help="Random (test, train) pairs for the baseline [default: 100000]."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Random seed [default: 0]."),
        force: bool = typer.Option(False, "--force", help="Start over in OUT (labels under OUT/calibration are kept); also accept a calibration made for other data."),
        json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
    ) -> None:
        """Scan a test set against its train set and write the scan directory OUT.

        Finds exact twins (fingerprints), embeds both splits, searches each test item's top-k nearest
        train items (and train→test, test→test), verifies the candidates, and measures the random-pair
        baseline. Re-running into OUT resumes.

        Example (no download needed): sibscan scan --train train.csv --test test.csv --out scan/
        """
        from ..atomic import dumps_json
        from ..config import ScanConfig, load_config_file
        from ..scan import run_scan

        base = ScanConfig()
        if config is not None:
            base = base.merged(load_config_file(config))
        flags = dict(
            train=train, test=test, out=out, index=index, modality=modality, label=label, id=id, group=group,
            text_field=text_field, path_field=path_field, labels_train=labels_train, labels_test=labels_test,
            chunk_words=chunk_words, chunk_stride=chunk_stride, decimals=decimals, znorm=znorm, encoder=encoder,
            model=model, pretrained=pretrained, checkpoint=checkpoint, model_path=model_path, device=device,
            batch_size=batch_size, cache_dir=cache_dir, k=k, k_reverse=k_reverse, directions=directions,
            backend=backend, block_size=block_size, engine=engine, address=address, verify=verify, verifier=verifier, cutoff=cutoff,
            calibration=calibration, baseline_pairs=baseline_pairs, seed=seed, force=force, progress=progress,
        )
        cfg = base.merged(flags)
        if cfg.train is None and cfg.index is None:
            from ..errors import SibscanError

            raise SibscanError("no train data given; pass --train PATH (or --index DIR)")
        result = run_scan(cfg, echo=lambda s: typer.echo(s, err=True))
        if json_out:
            typer.echo(dumps_json(result.summary))
        else:
            typer.echo(_fmt_summary(result.summary, result.path))
