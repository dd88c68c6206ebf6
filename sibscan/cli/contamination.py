"""``sibscan contamination EXAMPLES``: did a benchmark leak into a language model's corpus?"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import typer

from ..options import ENGINES
from ._common import choice, user_errors

HELP = (
    "Audit benchmark EXAMPLES (JSONL/CSV/Parquet with id and text) for contamination.\n\n"
    "With a corpus (--corpus, or named --source NAME=PATH for provenance): the share of each example's word "
    "n-grams found in it and the longest verbatim run, per source; --control NAME=PATH sets a source's threshold "
    "from texts known to lie outside it. With --model (a local model, 'smollm2', or an OpenAI-compatible URL): "
    "Min-K%, Min-K%++ and perplexity. With --complete: guided prompting (continue the first half, LCS F1 with the "
    "second). --labels adds each method's AUC and weights. Prints a table; --json for machines, --html for a page "
    "with the longest run highlighted."
)


def register(app: typer.Typer) -> None:
    app.command("contamination", help=HELP, short_help="Benchmark contamination in a language-model corpus.")(contamination)


def _pairs(values: Optional[List[str]], option: str) -> Dict[str, str]:
    from ..errors import SibscanError

    out: Dict[str, str] = {}
    for v in values or []:
        name, sep, path = v.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise SibscanError(f"{option} takes NAME=PATH, got {v!r}")
        if name in out:
            raise SibscanError(f"{option} {name!r} given twice")
        out[name.strip()] = path.strip()
    return out


@user_errors
def contamination(
    examples_arg: Optional[Path] = typer.Argument(None, metavar="EXAMPLES",
                                                  help="Benchmark examples: JSONL/CSV/TSV/Parquet with an id and a text column."),
    examples_opt: Optional[Path] = typer.Option(None, "--examples", help="The same as EXAMPLES, as an option."),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="A corpus without provenance: a file or folder of .txt/.jsonl/.parquet, or a built index folder."),
    source: Optional[List[str]] = typer.Option(None, "--source", help="NAME=PATH: a named corpus (repeat for several); matches are reported per source."),
    control: Optional[List[str]] = typer.Option(None, "--control", help="NAME=PATH: texts known to lie outside source NAME ('corpus' for --corpus); its threshold is their percentile."),
    model: Optional[str] = typer.Option(None, "--model", help="Min-K%/Min-K%++/perplexity from: 'smollm2' (offline default), a .gguf file, a save_pretrained folder, or an http(s) completions endpoint."),
    complete: Optional[str] = typer.Option(None, "--complete", help="Guided prompting with: a model as for --model, or an http(s) completions endpoint."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="JSONL/CSV with id and contaminated (1/0) for some examples: AUC per method, weights, recall and FPR."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write an HTML report here."),
    work: Path = typer.Option(Path(".sibscan-cache/contamination"), "--work", help="Folder for the n-gram indexes (reused while the corpus is unchanged) and the resumable model results."),
    n: int = typer.Option(13, "--n", help="Words per n-gram."),
    shard_size: int = typer.Option(1 << 22, "--shard-size", help="N-grams per index batch and shard (the unit of memory)."),
    engine: choice(ENGINES) = typer.Option("local", "--engine", help="Build the index here (local) or as Ray tasks (ray)."),
    k: float = typer.Option(0.2, "--k", help="Fraction of lowest-scoring tokens averaged by Min-K%/Min-K%++."),
    overlap_floor: float = typer.Option(0.7, "--overlap-floor", help="Flag an example whose overlap with a source without controls reaches this fraction."),
    run_floor: int = typer.Option(40, "--run-floor", help="Flag a verbatim run of this many words."),
    z_threshold: float = typer.Option(3.0, "--z-threshold", help="Flag a combined robust z-score at or above this."),
    control_percentile: float = typer.Option(99.0, "--control-percentile", help="Percentile of the control texts' overlap taken as a source's threshold."),
    prefix_fraction: float = typer.Option(0.5, "--prefix-fraction", help="Share of each example's words given as the guided-prompting prefix."),
    weight_by_auc: bool = typer.Option(False, "--weight-by-auc", help="With --labels: weight the combined z by each method's max(0, 2 AUC - 1)."),
    prevalence: Optional[float] = typer.Option(None, "--prevalence", help="Expected share of contaminated examples (a fraction): quote precision and review-queue size at it."),
    id_field: str = typer.Option("id", "--id-field", help="Id column of EXAMPLES (and --labels)."),
    text_field: str = typer.Option("text", "--text-field", help="Text column of EXAMPLES and of JSONL/Parquet corpora and controls."),
    device: str = typer.Option("auto", "--device", metavar="<auto|cpu|cuda[:N]>", help="Where a local model runs (auto: CUDA when there is one)."),
    batch_size: int = typer.Option(8, "--batch-size", help="Texts per forward pass of a local model."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Tokens of each example a local model scores."),
    endpoint_model: Optional[str] = typer.Option(None, "--endpoint-model", help="The 'model' field sent to an endpoint."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per endpoint request."),
    limit: int = typer.Option(50, "--limit", help="Rows of the terminal table (flagged first)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
) -> None:
    from ..atomic import dumps_json
    from ..errors import SibscanError
    from ..contamination.audit import UNNAMED, audit
    from ..contamination.config import ContaminationConfig
    from ..contamination.examples import load_examples

    if (examples_arg is None) == (examples_opt is None):
        raise SibscanError("give the benchmark examples once: as EXAMPLES or as --examples FILE")
    config = ContaminationConfig(n=n, shard_size=shard_size, k=k, overlap_floor=overlap_floor, run_floor=run_floor,
                                 z_threshold=z_threshold, control_percentile=control_percentile,
                                 prefix_fraction=prefix_fraction, weight_by_auc=weight_by_auc, prevalence=prevalence,
                                 engine=engine).validate()
    sources = _pairs(source, "--source")
    controls = _pairs(control, "--control")
    if weight_by_auc and labels is None:
        raise SibscanError("--weight-by-auc needs --labels")
    if batch_size < 1 or max_tokens < 2:
        raise SibscanError("--batch-size must be >= 1 and --max-tokens >= 2")
    for name, p in [*sources.items(), *controls.items(), *([(UNNAMED, str(corpus))] if corpus else [])]:
        if not Path(p).exists():
            raise SibscanError(f"{p}: no such file or folder (source {name!r})")
    ex = load_examples(examples_arg or examples_opt, id_field=id_field, text_field=text_field)

    def probe(spec: Optional[str]):
        if spec is None:
            return None
        if spec.startswith(("http://", "https://")):
            from ..contamination.endpoint import CompletionsEndpoint

            return CompletionsEndpoint(spec, model=endpoint_model, timeout=timeout)
        from ..contamination.lm import load_causal_lm

        return load_causal_lm(spec, device=device, batch_size=batch_size, max_tokens=max_tokens)

    scorer = probe(model)
    completer = scorer if complete is not None and complete == model else probe(complete)
    label_arg = None
    if labels is not None:
        from ..contamination.labels import load_labels

        label_arg = load_labels(labels, ex, id_field=id_field)
    result = audit(ex, corpus=str(corpus) if corpus else None, sources=sources or None, controls=controls or None,
                   model=scorer, complete=completer, labels=label_arg, config=config, work_dir=work,
                   text_field=text_field, device=device, progress=not quiet)
    if html is not None:
        from ..contamination.html import write_html

        write_html(result, html)
    typer.echo(dumps_json(result.to_dict()) if as_json else result.table(limit=limit))
