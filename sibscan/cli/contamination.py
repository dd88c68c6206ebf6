"""``sibscan contamination EXAMPLES``: did a benchmark leak into a language model's corpus?"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import typer

from ..contamination.config import ContaminationConfig
from ..options import EncoderOptions, SearchOptions
from ..progress import is_quiet
from ._common import user_errors
from ._flags import ContaminationOptions
from ._options import with_options
from ..atomic import dumps_json
from ..contamination.audit import UNNAMED, audit
from ..contamination.endpoint import CompletionsEndpoint
from ..contamination.examples import load_examples
from ..contamination.html import write_html
from ..contamination.labels import load_labels
from ..contamination.lm import load_causal_lm
from ..errors import SibscanError

HELP = (
    "Audit benchmark EXAMPLES (JSONL/CSV/Parquet with id and text) for contamination.\n\n"
    "With a corpus (--corpus, or named --source NAME=PATH for provenance): the share of each example's word "
    "n-grams found in it and the longest verbatim run, per source; --control NAME=PATH sets a source's threshold "
    "from texts known to lie outside it. With --lm (a local model, 'smollm2', or an OpenAI-compatible URL): "
    "Min-K%, Min-K%++ and perplexity. With --complete: guided prompting (continue the first half, LCS F1 with the "
    "second). --labels adds each method's AUC and weights. Prints a table; --json for machines, --html for a page "
    "with the longest run highlighted."
)


def register(app: typer.Typer) -> None:
    app.command("contamination", help=HELP, short_help="Benchmark contamination in a language-model corpus.")(contamination)


def _pairs(values: Optional[List[str]], option: str) -> Dict[str, str]:
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
@with_options((ContaminationOptions, {}), (ContaminationConfig, {}), (SearchOptions, {"only": ("engine",)}),
              (EncoderOptions, {"only": ("device", "batch_size")}), spread=True)
def contamination(
    examples_arg: Optional[Path] = typer.Argument(None, metavar="EXAMPLES",
                                                  help="Benchmark examples: JSONL/CSV/TSV/Parquet with an id and a text column."),
    examples_opt=None, corpus=None, source=None, control=None, model=None, complete=None, labels=None, as_json=False,
    html=None, work=None, n=None, shard_size=None, engine="local", k=None, overlap_floor=None, run_floor=None,
    z_threshold=None, control_percentile=None, prefix_fraction=None, weight_by_auc=False, prevalence=None,
    id_field="id", text_field="text", device="auto", batch_size=None, max_tokens=512, endpoint_model=None, timeout=60.0,
    limit=50,
) -> None:
    if (examples_arg is None) == (examples_opt is None):
        raise SibscanError("give the benchmark examples once: as EXAMPLES or as --examples FILE")
    config = ContaminationConfig(n=n, shard_size=shard_size, k=k, overlap_floor=overlap_floor, run_floor=run_floor,
                                 z_threshold=z_threshold, control_percentile=control_percentile,
                                 prefix_fraction=prefix_fraction, weight_by_auc=weight_by_auc, prevalence=prevalence,
                                 engine=engine).check()
    sources = _pairs(source, "--source")
    controls = _pairs(control, "--control")
    if weight_by_auc and labels is None:
        raise SibscanError("--weight-by-auc needs --labels")
    for name, p in [*sources.items(), *controls.items(), *([(UNNAMED, str(corpus))] if corpus else [])]:
        if not Path(p).exists():
            raise SibscanError(f"{p}: no such file or folder (source {name!r})")
    ex = load_examples(examples_arg or examples_opt, id_field=id_field, text_field=text_field)

    def probe(spec: Optional[str]):
        if spec is None:
            return None
        if spec.startswith(("http://", "https://")):
            return CompletionsEndpoint(spec, model=endpoint_model, timeout=timeout)

        sized = {} if batch_size is None else {"batch_size": batch_size}  # None: the model's own
        return load_causal_lm(spec, device=device, max_tokens=max_tokens, **sized)

    scorer = probe(model)
    completer = scorer if complete is not None and complete == model else probe(complete)
    label_arg = None
    if labels is not None:
        label_arg = load_labels(labels, ex, id_field=id_field)
    result = audit(ex, corpus=str(corpus) if corpus else None, sources=sources or None, controls=controls or None,
                   model=scorer, complete=completer, labels=label_arg, config=config, work_dir=work,
                   text_field=text_field, device=device, progress=not is_quiet())
    if html is not None:
        write_html(result, html)
    typer.echo(dumps_json(result.to_dict()) if as_json else result.table(limit=limit))
